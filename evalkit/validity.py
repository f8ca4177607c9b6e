"""Is a query set measuring what its classes claim? The ``qrels check --strict`` rules that need the corpus.

:func:`evalkit.qrels.check` asks whether judgments are well-formed and their evidence is on the page. The
rules here ask whether each class does its job, against a plain corpus-wide BM25 (the ``global-index``
arm) and the corpus's vocabulary:

- a trap names its ``distractor`` document, and BM25 ranks a distractor page above every gold page (else
  the query is not a trap: keyword matching already gets it right);
- an abstain query has a ``kind``; at least half of a set's abstain queries are ``uncovered-need`` or
  ``near-miss`` with every content word found in the corpus (else "refuse when a query word is unknown"
  passes the set without measuring admission), and at most :data:`MAX_OFF_DOMAIN` are ``off-domain``;
- a query does not copy a run of :data:`MIN_RUN` words from a page judged relevant to it (an error for
  described queries, whose point is the reader's words; a warning for the others), and BM25 does not rank
  a described query's gold page in its top :data:`DESCRIBED_BM25_TOP`.

Every function takes page texts and a ranking function, so the rules are testable on a tiny real corpus.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .measures import GOLD_GAIN
from .qrels import SET, Problem, QuerySet
from .records import Query, page_id
from .text import content_words, words

# A ranking of the whole corpus for a query text: (document, page) pairs, best first.
Ranker = Callable[[str], Sequence[tuple[str, int]]]

MIN_RUN = 4  # consecutive words a query may not share with a page judged relevant to it
MIN_RUN_CONTENT = 2  # ... counting only runs with this many content words ("at the end of" leaks nothing)
DESCRIBED_BM25_TOP = 3  # a described query's gold page must rank below this under corpus-wide BM25
MAX_OFF_DOMAIN = 2  # off-domain abstain queries per set: trivially refusable, so a few at most
ADMISSION_KINDS = ("uncovered-need", "near-miss")  # the abstain kinds that test admission, not vocabulary


def bm25_ranker(corpus, store) -> Ranker:
    """Plain corpus-wide BM25: the ``global-index`` arm's ranking of every matching page."""
    from .arms.lexical import GlobalIndex, query_terms

    index = GlobalIndex(store, corpus)
    return lambda text: [(doc, page) for doc, page, _ in index.bm25(query_terms(text))]


def gold_pages(q: Query) -> set[tuple[str, int]]:
    """The pages GoldDoc counts (gain >= 2); a query with none falls back to its relevant pages, so a
    trap or described query judged only at gain 1 is still checked against its best pages."""
    gold = {(j.doc, j.page) for j in q.judgments if j.gain >= GOLD_GAIN}
    return gold or {(j.doc, j.page) for j in q.relevant}


def keyword_easy(q: Query, ranking: Sequence[tuple[str, int]]) -> tuple[int, str] | None:
    """A described query's best gold page within corpus-wide BM25's top :data:`DESCRIBED_BM25_TOP` (rank, page
    id): the query is keyword-easy. None when no gold page ranks that high."""
    return best_gold(q, ranking[:DESCRIBED_BM25_TOP])


def best_gold(q: Query, ranking: Sequence[tuple[str, int]]) -> tuple[int, str] | None:
    """The 1-based rank and page id of ``q``'s best-ranked gold page (:func:`gold_pages`) in ``ranking``."""
    gold = gold_pages(q)
    return _best(ranking, lambda p: p in gold)


def _best(ranking: Sequence[tuple[str, int]], keep: Callable[[tuple[str, int]], bool]) -> tuple[int, str] | None:
    """1-based rank and page id of the first page of ``ranking`` that ``keep`` accepts."""
    return next(((r, page_id(*p)) for r, p in enumerate(ranking, 1) if keep(p)), None)


@dataclass(frozen=True)
class TrapRanks:
    """Where corpus-wide BM25 puts a trap's distractor document and its gold pages (best of each)."""

    query: str
    distractor: str
    distractor_rank: int | None  # None: BM25 matches no page of the distractor
    distractor_page: str | None
    gold_rank: int | None  # None: BM25 matches no gold page
    gold_page: str | None

    @property
    def traps(self) -> bool:
        """True when a distractor page is ranked above every gold page: the trap is live for BM25."""
        return self.distractor_rank is not None and (self.gold_rank is None or self.distractor_rank < self.gold_rank)

    def __str__(self) -> str:
        at = lambda r, p: f"{r} ({p})" if r else "unranked"  # noqa: E731
        return (f"{self.query}: distractor {self.distractor} best at {at(self.distractor_rank, self.distractor_page)}, "
                f"gold best at {at(self.gold_rank, self.gold_page)}: {'traps' if self.traps else 'NOT a trap'}")


def trap_ranks(q: Query, ranking: Sequence[tuple[str, int]]) -> TrapRanks:
    d = _best(ranking, lambda p: p[0] == q.distractor)
    g = best_gold(q, ranking)
    return TrapRanks(q.id, q.distractor, *(d or (None, None)), *(g or (None, None)))


def vocabulary(pages: dict[str, list[str]]) -> frozenset[str]:
    """Every content word of the corpus (:func:`evalkit.text.content_words` of every page)."""
    return frozenset().union(*(content_words(t) for texts in pages.values() for t in texts))


def unknown_words(q: Query, vocab: frozenset[str]) -> set[str]:
    """The query's content words (as typed, lower-cased) found on no page. "Found" compares the word as
    ``content_words`` folds it (case, NFKC, a plural s), not its Porter stem as the FTS5 index sees it: a
    query with no unknown word at this level has none for a stemmed check either, so no name check of
    either kind can refuse it."""
    return {w for w in words(q.text) if not content_words(w) <= vocab}


def shared_runs(query: str, page: str, n: int = MIN_RUN) -> list[str]:
    """The stretches of ``query`` made of runs of ``n`` consecutive words that also occur consecutively on
    ``page`` (each run with at least :data:`MIN_RUN_CONTENT` content words), longest first."""
    qw, pw = words(query), words(page)
    grams = {tuple(pw[i:i + n]) for i in range(len(pw) - n + 1)}
    covered = [False] * len(qw)
    for i in range(len(qw) - n + 1):
        run = qw[i:i + n]
        if tuple(run) in grams and sum(bool(content_words(w)) for w in run) >= MIN_RUN_CONTENT:
            covered[i:i + n] = [True] * n
    runs, start = [], None
    for i, c in enumerate([*covered, False]):
        if c and start is None:
            start = i
        elif not c and start is not None:
            runs.append(" ".join(qw[start:i]))
            start = None
    return sorted(runs, key=len, reverse=True)


def leaked_run(q: Query, pages: dict[str, list[str]]) -> tuple[str, str] | None:
    """The longest run the query shares with a page judged relevant to it, and that page's id."""
    found = [(run, page_id(j.doc, j.page)) for j in q.relevant
             if j.doc in pages and 1 <= j.page <= len(pages[j.doc])
             for run in shared_runs(q.text, pages[j.doc][j.page - 1])[:1]]
    return max(found, key=lambda f: len(f[0]), default=None)


def check(qs: QuerySet, pages: dict[str, list[str]], rank: Ranker,
          vocab: frozenset[str] | None = None) -> list[Problem]:
    """The class-validity problems of a query set (run by ``qrels check --strict``), warnings included;
    ``vocab`` is :func:`vocabulary` of ``pages``, passed when the caller has it already."""
    problems: list[Problem] = []
    vocab = vocabulary(pages) if vocab is None else vocab
    for q in qs.queries:
        def bad(fld: str, msg: str, warning: bool = False) -> None:
            problems.append(Problem(q.id, fld, msg, warning))  # noqa: B023 (called in this iteration only)

        if q.cls == "trap":
            if not q.distractor:
                bad("distractor", "missing: a trap names its distractor, the lexically similar document that "
                                  "does not answer")
            elif q.distractor in pages and not (t := trap_ranks(q, rank(q.text))).traps:
                gold_at = f"the best gold page ({t.gold_page}) at {t.gold_rank}" if t.gold_rank else "no gold page"
                bad("distractor", f"not a trap: corpus-wide BM25 ranks {q.distractor} at best "
                                  f"{t.distractor_rank or 'nowhere'}, {gold_at}: rewrite the query or reclassify it")
        if q.cls == "abstain":
            if not q.kind:
                bad("kind", "missing: an abstain query says why nothing answers "
                            "(absent-name, uncovered-need, near-miss or off-domain)")
            elif q.kind == "uncovered-need" and (unknown := unknown_words(q, vocab)):
                bad("kind", f"uncovered-need, but {', '.join(sorted(unknown))} occur(s) nowhere in the corpus: "
                            "reword it, or call it absent-name")
        if (leak := leaked_run(q, pages)) is not None:
            run, pid = leak
            bad("text", f"shares the run {run!r} with judged page {pid}: write it in the reader's words",
                warning=q.cls != "described")
        if q.cls == "described":
            if (top := keyword_easy(q, rank(q.text))) is not None:
                bad("text", f"keyword-easy: corpus-wide BM25 ranks gold page {top[1]} at {top[0]} "
                            f"(a described query's gold pages must rank below {DESCRIBED_BM25_TOP})")
    return problems + _abstain_mix(qs, vocab) + _pool_arms(qs)


def _pool_arms(qs: QuerySet) -> list[Problem]:
    """The pool's arms, as recorded in ``[set]``, name arms that exist. A notebook function's name
    (``mine@45e5b792``, from ``ek.arm``) is a record of what pooled, valid as written: no registry outside
    its process knows it, so checking it against this process's would make the notebook and the shell
    disagree."""
    from . import arms  # here, not above: only --strict checks the pool's arms

    out = []
    for spec in qs.pool_arms:
        try:
            arms.parse_spec(spec) if arms.is_function(spec) else arms.validate(spec)
        except arms.ArmError as e:
            out.append(Problem(SET, "pool_arms", str(e)))
    return out


def _abstain_mix(qs: QuerySet, vocab: frozenset[str]) -> list[Problem]:
    """The set-level abstain rules: enough queries that test admission, few off-domain ones."""
    abstain = qs.by_class().get("abstain", [])
    if not abstain:
        return []
    out = []
    admission = [q for q in abstain if q.kind in ADMISSION_KINDS and not unknown_words(q, vocab)]
    if 2 * len(admission) < len(abstain):
        out.append(Problem(SET, "abstain", (
            f"{len(admission)} of {len(abstain)} abstain queries are {' or '.join(ADMISSION_KINDS)} with every "
            f"content word found in the corpus; at least half ({(len(abstain) + 1) // 2}) must be, or refusing "
            "on an unknown word passes the set without measuring admission")))
    off = [q.id for q in abstain if q.kind == "off-domain"]
    if len(off) > MAX_OFF_DOMAIN:
        out.append(Problem(SET, "abstain", f"{len(off)} off-domain abstain queries ({', '.join(off)}); "
                                            f"at most {MAX_OFF_DOMAIN}: they are refusable without reading the corpus"))
    return out

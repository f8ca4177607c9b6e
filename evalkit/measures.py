"""Retrieval measures with trec_eval's definitions, named so a report says exactly which variant it used.

Everything here is pure (no I/O). A *ranking* is a sequence of page ids ``"<doc>#<page>"`` in the arm's
total order -- the order is taken as given and never re-sorted by score, because trec_eval's own re-sort
(score descending, then document id *descending*) lets file names decide tied bands (FIELD_NOTES.md).
*Qrels* map an id to its graded gain; an id is relevant when its gain is > 0 (trec_eval's
``relevance_level`` 1) and *judged* when it is in the qrels at all (gain 0: read, does not answer).
Every ``k`` is a 1-based cutoff; ``None`` means the whole ranking.

The per-query functions are both the reference definitions and what the runner uses: on 10,000 queries
they are faster than pytrec_eval (`evalkit bench`, section "measures").
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np

from .records import Answer, Query, page_id, split_page_id
from .text import contains

Ranking = Sequence[str]
Qrels = Mapping[str, int]
Level = Literal["page", "doc"]
T = TypeVar("T")

# A document is "gold" for the GoldDoc/GoldHit family when one of its judged pages has at least this gain.
GOLD_GAIN = 2

_LOG2: list[float] = [math.log2(i + 2) for i in range(1024)]  # log2(rank + 1) for 1-based rank = i + 1


def _log2(i: int) -> float:
    """log2 of (0-based index + 2), cached: trec_eval divides by it, so we do too (same rounding)."""
    while i >= len(_LOG2):
        _LOG2.extend(math.log2(j + 2) for j in range(len(_LOG2), 2 * len(_LOG2)))
    return _LOG2[i]


def _top(ranking: Sequence[T], k: int | None) -> Sequence[T]:
    if k is not None and k < 1:
        raise ValueError(f"cutoff must be >= 1, got {k}")
    return ranking if k is None else ranking[:k]


def _check_unique(ranking: Ranking) -> None:
    """A repeated id would be counted twice; trec_eval refuses such runs, so do we."""
    if len(set(ranking)) != len(ranking):
        dup = next(x for x, n in Counter(ranking).items() if n > 1)
        raise ValueError(f"ranking repeats id {dup!r}")


# --------------------------------------------------------------------------------------------------------
# Reference measures (one query)


def ndcg(ranking: Ranking, qrels: Qrels, k: int | None = 10) -> float:
    """trec_eval ``ndcg_cut_k``: linear gain, DCG = sum gain_i / log2(i + 1) over 1-based ranks i <= k.

    The ideal DCG is built from ALL relevant items in ``qrels`` (sorted by gain), not from what was
    retrieved: an ideal built from retrieved items rewards retrieving less. Empty or all-zero qrels give 0.0
    (trec_eval's value); callers keep abstain queries out of ranking means instead of relying on it.
    """
    _check_unique(ranking)
    dcg = 0.0
    for i, pid in enumerate(_top(ranking, k)):
        g = qrels.get(pid, 0)
        if g > 0:
            dcg += g / _log2(i)
    if dcg == 0.0:
        return 0.0
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)
    idcg = 0.0
    for i, g in enumerate(_top(ideal, k)):
        idcg += g / _log2(i)
    return dcg / idcg


def rr(ranking: Ranking, qrels: Qrels, k: int | None = None) -> float:
    """Reciprocal rank of the first relevant item; trec_eval ``recip_rank`` looks at the whole ranking."""
    _check_unique(ranking)
    for i, pid in enumerate(_top(ranking, k)):
        if qrels.get(pid, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def recall(ranking: Ranking, qrels: Qrels, k: int | None = 10) -> float:
    """trec_eval ``recall_k``: relevant items in the top k over all relevant items (0.0 if there are none)."""
    _check_unique(ranking)
    n_rel = sum(1 for g in qrels.values() if g > 0)
    if n_rel == 0:
        return 0.0
    return sum(1 for pid in _top(ranking, k) if qrels.get(pid, 0) > 0) / n_rel


def success(ranking: Ranking, qrels: Qrels, k: int | None = 10) -> float:
    """trec_eval ``success_k``: 1.0 if any relevant item is in the top k."""
    _check_unique(ranking)
    return 1.0 if any(qrels.get(pid, 0) > 0 for pid in _top(ranking, k)) else 0.0


def to_docs(ranking: Ranking) -> tuple[str, ...]:
    """Collapse a page ranking to documents in order of first appearance (a document ranks by its best page)."""
    seen: dict[str, None] = {}
    for pid in ranking:
        seen.setdefault(split_page_id(pid)[0], None)
    return tuple(seen)


def doc_qrels(page_qrels: Qrels) -> dict[str, int]:
    """Give each document its best page gain, so doc-level measures judge a document by its best page."""
    out: dict[str, int] = {}
    for pid, g in page_qrels.items():
        doc = split_page_id(pid)[0]
        if doc not in out or g > out[doc]:
            out[doc] = g
    return out


def _gold_docs(page_qrels: Qrels) -> set[str]:
    return {split_page_id(pid)[0] for pid, g in page_qrels.items() if g >= GOLD_GAIN}


def gold_doc(ranking: Ranking, page_qrels: Qrels, k: int | None = 3) -> float:
    """``GoldDoc@k``: 1.0 if a gold document (a judged page with gain >= 2) is among the first k DISTINCT
    documents. Counting documents, not hits, keeps one document's many pages from crowding the cutoff."""
    gold = _gold_docs(page_qrels)
    return 1.0 if any(d in gold for d in _top(to_docs(ranking), k)) else 0.0


def gold_hit(ranking: Ranking, page_qrels: Qrels, k: int | None = 3) -> float:
    """``GoldHit@k``: 1.0 if any page of a gold document is among the first k HITS (the over-k-hits variant,
    kept under its own name because "gold doc in top 3" means different things in different tools)."""
    _check_unique(ranking)
    gold = _gold_docs(page_qrels)
    return 1.0 if any(split_page_id(pid)[0] in gold for pid in _top(ranking, k)) else 0.0


def judged(ranking: Ranking, qrels: Qrels, k: int | None = 10) -> float:
    """``Judged@k``: the share of the first k items that are judged, with any gain, 0 included (ir_measures'
    definition: over the min(k, len) items shown, so a short answer is not penalised for slots it left
    empty). NaN for an empty ranking: nothing was shown, so there is nothing whose judging could be in
    doubt. It audits the query set, not the arm: nDCG counts an unjudged page as non-relevant, so where
    Judged@k is low an arm's nDCG@k speaks about unread pages more than about the arm."""
    _check_unique(ranking)
    top = _top(ranking, k)
    if not top:
        return math.nan
    return sum(1 for pid in top if pid in qrels) / len(top)


# --------------------------------------------------------------------------------------------------------
# Registry: canonical names with their parameters, so a cutoff is a parameter and never a new function


@dataclass(frozen=True)
class Measure:
    """A named measure. ``fn(ranking, qrels, cutoff)`` receives the ranking and qrels at ``level``:
    "page" passes page ids and page qrels through; "doc" collapses them first (:func:`to_docs`,
    :func:`doc_qrels`). GoldDoc/GoldHit are "page": they need the hits to define themselves. An ``audit``
    measure (Judged) describes the judgments under a ranking rather than the ranking's quality: it is
    defined on abstain queries too, and an empty ranking gives what ``fn`` gives (NaN), not 0.0."""

    name: str
    fn: Callable[[Ranking, Qrels, int | None], float]
    level: Level
    cutoff: int | None
    audit: bool = False

    def __call__(self, ranking: Ranking, page_qrels: Qrels) -> float:
        if self.level == "doc":
            return self.fn(to_docs(ranking), doc_qrels(page_qrels), self.cutoff)
        return self.fn(ranking, page_qrels, self.cutoff)


# family -> (function, cutoff required, doc variant allowed)
_FAMILIES: dict[str, tuple[Callable[[Ranking, Qrels, int | None], float], bool, bool]] = {
    "nDCG": (ndcg, False, True),
    "RR": (rr, False, True),
    "Recall": (recall, False, True),
    "Success": (success, True, True),
    "GoldDoc": (gold_doc, True, False),
    "GoldHit": (gold_hit, True, False),
    "Judged": (judged, True, False),
}
_AUDITS = frozenset({"Judged"})
_NAME = re.compile(r"(?P<family>[A-Za-z]+)(?:@(?P<k>[0-9]+))?(?P<doc>\(doc\))?")


def measure(name: str) -> Measure:
    """Parse a canonical name such as ``nDCG@5``, ``RR``, ``Success@20(doc)`` or ``GoldDoc@3``."""
    m = _NAME.fullmatch(name)
    fam = _FAMILIES.get(m["family"]) if m else None
    if m is None or fam is None:
        raise ValueError(f"unknown measure {name!r}: expected one of {'/'.join(_FAMILIES)}, "
                         "optionally @k and (doc), e.g. nDCG@10, RR(doc), Success@3")
    fn, needs_k, doc_ok = fam
    k = int(m["k"]) if m["k"] is not None else None
    if k is not None and k < 1:
        raise ValueError(f"bad measure {name!r}: cutoff must be >= 1")
    if needs_k and k is None:
        raise ValueError(f"bad measure {name!r}: {m['family']} needs a cutoff, e.g. {m['family']}@3")
    if m["doc"] and not doc_ok:
        raise ValueError(f"bad measure {name!r}: {m['family']} is defined over documents already; "
                         "it has no (doc) variant")
    return Measure(name=name, fn=fn, level="doc" if m["doc"] else "page", cutoff=k, audit=m["family"] in _AUDITS)


DEFAULT: tuple[str, ...] = (
    "nDCG@10", "nDCG@10(doc)", "GoldDoc@3", "GoldHit@3", "RR", "RR(doc)", "Recall@10", "Recall@10(doc)",
    "Success@1", "Success@3", "Success@10", "Success@1(doc)", "Success@3(doc)", "Success@10(doc)",
    "Judged@10",
)
MEASURES: dict[str, Measure] = {n: measure(n) for n in DEFAULT}


def _resolve(name: str) -> Measure:
    return MEASURES.get(name) or measure(name)


# --------------------------------------------------------------------------------------------------------
# One query end to end


def page_qrels(query: Query) -> dict[str, int]:
    """Page-level qrels of a query. A page judged twice is a query-set error, not something to average."""
    out: dict[str, int] = {}
    for j in query.judgments:
        pid = page_id(j.doc, j.page)
        if pid in out:
            raise ValueError(f"query {query.id!r} judges page {pid!r} twice")
        out[pid] = j.gain
    return out


def ranking_of(result: Answer) -> tuple[str, ...]:
    """The page ranking of a result, in the arm's order; a refusal or an error ranks nothing even if it
    carries hits."""
    return () if result.refused or result.error else tuple(page_id(h.doc, h.page) for h in result.hits)


def evaluate(query: Query, result: Answer, names: Iterable[str] = DEFAULT) -> dict[str, float]:
    """Score one query. Answerable: a refused, errored or empty result scores 0.0 on every ranking measure
    (an empty answer must count, unlike BEIR/trec_eval's default of dropping it). Abstain: every ranking measure is
    NaN, so abstain queries never enter ranking means; they are scored by :func:`refusal_outcome` instead.
    Audit measures (Judged@k) are computed on every query, abstain included (there: the share of the top
    k read and found not to answer), and are NaN on a refused, errored or empty result."""
    qrels = page_qrels(query)
    ranking = ranking_of(result)
    out = {}
    for m in map(_resolve, names):
        if m.audit:
            out[m.name] = m(ranking, qrels)
        elif not query.answerable:
            out[m.name] = math.nan
        else:
            out[m.name] = m(ranking, qrels) if ranking else 0.0
    return out


EVIDENCE = "Evidence@10"


def evidence_hit(chunk_texts: Sequence[str], quotes: Iterable[str], k: int = 10) -> float:
    """1.0 when one of the first ``k`` chunks holds a judged evidence quote (after normalisation, as the
    query-set check finds quotes on pages), else 0.0; NaN when nothing can be said: no quote, or no chunk
    text among the first ``k``. The passage-level view beside page nDCG: a page can rank first while the
    chunk a reader would be shown misses the answer."""
    quotes = [q for q in quotes if q.strip()]
    texts = [t for t in chunk_texts[:k] if t]
    if not quotes or not texts:
        return math.nan
    return float(any(contains(t, q) for t in texts for q in quotes))


def evidence(query: Query, result: Answer, k: int = 10) -> float:
    """:func:`evidence_hit` of a chunk retriever's answer to an answerable query over its relevant
    judgments' quotes; NaN for abstain queries and answers without chunks, 0.0 for a refusal or an error."""
    if not query.answerable or not (result.chunks or result.refused or result.error):
        return math.nan
    quotes = [j.evidence for j in query.relevant]
    if result.refused or result.error:
        return 0.0 if any(q.strip() for q in quotes) else math.nan
    return evidence_hit([c.text for c in result.chunks], quotes, k)


# --------------------------------------------------------------------------------------------------------
# Refusal

OUTCOMES = ("correct_refusal", "answered_abstain", "wrongful_refusal", "answered", "error")


def refusal_outcome(query: Query, result: Answer) -> str:
    """Classify a query's result for refusal measures; an empty result counts as a refusal, an error is an
    outcome of its own (the arm did not answer: neither a refusal nor an answer)."""
    if result.error:
        return "error"
    refused = result.refused or not result.hits
    if query.answerable:
        return "wrongful_refusal" if refused else "answered"
    return "correct_refusal" if refused else "answered_abstain"


def refusal_rates(outcomes: Iterable[str], abstain: Iterable[bool] = ()) -> dict[str, float]:
    """Correct refusals over abstain queries and wrongful refusals over answerable ones, always together:
    either rate alone can be maximised by refusing everything or nothing. NaN when a denominator is 0.
    An ``error`` stays in the denominator of its query's class (``abstain``, parallel to ``outcomes``,
    says which): an arm cannot raise its correct refusal rate, or lower its wrongful one, by failing."""
    outcomes = list(outcomes)
    c = Counter(outcomes)
    bad = set(c) - set(OUTCOMES)
    if bad:
        raise ValueError(f"unknown refusal outcome(s) {sorted(bad)}; expected {OUTCOMES}")
    flags = list(abstain)
    if c["error"] and len(flags) != len(outcomes):
        raise ValueError("error outcomes need the abstain flag of every query to be counted in their class")
    errors_abstain = sum(1 for o, a in zip(outcomes, flags, strict=False) if o == "error" and a)
    n_abstain = c["correct_refusal"] + c["answered_abstain"] + errors_abstain
    n_answerable = c["wrongful_refusal"] + c["answered"] + c["error"] - errors_abstain
    return {
        "correct_refusal_rate": c["correct_refusal"] / n_abstain if n_abstain else math.nan,
        "wrongful_refusal_rate": c["wrongful_refusal"] / n_answerable if n_answerable else math.nan,
    }


# --------------------------------------------------------------------------------------------------------
# Audits


def ties_at(scores: Sequence[float], k: int) -> int:
    """How many of the first k items share their score with another item anywhere in the list: inside a
    tied band the order is the arm's tie-break, so a measure at cutoff k is only as solid as this is small."""
    counts = Counter(scores)
    return sum(1 for s in scores[:k] if counts[s] > 1)


def latency_summary(seconds: Iterable[float]) -> dict[str, float]:
    """Median, 95th percentile (linear interpolation) and mean; NaN for no samples. The tail is reported
    because a mean hides the slow queries users notice."""
    x = np.asarray(list(seconds), dtype=float)
    if x.size == 0:
        return {"median": math.nan, "p95": math.nan, "mean": math.nan}
    return {"median": float(np.median(x)), "p95": float(np.percentile(x, 95)), "mean": float(x.mean())}

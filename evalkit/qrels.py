"""Graded query sets: load and validate ``qrels/<set>.toml``, check evidence, convert to and from TREC.

A judgment that drifts from the page text silently corrupts every later comparison, so judgments carry a
verbatim evidence quote that :func:`check` finds in the page store's text (the text the arms see).
"""
from __future__ import annotations

import hashlib
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import ids
from .measures import doc_qrels, page_qrels
from .records import ABSTAIN_KINDS, CLASSES, Judgment, Query, page_id, split_page_id
from .text import as_written, contains, content_words

CLASS_LEGEND = {
    "needle": "one page of one document answers",
    "spread": "relevant pages in several documents",
    "trap": "a lexically similar distractor document is wrong",
    "described": "the reader's words, not the document's",
    "abstain": "nothing in the corpus answers; the right output is a refusal",
}
# The grading rubric (qrels/README.md), one line per gain; 0 is a page read and found not to answer.
DEFAULT_GAINS = {
    3: "the page shows how to do it: the command or option and its use",
    2: "a substantial part: names the right command, or shows it without the detail asked",
    1: "related or partial",
    0: "read, and does not answer",
}
# A described query may share at most this share of its content words with any one of its judged pages.
DESCRIBED_MAX_OVERLAP = 0.4


class QrelsError(Exception):
    """A query file cannot be read; the message names the file, the query and the field."""


@dataclass(frozen=True)
class QuerySet:
    name: str
    corpus: str | None
    queries: tuple[Query, ...]
    description: str = ""
    gains: dict[int, str] = field(default_factory=lambda: dict(DEFAULT_GAINS), hash=False, compare=False)
    digest: str = ""
    # How the judged pages were found: the top ``pool_depth`` of each of ``pool_arms`` (arm specs), as
    # recorded in [set]; None / () when the file does not say.
    pool_depth: int | None = None
    pool_arms: tuple[str, ...] = ()
    # the file it was read from (None: built in memory): a run records it, a report re-reads it
    path: Path | None = field(default=None, compare=False)
    # query id -> the pages the judging workbench pooled for it (its ``pooled = ["doc#N", ...]``): every
    # one must be judged before ``check --strict`` passes, so an unfinished pool is never taken as complete
    pooled: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict, hash=False, compare=False)
    # query id -> its judged pages graded under an earlier wording (a judgment's ``reread = "old text"``,
    # written by the workbench when a query is reworded): they count, and ``check --strict`` wants them read
    # again under the current text
    reread: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict, hash=False, compare=False)
    # query id -> page -> how a page judged outside the pool was found (a judgment's ``found_by =
    # "search:<arm>"``, written by the workbench's search): not drawn by the pool, so no pool's share
    found: dict[str, dict[tuple[str, int], str]] = field(default_factory=dict, hash=False, compare=False)

    def by_class(self) -> dict[str, list[Query]]:
        out: dict[str, list[Query]] = {c: [] for c in CLASSES}
        for q in self.queries:
            out.setdefault(q.cls, []).append(q)
        return out

    def __getitem__(self, qid: str) -> Query:
        for q in self.queries:
            if q.id == qid:
                return q
        raise KeyError(qid)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a query (``query`` is :data:`SET` for the set as a whole). A ``warning`` is shown
    but does not fail a check: it marks what a reader should look at, not what is wrong for sure."""

    query: str
    field: str
    message: str
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.query}: {self.field}: {'warning: ' if self.warning else ''}{self.message}"


SET = "[set]"
BOM = b"\xef\xbb\xbf"
SHOWN_QUERIES = 8  # queries a grouped problem names before "…"


def shown(problems: Sequence[Problem]) -> list[str]:
    """The problems as lines, one line for what several queries share (same field, same words), naming
    them: on a set graded in part "not graded yet", said of most of its queries, buried the rest."""
    groups: dict[tuple[str, str, bool], list[str]] = {}
    for p in problems:
        groups.setdefault((p.field, p.message, p.warning), []).append(p.query)

    def who(ids: list[str]) -> str:
        more = " …" if len(ids) > SHOWN_QUERIES else ""
        return ids[0] if len(ids) == 1 else f"{', '.join(ids[:SHOWN_QUERIES])}{more} ({len(ids)} queries)"

    return [str(Problem(who(ids), fld, msg, warning)) for (fld, msg, warning), ids in groups.items()]


@dataclass(frozen=True)
class Layout:
    """How a query file's bytes were laid out beyond its text, so a writer can keep them: a UTF-8 byte-order
    mark, and the line ending (editors on Windows write both)."""

    bom: bool = False
    newline: str = "\n"

    def encode(self, text: str) -> bytes:
        """``text`` (``\\n`` line endings, as :func:`decode` gives it) as bytes laid out like its file."""
        return (BOM if self.bom else b"") + text.replace("\n", self.newline).encode("utf-8")


def decode(raw: bytes, path: Path) -> tuple[str, Layout]:
    """The text of a query file with ``\\n`` line endings, and its :class:`Layout`: every reader of query
    files reads through here, so UTF-8 with a byte-order mark and CRLF line endings load like any file.
    Any other encoding is one QrelsError naming the file and where its first foreign byte is."""
    bom = raw.startswith(BOM)
    body = raw[len(BOM):] if bom else raw
    if body.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\0" in body:
        raise QrelsError(f"{path}: not UTF-8 but UTF-16 or UTF-32 (it holds NUL bytes): save it as UTF-8")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        line = body[:e.start].count(b"\n") + 1
        raise QrelsError(f"{path}: not UTF-8 (byte 0x{body[e.start]:02x} on line {line}; Latin-1 or "
                         "Windows-1252?): save it as UTF-8") from None
    first = text.find("\n")
    newline = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"
    return text.replace("\r\n", "\n"), Layout(bom, newline)


def load(path: Path | str) -> QuerySet:
    """Read a query file. Structural errors (wrong types, missing fields) raise QrelsError naming the query
    and field; semantic checks against a corpus are :func:`check`'s job."""
    path = Path(path)
    return parse(path.read_bytes(), path)


def parse(raw: bytes, path: Path) -> QuerySet:
    """A query set from the bytes of its file (``path`` names it in messages): :func:`load` without the read.
    Its digest is of the text, so a copy with a byte-order mark or CRLF line endings is the same set."""
    text, _ = decode(raw, path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise QrelsError(f"{path}: not valid TOML: {e}") from None
    header, gains, depth, pool_arms = _header(data, path)
    entries = data.get("query", [])
    if not isinstance(entries, list):
        raise QrelsError(f"{path}: 'query' must be [[query]] tables, not {type(entries).__name__} {entries!r}")
    queries, pooled = [], {}
    reread: dict[str, list[tuple[str, int]]] = {}
    found: dict[str, dict[tuple[str, int], str]] = {}
    for i, q in enumerate(entries, 1):
        if not isinstance(q, dict):
            raise QrelsError(f"{path}: query #{i} is not a table")
        qid = q.get("id")
        where = f"{path}: query {qid!r}" if qid else f"{path}: query #{i}"
        query, again, by_search = _query(q, where)
        queries.append(query)
        if again:
            reread.setdefault(query.id, []).extend(again)
        if by_search:
            found.setdefault(query.id, {}).update(by_search)
        if "pooled" in q:
            pooled[q["id"]] = _pooled(q["pooled"], where)
    if not queries:
        raise QrelsError(f"{path}: no [[query]] entries")
    for key in ("name", "corpus"):  # both name folders: results/<corpus>-<name>, <data dir>/corpora/<corpus>
        if key in header and (why := ids.unsafe(header[key])):
            raise QrelsError(f"{path}: [set] {key} {header[key]!r} {why}")
    return QuerySet(header.get("name", path.stem), header.get("corpus"), tuple(queries),
                    header.get("description", ""), gains, hashlib.sha256(text.encode()).hexdigest(), depth,
                    tuple(pool_arms),
                    path, pooled, {qid: tuple(p) for qid, p in reread.items()}, found)


def _header(data: dict, path: Path) -> tuple[dict, dict[int, str], int | None, list[str]]:
    """The ``[set]`` table, with its gains, pool depth and pool arms checked."""
    header = data.get("set", {})
    if not isinstance(header, dict):
        raise QrelsError(f"{path}: [set] is not a table")
    gains = header.get("gains", DEFAULT_GAINS)
    if not isinstance(gains, dict) or not all(str(k).lstrip("-").isdigit() for k in gains):
        raise QrelsError(f"{path}: [set.gains] wants integer keys (\"3\" = \"directly answers\"), got {gains!r}")
    depth, pool_arms = header.get("pool_depth"), header.get("pool_arms", [])
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
        raise QrelsError(f"{path}: [set] pool_depth is not a positive integer: {depth!r}")
    if not isinstance(pool_arms, list) or not all(isinstance(a, str) for a in pool_arms):
        raise QrelsError(f"{path}: [set] pool_arms is not a list of arm specs: {pool_arms!r}")
    return header, {int(k): str(v) for k, v in gains.items()}, depth, pool_arms


def _query(q: dict, where: str) -> tuple[Query, list[tuple[str, int]], dict[tuple[str, int], str]]:
    """One ``[[query]]`` table with its fields' types checked, the pages it graded under an earlier wording,
    and the arm that found each page a search found."""
    for key, typ in (("id", str), ("class", str), ("text", str)):
        if not isinstance(q.get(key), typ):
            raise QrelsError(f"{where}: field {key!r} is missing or not a {typ.__name__}")
    judgments, reread, found = [], [], {}
    if not isinstance(q.get("judgments", []), list):
        raise QrelsError(f"{where}: field 'judgments' is not a list")
    for j, jd in enumerate(q.get("judgments", []), 1):
        if not isinstance(jd, dict):
            raise QrelsError(f"{where}: judgments[{j}] is not a table")
        for key, want in (("doc", str), ("page", int), ("gain", int)):
            if not isinstance(jd.get(key), want) or isinstance(jd.get(key), bool):
                raise QrelsError(f"{where}: judgments[{j}].{key} is missing or not a {want.__name__}")
        if why := ids.unsafe(jd["doc"]):
            raise QrelsError(f"{where}: judgments[{j}].doc {jd['doc']!r} {why}")
        if not isinstance(jd.get("reread", ""), str):
            raise QrelsError(f"{where}: judgments[{j}].reread is not a string (the wording it was graded under)")
        if jd.get("reread"):
            reread.append((jd["doc"], jd["page"]))
        if "found_by" in jd:
            found[(jd["doc"], jd["page"])] = parse_found_by(jd["found_by"], f"{where}: judgments[{j}]")
        judgments.append(Judgment(jd["doc"], jd["page"], jd["gain"], str(jd.get("evidence", ""))))
    for key in ("notes", "distractor", "kind", "drafted"):
        if not isinstance(q.get(key, ""), str):
            raise QrelsError(f"{where}: field {key!r} is not a string")
    return (Query(q["id"], q["class"], q["text"], tuple(judgments), q.get("notes", ""), q.get("distractor", ""),
                  q.get("kind", "")), reread, found)


def parse_found_by(value: object, where: str) -> str:
    """A judgment's ``found_by``: ``"search:<arm spec>"``, the arm the workbench's search found the page with."""
    if not isinstance(value, str) or not value.startswith(FOUND_BY) or not value.removeprefix(FOUND_BY).strip():
        raise QrelsError(f"{where}.found_by is {value!r}, want \"{FOUND_BY}<arm>\" (the arm that found the page)")
    return value


FOUND_BY = "search:"  # a judgment's found_by: the page was found by a search outside the pool


def _pooled(value: object, where: str) -> tuple[tuple[str, int], ...]:
    """A query's ``pooled`` record: page ids ``"<doc>#<page>"`` as :func:`evalkit.records.page_id` writes them."""
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise QrelsError(f"{where}: field 'pooled' is not a list of page ids (\"doc.pdf#3\")")
    try:
        return tuple(split_page_id(p) for p in value)
    except ValueError:
        raise QrelsError(f"{where}: field 'pooled' holds an entry that is not '<doc>#<page>': {value!r}") from None


UNGRADED = ("a run records its answers and measures it only with a judge, `evalkit gate --judge`; "
            "--strict wants every query graded")


def ungraded(qs: QuerySet) -> tuple[str, ...]:
    """The answerable queries with no judgment at all: written (maybe pooled) and not graded yet. Not wrong, but
    unmeasured: a run leaves them out of its plain measures (as trec_eval leaves a query without judgments)
    and only a judge's predictions speak for them. An abstain query needs no grading: nothing answers it."""
    return tuple(q.id for q in qs.queries if q.cls != "abstain" and not q.judgments)


def check(qs: QuerySet, pages: dict[str, list[str]] | None, strict: bool = False) -> list[Problem]:
    """Every problem of a query set against a corpus's page texts (``pages``: document name -> texts,
    page 1 first). With ``strict``, evidence must be present and found on its page, and described
    queries must share few content words with their judged pages. An answerable query with no judgment
    at all is :func:`ungraded`: a warning, an error with ``strict`` (a finished set is graded whole). The
    rules that ask whether each class does its job (traps, abstain kinds, wording) need the corpus-wide
    index: :func:`evalkit.validity.check`."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for q in qs.queries:
        def bad(fld: str, msg: str, warning: bool = False) -> None:
            problems.append(Problem(q.id, fld, msg, warning))  # noqa: B023 (called in this iteration only)

        if q.id in seen:
            bad("id", "duplicate id")
        seen.add(q.id)
        if q.cls not in CLASSES:
            bad("class", f"{q.cls!r} is not one of {', '.join(CLASSES)}")
        if not q.text.strip():
            bad("text", "empty")
        if q.kind and (q.cls != "abstain" or q.kind not in ABSTAIN_KINDS):
            bad("kind", f"{q.kind!r}: only abstain queries have a kind, one of {', '.join(ABSTAIN_KINDS)}")
        if q.distractor:
            if q.cls != "trap":
                bad("distractor", "only trap queries name a distractor")
            elif pages is not None and q.distractor not in pages:
                bad("distractor", f"{q.distractor!r} is not in the corpus{_other_form(q.distractor, pages)}")
        if q.cls == "abstain":
            if q.relevant:
                bad("judgments", "an abstain query has no relevant judgments (nothing in the corpus answers it)")
        elif not q.judgments:
            bad("judgments", f"not graded yet: no judgments ({UNGRADED})", warning=not strict)
        elif not q.relevant:
            bad("judgments", f"a {q.cls} query needs at least one judgment with gain > 0")
        elif q.cls == "spread" and len({j.doc for j in q.relevant}) < 2:
            bad("judgments", "a spread query needs relevant pages in at least 2 documents")
        keys = [(j.doc, j.page) for j in q.judgments]
        if len(set(keys)) != len(keys):
            bad("judgments", "a page is judged twice")
        for n, j in enumerate(q.judgments, 1):
            for fld, msg in _judgment_problems(j, pages, strict):
                bad(f"judgments[{n}]{fld}", msg)
        unread = [page_id(*p) for p in qs.pooled.get(q.id, ()) if p not in set(keys)]
        if strict and unread and (keys or q.cls == "abstain"):  # one not graded yet is said to be so above
            bad("pooled", f"{len(unread)} pooled page(s) not judged yet: {', '.join(unread[:5])}"
                          f"{' …' if len(unread) > 5 else ''}")
        again = [page_id(*p) for p in qs.reread.get(q.id, ())]
        if strict and again:
            bad("judgments", f"{len(again)} page(s) graded under an earlier wording, to read again under this "
                             f"one: {', '.join(again[:5])}{' …' if len(again) > 5 else ''}")
        if strict and q.cls == "described" and pages is not None:
            share, shared = described_overlap(q, pages)
            if share > DESCRIBED_MAX_OVERLAP:
                bad("text", f"described query shares {share:.0%} of its content words with a judged page "
                            f"(max {DESCRIBED_MAX_OVERLAP:.0%}): {', '.join(shared)}")
    return problems


def _judgment_problems(j: Judgment, pages: dict[str, list[str]] | None, strict: bool) -> Iterator[tuple[str, str]]:
    """One judgment's problems, as (the field after ``judgments[N]``, the message)."""
    if not 0 <= j.gain <= 3:
        yield ".gain", f"{j.gain} is not in 0..3 (0 = read, does not answer)"
    if pages is None:
        return
    if j.doc not in pages:
        yield ".doc", f"{j.doc!r} is not in the corpus{_other_form(j.doc, pages)}"
    elif not 1 <= j.page <= len(pages[j.doc]):
        yield ".page", f"{j.page} is out of range for {j.doc} (1..{len(pages[j.doc])})"
    elif strict and j.gain > 0 and not j.evidence.strip():
        yield ".evidence", "missing (required with --strict for gain > 0)"
    elif strict and j.evidence.strip() and not contains(pages[j.doc][j.page - 1], j.evidence):
        yield ".evidence", f"not found on {page_id(j.doc, j.page)}: {j.evidence!r}"


def _other_form(name: str, pages: dict[str, list[str]]) -> str:
    """A hint when the corpus has ``name`` in another Unicode form (NFC/NFD), which no one can see."""
    twins = [n for n in pages if ids.normalization_clashes([name, n])]
    return f" (the corpus has {twins[0]!r}: the same name in another Unicode form, NFC/NFD)" if twins else ""


def described_overlap(q: Query, pages: dict[str, list[str]]) -> tuple[float, list[str]]:
    """The largest share of the query's content words found on any one judged page, and those words as the
    query writes them (:func:`most_shared`)."""
    judged = ((page_id(j.doc, j.page), pages[j.doc][j.page - 1]) for j in q.relevant
              if j.doc in pages and 1 <= j.page <= len(pages[j.doc]))
    share, _, shared = most_shared(q.text, judged)
    return share, shared


def most_shared(text: str, pages: Iterable[tuple[str, str]]) -> tuple[float, str, list[str]]:
    """Of ``(page id, page text)`` pairs, the first page holding the largest share of ``text``'s content
    words: (that share, its page id, those words as ``text`` writes them); ``(0.0, "", [])`` when none does.

    Per page, not over the union of pages: a query is "lifted" when it copies the wording of a page that
    answers it, and a union would grow with every extra page judged, penalising complete judgments."""
    want = content_words(text)
    best: tuple[float, str, set[str]] = (0.0, "", set())
    for pid, page in pages:
        shared = want & content_words(page)
        if want and len(shared) / len(want) > best[0]:
            best = (len(shared) / len(want), pid, shared)
    return best[0], best[1], as_written(text, best[2])


# ---- TREC ---------------------------------------------------------------------------------------------

def to_trec(qs: QuerySet, level: str = "page") -> str:
    """TREC qrels lines ``qid 0 id gain``; page ids are ``<doc>#<page>``."""
    def conv(q: Query) -> dict[str, int]:
        return page_qrels(q) if level == "page" else doc_qrels(page_qrels(q))
    def tid(pid: str) -> str:  # document-level keys are plain names
        return pid if level == "page" else ids.encode(pid)
    return "".join(f"{ids.encode(q.id)} 0 {tid(pid)} {g}\n" for q in qs.queries for pid, g in sorted(conv(q).items()))


def topics_tsv(qs: QuerySet) -> str:
    """``id<TAB>class<TAB>text`` per query: what TREC qrels cannot carry."""
    return "".join(f"{ids.encode(q.id)}\t{q.cls}\t{' '.join(q.text.split())}\n" for q in qs.queries)


def from_trec(qrels_text: str, topics_text: str, name: str = "imported", corpus: str | None = None) -> QuerySet:
    """A query set from page-level TREC qrels and a topics file (``id<TAB>text`` or ``id<TAB>class<TAB>text``).
    Without a class column, a query with no relevant pages is abstain, one document needle, else spread.
    Gain-0 lines are kept: they are judged non-relevant pages."""
    judged: dict[str, list[Judgment]] = defaultdict(list)
    for n, line in enumerate(qrels_text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise QrelsError(f"qrels line {n}: want 'qid iter doc#page gain', got {line!r}")
        qid, _, pid, gain = parts
        try:
            qid = ids.decode(qid)
            doc, page = split_page_id(pid)
            g = int(gain)
        except ValueError:
            raise QrelsError(f"qrels line {n}: query {qid!r}: {pid!r} is not '<doc>#<page>' or gain not "
                             "an integer") from None
        judged[qid].append(Judgment(doc, page, g))
    queries = []
    for n, line in enumerate(topics_text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) == 2:
            qid, text = ids.decode(parts[0]), parts[1]
            docs = {j.doc for j in judged.get(qid, ()) if j.gain > 0}
            cls = "abstain" if not docs else "needle" if len(docs) == 1 else "spread"
        elif len(parts) == 3:
            qid, cls, text = ids.decode(parts[0]), parts[1], parts[2]
        else:
            raise QrelsError(f"topics line {n}: want 'id<TAB>text' or 'id<TAB>class<TAB>text'")
        queries.append(Query(qid, cls, text, tuple(judged.pop(qid, ()))))
    if judged:
        raise QrelsError(f"qrels name queries missing from the topics file: {', '.join(sorted(judged))}")
    return QuerySet(name, corpus, tuple(queries))


def to_toml(qs: QuerySet) -> str:
    """The evalkit query-file form of a query set (as written by ``evalkit qrels import``)."""
    import tomli_w

    header = {"name": qs.name, **({"corpus": qs.corpus} if qs.corpus else {}),
              **({"description": qs.description} if qs.description else {}),
              **({"pool_depth": qs.pool_depth} if qs.pool_depth else {}),
              **({"pool_arms": list(qs.pool_arms)} if qs.pool_arms else {}),
              "gains": {str(k): v for k, v in sorted(qs.gains.items(), reverse=True)}}
    queries = []
    for q in qs.queries:
        d = {"id": q.id, "class": q.cls, "text": q.text,
             "judgments": [{"doc": j.doc, "page": j.page, "gain": j.gain,
                            **({"evidence": j.evidence} if j.evidence else {})} for j in q.judgments]}
        d.update({key: v for key in ("notes", "distractor", "kind") if (v := getattr(q, key))})
        queries.append(d)
    return tomli_w.dumps({"set": header, "query": queries})


def split(qs: QuerySet, seed: int = 0) -> tuple[QuerySet, QuerySet]:
    """Two disjoint halves of a query set, to tune on one and gate on the other when there is one set
    (``evalkit tune --tune-on C=A.toml --held-out C=B.toml``, then the reverse: two-fold cross-validation).
    Stratified by class, so each half has every class in proportion: within a class, queries are shuffled
    (seeded, from their ids, so the split does not depend on file order) and dealt out, a class's odd one
    going to the half that is smaller so far. Queries of the same text stay together (``tune`` refuses a
    held-out set sharing a query text with the tuning set)."""
    import numpy as np

    groups: dict[str, list[Query]] = {}
    for q in qs.queries:
        groups.setdefault(" ".join(q.text.split()).lower(), []).append(q)
    halves: tuple[list[Query], list[Query]] = ([], [])
    rng = np.random.default_rng(seed)
    for cls in CLASSES:
        mine = sorted((g for g in groups.values() if g[0].cls == cls), key=lambda g: g[0].id)
        start = 0 if len(halves[0]) <= len(halves[1]) else 1  # the smaller half so far gets a class's odd one
        for i, j in enumerate(rng.permutation(len(mine)).tolist()):
            halves[(start + i) % 2].extend(mine[j])
    position = {q.id: i for i, q in enumerate(qs.queries)}  # each half in the file's own order
    a, b = (tuple(sorted(h, key=lambda q: position[q.id])) for h in halves)
    return (replace(qs, name=f"{qs.name}-a", queries=a, digest="", path=None, pooled={}, reread={}),
            replace(qs, name=f"{qs.name}-b", queries=b, digest="", path=None, pooled={}, reread={}))


def write_split(path: Path, outs: tuple[Path, Path], seed: int = 0) -> tuple[QuerySet, QuerySet]:
    """:func:`split` of the query file ``path`` written to ``outs`` (neither may exist: a file is never
    replaced); the source file is only read."""
    from .atomic import write_atomic

    for out in outs:
        if out.exists():
            raise QrelsError(f"{out}: already exists; give another --out (a query file is never overwritten)")
    if outs[0].resolve() == outs[1].resolve():
        raise QrelsError(f"{outs[0]}: the two halves need two files")
    halves = split(load(path), seed)
    for out, half in zip(outs, halves, strict=True):
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, to_toml(half))
    return halves

"""The judging workbench's logic: one person judging one query file, with nothing lost.

The query file *is* the state. Every action (a query written, a pool drawn, a grade, an evidence quote, a
note, a skip, an undo) is written at once, atomically (a temporary file, then ``os.replace``), with
``tomlkit``, so the comments and layout a person gave the file survive. What is left to read is a pure
function of what the file holds (``pooled``, ``judgments`` in the order they were made, ``skipped``) and,
for an adaptive strategy, of the arms' rankings (:mod:`evalkit.pooling`), so a kernel restart, a closed
tab or a crash resumes where the assessor stopped. One workbench per file: a session holds an exclusive
``flock`` on ``FILE.lock`` for its lifetime, which the kernel drops when the process dies, so a second
workbench, in this process or another, is refused while the first lives, and a killed one's is taken over.

What the workbench adds to a query in the file (documented in qrels/README.md, "The judging workbench")::

    pooled = ["booktabs.pdf#6", ...]      # the pool drawn for the current text, in blind order
    skipped = ["ctable.pdf#5"]            # pages put to the end of the queue (still unjudged)
    set_aside = [{ doc = ..., page = ..., gain = ..., reread = ... }]   # judgments below gain 2 of an
                                          # earlier wording whose pages the new pool no longer holds
    judgments = [{ doc = ..., page = ..., gain = 3, reread = "old text" }]   # graded under an earlier
                                          # wording: counts, and is to be read again (then ``previous``)
    judgments = [{ doc = ..., page = ..., gain = 0, found_by = "search:keyword" }]   # found by a search
                                          # outside the pool (:meth:`Session.find`), not drawn by it

The widget (:mod:`evalkit.judging_widget`) only calls :class:`Session`; every rule lives here.
"""
from __future__ import annotations

import functools
from collections import Counter
import os
import re
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import tomlkit
from tomlkit.items import AoT, Array, InlineTable, Table

from . import pooling, qrels, validity
from .atomic import write_atomic
from .judging_time import Timer
from .judging_file import BOM, JudgingError, acquire, check, release, styled
from .measures import GOLD_GAIN
from .qrels import Problem, QuerySet
from .undo import Journal, UndoError, digest
from .records import ABSTAIN_KINDS, CLASSES, Judgment, Query, page_id, split_page_id
from .text import PASSAGE_WORDS, PASSAGES, contains, content_words, words

if TYPE_CHECKING:
    from .api import OpenCorpus

PageKey = tuple[str, int]
P = ParamSpec("P")
T = TypeVar("T")
DEFAULT_ARMS = ("global-index", "keyword", "semantic")
DEFAULT_STRATEGY = "depth(k=10)"
_WORD = re.compile(r"[^\W_]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _action(method: Callable[Concatenate["Session", P], T]) -> Callable[Concatenate["Session", P], T]:
    """A change of the file, all or nothing: the session first reads the file again if it changed on disk
    (:meth:`Session.sync`: a hand edit is kept, and an action that no longer applies is refused), then
    changes its document and saves it once; when anything fails on the way, the document goes back to
    the file's text and nothing is written."""
    @functools.wraps(method)
    def run(self: "Session", *args: P.args, **kwargs: P.kwargs) -> T:
        if self._depth:  # called by another action: that one reads and saves
            return method(self, *args, **kwargs)
        for value in (*args, *kwargs.values()):
            if isinstance(value, str) and (bad := _SURROGATE.search(value)):
                raise JudgingError(f"{self.path}: the text {value[:60]!r} holds a lone surrogate "
                                   f"(U+{ord(bad.group()):04X}, half of a character that never arrived whole): "
                                   "nothing written; type or paste it again")
        self.sync()
        self._depth += 1
        try:
            out = method(self, *args, **kwargs)
            self._save()
            return out
        except BaseException:
            self.doc = self._parse(self._text)
            raise
        finally:
            self._depth -= 1
    return run


_OPEN: "weakref.WeakValueDictionary[str, Session]" = weakref.WeakValueDictionary()  # this process's, by file


def _close_earlier(key: str) -> bool:
    """Close this process's open session on the file ``key`` (a notebook cell run again); whether there was one."""
    earlier = _OPEN.get(key)
    if earlier is None or earlier.closed:
        return False
    earlier.close("it was replaced by a newer workbench on the same file (the cell run again?): use that one")
    return True


# ---- page text as the assessor sees it -------------------------------------------------------------------

def mark(text: str, query: str) -> list[tuple[str, bool]]:
    """``text`` cut into runs, each flagged when it is a word of the query (as :func:`content_words` folds
    it: case, plural s). Joined, the runs give ``text`` back exactly, so a selection of them is verbatim."""
    wanted = content_words(query)
    out: list[tuple[str, bool]] = []
    last = 0
    for m in _WORD.finditer(text):
        if content_words(m.group(0)) & wanted:
            if m.start() > last:
                out.append((text[last:m.start()], False))
            out.append((m.group(0), True))
            last = m.end()
    if last < len(text):
        out.append((text[last:], False))
    return out


def passages(text: str, query: str, size: int = PASSAGE_WORDS, n: int = PASSAGES) -> list[str]:
    """The page's ``n`` best-matching windows of ``size`` words, in page order: verbatim slices of ``text``
    (so a quote selected in one is on the page), scored by the query words they hold (distinct ones first,
    then every occurrence), windows overlapping a better one left out. A page of at most ``n`` windows'
    words is one passage, itself; a page no query word is on gives its first window."""
    spans = [m.span() for m in _WORD.finditer(text)]
    if len(spans) <= size * n:
        return [text.strip()] if text.strip() else []
    wanted = content_words(query)
    found = [content_words(text[a:b]) & wanted for a, b in spans]
    starts = sorted({*range(0, len(spans) - size, max(size // 2, 1)), len(spans) - size})
    score = {i: (len(set().union(*found[i:i + size])), sum(map(bool, found[i:i + size]))) for i in starts}
    chosen: list[int] = []
    for i in sorted(starts, key=lambda i: (-score[i][0], -score[i][1], i)):
        if len(chosen) < n and score[i][0] and all(abs(i - c) >= size for c in chosen):
            chosen.append(i)
    return [text[spans[i][0]:spans[i + size - 1][1]] for i in sorted(chosen or [0])]


def render(docs: "OpenCorpus", doc: str, page: int, dpi: int = 110) -> bytes:
    """The page as a PNG, drawn by PyMuPDF from the corpus's own PDF (what a reader of the file sees)."""
    import pymupdf

    with pymupdf.open(docs.corpus.path(doc)) as pdf:
        return pdf[page - 1].get_pixmap(dpi=dpi).tobytes("png")


def escape(text: str) -> str:
    """Text safe to print on a terminal: control characters (escape sequences, bells) shown as \\xNN;
    line breaks and tabs kept, a form feed (a page break) shown as a line."""
    text = text.replace("\f", "\n" + "-" * 20 + "\n")
    return "".join(c if c in "\n\t" or (c.isprintable()) else f"\\x{ord(c):02x}" for c in text)


# ---- the session -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Item:
    """One page to read, as the assessor sees it: no arm name, its place in the queue, its grade if any."""

    doc: str
    page: int
    gain: int | None
    evidence: str
    skipped: bool
    reread: str = ""  # the earlier wording its grade was given under: to read again under the current one

    @property
    def id(self) -> str:
        return page_id(self.doc, self.page)

    @property
    def todo(self) -> bool:
        """Left to read: never graded, or graded under an earlier wording."""
        return self.gain is None or bool(self.reread)


class Session:
    """A judging session over one query file (created when missing). ``docs`` is the corpus the pages come
    from; ``arms`` the arm specs (or retrievers, registered with :func:`evalkit.api.arm`) pooled from;
    ``strategy`` a :mod:`evalkit.pooling` spec: ``depth(k=10)`` shows the whole pool, ``mtf`` and
    ``maxmean`` the next page they choose. One session per file holds its lock for its lifetime; with
    ``replace``, a session of this process on the same file is closed first (a notebook cell run again).
    ``clock`` (seconds since the epoch) times the person for the time log (:mod:`evalkit.judging_time`)."""

    def __init__(self, path: str | Path, docs: "OpenCorpus", arms: Sequence[Any] = DEFAULT_ARMS,
                 strategy: str = DEFAULT_STRATEGY, replace: bool = False, clock: Callable[[], float] = time.time):
        from .api import arm as register

        self.path, self.docs = Path(path), docs
        self.arms = [a if isinstance(a, str) else register(a) for a in arms]
        self.strategy = pooling.strategy(strategy)
        self.path.parent.mkdir(parents=True,
                               exist_ok=True)  # a new set in a folder not made yet (qrels/ of a fresh project)
        key = os.path.realpath(self.path)
        replaced = replace and _close_earlier(key)
        fd, self.message = acquire(self.path)
        if replaced:
            self.message = "the earlier workbench of this kernel on this file is closed: this one writes now"
        self._release = weakref.finalize(self, release, self.path, fd, os.getpid())  # also when dropped unclosed
        self.closed: bool = False
        self._why_closed = ""
        _OPEN[key] = self
        try:
            if not self.path.exists():
                fresh = tomlkit.document()
                fresh["set"] = {"name": self.path.stem, "corpus": docs.name}
                write_atomic(self.path, tomlkit.dumps(fresh))
            self._text = self._disk()  # the file as this session last read or wrote it
            self.doc = self._parse(self._text)
        except BaseException:
            self.close()
            raise
        self._depth = 0  # actions running (one calls another: a reword pools again), saved once, outermost
        self.journal = Journal(self.path)  # what undo restores, on disk: it outlives this session
        self.timer = Timer(self.path, clock)  # the person's seconds per action, beside the file (judging_time)
        self.rankings: dict[str, dict[str, list[PageKey]]] = {}
        self._ranker: validity.Ranker | None = None
        self._vocab: frozenset[str] | None = None
        self._parsed: tuple[str, QuerySet] | None = None  # the document's text and the query set parsed from it

    def _disk(self) -> str:
        """The file's text exactly as its bytes hold it (line endings and a byte-order mark included)."""
        try:
            return self.path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise JudgingError(f"{self.path}: the file is gone (moved or deleted?): nothing written") from None
        except UnicodeDecodeError as e:
            raise JudgingError(f"{self.path}: not UTF-8 (byte {e.start}): fix the file, then try again; "
                               "nothing written") from None
        except OSError as e:
            raise JudgingError(f"{self.path}: cannot be read ({e.strerror}): nothing written") from None

    def _parse(self, text: str) -> tomlkit.TOMLDocument:
        """The document of ``text``, refused in one line when evalkit could not read it as a query file."""
        try:
            doc = tomlkit.parse(text.removeprefix(BOM))
            check(text, doc, self.path)
            return doc
        except tomlkit.exceptions.TOMLKitError as e:
            raise JudgingError(f"{self.path}: not valid TOML ({e}): fix the file, then try again; nothing "
                               "written") from None
        except qrels.QrelsError as e:
            raise JudgingError(f"{e}: fix the file, then try again; nothing written") from None

    def close(self, why: str = "it was closed") -> None:
        """Release the file's lock; every later action of this session is refused, saying ``why``."""
        if not self.closed:
            self._release()
            self.closed, self._why_closed = True, why

    # -- reading and writing the file --

    def sync(self) -> str:
        """Read the file again when it changed on disk since this session last read or wrote it (a hand
        edit, compared by the digest of its bytes), so that the next action applies to it and keeps it.
        Returns what to tell the user ("" when nothing changed)."""
        if self.closed:
            raise JudgingError(f"{self.path}: this workbench writes nothing more: {self._why_closed}")
        text = self._disk()
        if digest(text) == digest(self._text):
            return ""
        self.doc, self._text = self._parse(text), text
        return f"{self.path} changed on disk (edited by hand?): read again, the change kept"

    def _save(self) -> None:
        """Write the document now; the text it replaces goes into the undo journal. Refused when the file
        changed on disk while the action ran (its change would be overwritten)."""
        after = styled(tomlkit.dumps(self.doc), self._text)
        if after == self._text:
            return
        try:
            check(after, self.doc, self.path)  # what is written is a file evalkit reads
        except qrels.QrelsError as e:
            raise JudgingError(f"{e} (the action would write that): nothing written") from None
        if digest(self._disk()) != digest(self._text):
            raise JudgingError(f"{self.path} changed on disk during this action (edited by hand?): nothing "
                               "written, so that change is kept; try again")
        try:
            self.journal.record(self._text, after)  # first: a kill before the file leaves an entry undo drops
        except UndoError as e:
            raise JudgingError(str(e)) from None
        write_atomic(self.path, after)
        self._text = after

    def undo(self) -> bool:
        """Restore the file as it was before the last action, of this session or an earlier one on the same
        file; False when there is none. Refused when the file was changed since by anything else."""
        self.sync()
        try:
            done = self.journal.undo()
        except UndoError as e:
            raise JudgingError(str(e)) from None
        self._text = self._disk()
        self.doc = self._parse(self._text)
        return done

    def _entries(self) -> AoT | list:
        return self.doc.get("query", [])

    def ids(self) -> list[str]:
        return [str(q["id"]) for q in self._entries()]

    def _query(self, qid: str) -> Table:
        for q in self._entries():
            if q["id"] == qid:
                return q
        raise JudgingError(f"{self.path}: no query {qid!r}")

    def query_set(self) -> QuerySet | None:
        """The file as evalkit reads it (None while it holds no query); parsed again only when the document
        changed (the strict check and "can I decide yet?" both read it after every key)."""
        if not self.ids():
            return None
        text = tomlkit.dumps(self.doc)
        if self._parsed is None or self._parsed[0] != text:
            self._parsed = (text, qrels.parse(text.encode("utf-8"), self.path))
        return self._parsed[1]

    def gains(self) -> dict[int, str]:
        """The rubric: the set's ``[set.gains]``, else :data:`evalkit.qrels.DEFAULT_GAINS`."""
        raw = self.doc.get("set", {}).get("gains")
        return {int(k): str(v) for k, v in raw.items()} if raw else dict(qrels.DEFAULT_GAINS)

    # -- queries --

    @_action
    def write_query(self, qid: str, cls: str, text: str, kind: str = "", distractor: str = "",
                    notes: str | None = None) -> list[str]:
        """Add a query or edit one; returns what would fail before any page is read (:meth:`before`).
        Rewording a query marks every page it has graded to be read again (``reread``, the wording the grade
        was given under: it still counts until then, and ``check --strict`` lists it); one that has a pool
        is pooled again (:meth:`pool`)."""
        qid, text = qid.strip(), " ".join(text.split())
        if not qid or not text:
            raise JudgingError(f"{self.path}: a query needs an id and a text")
        if cls not in CLASSES:
            raise JudgingError(f"{self.path}: query {qid!r}: class {cls!r} is not one of {', '.join(CLASSES)}")
        if kind and kind not in ABSTAIN_KINDS:
            raise JudgingError(f"{self.path}: query {qid!r}: kind {kind!r} is not one of {', '.join(ABSTAIN_KINDS)}")
        if qid not in self.ids():
            table = tomlkit.table()
            table.update({"id": qid, "class": cls, "text": text})
            table["judgments"] = tomlkit.array().multiline(True)
            self.doc.setdefault("query", tomlkit.aot()).append(table)
        q = self._query(qid)
        old = str(q["text"])
        q["class"], q["text"] = cls, text
        for j in q.get("judgments", []) if old != text else []:
            if "reread" not in j:  # reworded twice before reading: the grade's own wording stays
                j["reread"] = old
        for field, value in (("kind", kind), ("distractor", distractor),
                             *((("notes", notes),) if notes is not None else ())):
            if value:
                q[field] = value
            elif field in q:
                del q[field]
        if old != text and "pooled" in q:
            self.rankings.pop(qid, None)
            self.pool(qid)
        return self.before(qid)

    def drafts(self, folder: str | Path = Path("qrels") / "drafts") -> list[dict[str, Any]]:
        """The drafts of ``qrels/drafts/*.toml`` for this corpus (``evalkit qrels draft``), each a dict."""
        out = []
        for f in sorted(Path(folder).glob("*.toml")):
            data = tomlkit.parse(qrels.decode(f.read_bytes(), f)[0]).unwrap()
            if data.get("corpus") in (None, self.docs.name):
                out += [{**d, "file": str(f)} for d in data.get("draft", [])]
        return out

    def fresh_drafts(self, folder: str | Path, cls: str = "") -> list[dict[str, Any]]:
        """The drafts (of class ``cls``, or any) neither accepted into this file (a query's ``drafted``) nor
        rejected (``[set] drafts_rejected``): the workbench's stream of candidates, in the drafts' order."""
        done = {str(self._query(q).get("drafted", "")).split(":")[0] for q in self.ids()}
        done |= {str(d) for d in self.doc.get("set", {}).get("drafts_rejected", [])}
        return [d for d in self.drafts(folder) if str(d["id"]) not in done and cls in ("", d.get("class"))]

    def balance(self) -> dict[str, int]:
        """Queries per class in the file, every class named: what the drafts stream is to even out."""
        return {**dict.fromkeys(CLASSES, 0), **Counter(str(self._query(q)["class"]) for q in self.ids())}

    @_action
    def from_draft(self, draft: dict[str, Any], qid: str | None = None, text: str = "") -> str:
        """A draft made a query, as it is or with ``text`` edited; its provenance kept as the query's
        ``drafted = "<draft id>: <source>"``: one key in the widget."""
        qid = qid or str(draft["id"])
        n, base = 1, qid
        while qid in self.ids():
            n, qid = n + 1, f"{base}-{n}"
        cls = str(draft["class"])
        kind = str(draft.get("kind", "")) or ("uncovered-need" if cls == "abstain" else "")
        self.write_query(qid, cls, text.strip() or str(draft["text"]), kind, str(draft.get("distractor", "")))
        self._query(qid)["drafted"] = f"{draft['id']}: {draft.get('source', '')}"
        return qid

    @_action
    def reject_draft(self, draft: dict[str, Any]) -> None:
        """A draft the assessor will not use, kept in ``[set] drafts_rejected`` so it is not offered again."""
        rejected = self.doc.setdefault("set", tomlkit.table()).setdefault("drafts_rejected", tomlkit.array())
        if str(draft["id"]) not in rejected:
            rejected.append(str(draft["id"]))

    # -- pooling --

    def _ranked(self, spec: str, text: str, k: int) -> tuple[str, list[PageKey]]:
        """One arm's label and top ``k`` pages for ``text`` over the corpus."""
        from .arms import make

        arm = make(spec, self.docs.corpus, self.docs.store)
        try:
            arm.prepare()
            return arm.label, [(h.doc, h.page) for h in arm.search(text, k).hits]
        finally:
            arm.close()

    def search(self, qid: str) -> dict[str, list[PageKey]]:
        """Every arm's ranked pages for the query (kept in memory: arm labels never leave this object)."""
        if qid not in self.rankings:
            text, k = str(self._query(qid)["text"]), max(self.strategy.depth, 10)
            self.rankings[qid] = dict(self._ranked(spec, text, k) for spec in self.arms)
        return self.rankings[qid]

    def search_arm(self) -> str:
        """The arm a search outside the pool uses unless told: the file's first pooled arm, else the session's."""
        recorded = list(self.doc.get("set", {}).get("pool_arms", []))
        return str((recorded or self.arms or ["keyword"])[0])

    def find(self, text: str, arm: str = "", k: int = 10) -> tuple[str, list[PageKey]]:
        """Search the whole corpus outside the pool with any arm of the registry (default
        :meth:`search_arm`): the arm spec and its top ``k`` pages, to grade with ``found_by``."""
        from .arms import ArmError

        arm, text = arm.strip() or self.search_arm(), " ".join(text.split())
        if not text:
            raise JudgingError(f"{self.path}: type what to search the corpus for")
        try:
            return arm, self._ranked(arm, text, k)[1]
        except ArmError as e:
            raise JudgingError(f"{self.path}: search with arm {arm!r}: {e}") from None

    @_action
    def pool(self, qid: str) -> list[PageKey]:
        """Draw the query's pool (blind, de-duplicated) and record it. Only a grade below 2 given under an
        earlier wording (``reread``) of a page the pool no longer holds moves to ``set_aside``: a relevant
        page (gain 2 or more) is never set aside unasked, and a grade of the query as it reads now stays
        whatever drew its page (a search outside the pool, other arms). Returns the pool."""
        q = self._query(qid)
        pages = self.strategy.pool(self.search(qid))
        q["pooled"] = _array(page_id(*p) for p in pages)
        keep = set(pages)
        judged = q.get("judgments", [])
        stays = [(str(j["doc"]), int(j["page"])) in keep or int(j["gain"]) >= GOLD_GAIN or "reread" not in j
                 for j in judged]
        if not all(stays):
            aside = q.setdefault("set_aside", tomlkit.array().multiline(True))
            for j, stay in zip(judged, stays, strict=True):
                if not stay:
                    aside.append(j)
            q["judgments"] = _array(j for j, stay in zip(judged, stays, strict=True) if stay)
        if "skipped" in q:
            q["skipped"] = _array(s for s in q["skipped"] if split_page_id(str(s)) in keep)
        set_ = self.doc.setdefault("set", tomlkit.table())
        set_["pool_depth"], set_["pool_arms"] = self.strategy.depth, _array(self.arms, multiline=False)
        return pages

    def _judged(self, qid: str) -> list[tuple[PageKey, int]]:
        return [((str(j["doc"]), int(j["page"])), int(j["gain"])) for j in self._query(qid).get("judgments", [])]

    def queue(self, qid: str) -> list[Item]:
        """The query's pages in reading order. A fixed-depth pool keeps its blind order whatever is judged
        (so a page does not move under the cursor), skipped pages last; pages judged outside the pool come
        first. An adaptive strategy shows the pages judged, in the order judged, then its next page."""
        q = self._query(qid)
        judged = {(str(j["doc"]), int(j["page"])): j for j in q.get("judgments", [])}
        pooled = [split_page_id(str(p)) for p in q.get("pooled", [])]
        skipped = {split_page_id(str(p)) for p in q.get("skipped", [])}
        if self.strategy.name != "depth" and qid in self.rankings:
            left = [p for p in pooled if p not in judged]
            nxt = [p for p in self.strategy.for_query(qid).pending(self.rankings[qid], self._judged(qid)) if p in left]
            order = [*judged, *(nxt or [p for p in left if p in skipped])]
        else:
            order = [p for p in judged if p not in set(pooled)] + [p for p in pooled if p not in skipped or p in judged]
            order += [p for p in pooled if p in skipped and p not in judged]
        return [Item(p[0], p[1], int(judged[p]["gain"]), str(judged[p].get("evidence", "")), False,
                     str(judged[p].get("reread", ""))) if p in judged
                else Item(p[0], p[1], None, "", p in skipped) for p in order]

    def left(self, qid: str) -> int:
        """Pages pooled for the query and not judged yet."""
        return sum(i.todo for i in self.queue(qid))

    # -- judging --

    def _judgment(self, qid: str, page: PageKey) -> InlineTable | None:
        return next((j for j in self._query(qid).get("judgments", [])
                     if (str(j["doc"]), int(j["page"])) == page), None)

    def text(self, doc: str, page: int) -> str:
        """The page's text as the arms see it (the page store's)."""
        try:
            return self.docs.page(doc, page).text
        except (KeyError, IndexError):
            raise JudgingError(f"{self.path}: {page_id(doc, page)} is not a page of corpus "
                               f"{self.docs.name!r}") from None

    @_action
    def grade(self, qid: str, doc: str, page: int, gain: int, evidence: str = "", found_by: str = "") -> None:
        """Grade a page (again, if it was graded): ``gain`` one of the rubric's (0 = read, does not answer),
        with ``evidence`` when the quote was taken before the grade (one write, one undo). ``found_by``
        (``search:<arm>``) records a page found by a search outside the pool, when it is judged first
        and not pooled: not drawn by the pool, it must not count as drawn.
        A page graded under an earlier wording keeps that grade, its wording and evidence as ``previous``;
        its evidence is to be taken again, for the current wording."""
        if gain not in self.gains():
            raise JudgingError(f"{self.path}: gain {gain} is not in the rubric "
                               f"({', '.join(map(str, sorted(self.gains())))})")
        quote = self.quote(qid, doc, page, evidence) if evidence.strip() else ""
        self.text(doc, page)
        j = self._judgment(qid, (doc, page))
        if j is None:
            q = self._query(qid)
            j = tomlkit.inline_table()
            j.update({"doc": doc, "page": page, "gain": gain})
            if found_by and page_id(doc, page) not in [str(p) for p in q.get("pooled", [])]:
                j["found_by"] = qrels.parse_found_by(found_by, f"{self.path}: query {qid!r}")
            q.setdefault("judgments", tomlkit.array().multiline(True)).append(j)
        else:
            if "reread" in j:
                j["previous"] = _previous(j)
                for key in ("reread", "evidence"):
                    j.pop(key, None)
            j["gain"] = gain
        if quote:
            j["evidence"] = quote
        self._unskip(qid, (doc, page))

    def quote(self, qid: str, doc: str, page: int, quote: str) -> str:
        """A quote as evidence of the page would store it (trimmed), refused unless the page holds it (as
        ``qrels check --strict`` will check): the workbench keeps one taken before the grade this way."""
        quote = quote.strip()
        if not quote:
            raise JudgingError(f"{self.path}: empty evidence: select text on the page first")
        if not contains(self.text(doc, page), quote):
            raise JudgingError(f"{self.path}: query {qid!r}: the quote is not on {page_id(doc, page)}: {quote[:80]!r}")
        return quote

    @_action
    def evidence(self, qid: str, doc: str, page: int, quote: str) -> str:
        """Store a quote, verbatim, as the evidence of a graded page, after checking the page holds it (as
        ``qrels check --strict`` will); returns the quote stored (trimmed of surrounding white space)."""
        quote = self.quote(qid, doc, page, quote)
        j = self._judgment(qid, (doc, page))
        if j is None:
            raise JudgingError(f"{self.path}: query {qid!r}: grade {page_id(doc, page)} before giving its evidence")
        j["evidence"] = quote
        return quote

    @_action
    def note(self, qid: str, text: str, doc: str | None = None, page: int | None = None) -> None:
        """A note on a judged page (its ``notes``), or on the query when no page is given or it is unjudged."""
        j = self._judgment(qid, (doc, page)) if doc and page else None
        where = j if j is not None else self._query(qid)
        if text.strip():
            where["notes"] = text.strip()
        elif "notes" in where:
            del where["notes"]

    @_action
    def skip(self, qid: str, doc: str, page: int) -> None:
        """Put an unjudged page at the end of the queue (it stays unjudged: strict check still wants it)."""
        q = self._query(qid)
        if self._judgment(qid, (doc, page)) is None and page_id(doc, page) not in q.get("skipped", []):
            q.setdefault("skipped", tomlkit.array()).append(page_id(doc, page))

    def _unskip(self, qid: str, page: PageKey) -> None:
        q = self._query(qid)
        if "skipped" in q:
            q["skipped"] = _array((s for s in q["skipped"] if str(s) != page_id(*page)), multiline=False)

    # -- validity --

    def ranker(self) -> validity.Ranker:
        if self._ranker is None:
            self._ranker = validity.bm25_ranker(self.docs.corpus, self.docs.store)
        return self._ranker

    def vocab(self) -> frozenset[str]:
        if self._vocab is None:
            self._vocab = validity.vocabulary(self.docs.store.corpus_texts(self.docs.corpus))
        return self._vocab

    def before(self, qid: str) -> list[str]:
        """What would fail for the query as written, before any page is read: a trap's distractor against the
        candidate gold pages under corpus-wide BM25, an abstain query's unknown words, a described query's
        overlap and 4-word runs with the pooled pages."""
        q = self._query(qid)
        text, cls, out = str(q["text"]), str(q["class"]), []
        if cls == "trap":
            out.append(_trap_line(self, qid, text, str(q.get("distractor", ""))))
        if cls == "abstain":
            unknown = validity.unknown_words(Query(qid, cls, text), self.vocab())
            kind = str(q.get("kind", "")) or "no kind"
            out.append(f"abstain [{kind}]: " + (f"not in the corpus: {' '.join(sorted(unknown))}"
                                                + (" (an uncovered-need has every word in the corpus: reword it, "
                                                   "or call it absent-name)" if kind == "uncovered-need" else "")
                                                if unknown else "every content word is in the corpus"))
        if cls == "described":
            out += _described_lines(self, q, text)
        return out

    def problems(self, qid: str | None = None) -> list[Problem]:
        """What ``evalkit qrels check --strict`` would report now (for one query, or the whole file)."""
        qs = self.query_set()
        if qs is None:
            return []
        pages = self.docs.store.corpus_texts(self.docs.corpus)
        found = qrels.check(qs, pages, strict=True) + validity.check(qs, pages, self.ranker(), self.vocab())
        return [p for p in found if qid is None or p.query == qid]

    def judged_at(self, qid: str | None = None, k: int = 10) -> dict[str, float]:
        """Judged@k per arm (share of its top k pages with a judgment), over the queries searched so far."""
        shares: dict[str, list[float]] = {}
        for q, rankings in self.rankings.items():
            if qid is not None and q != qid or q not in self.ids():
                continue
            judged = {p for p, _ in self._judged(q)}
            for arm, ranked in rankings.items():
                top = list(dict.fromkeys(ranked))[:k]
                shares.setdefault(arm, []).append(sum(p in judged for p in top) / len(top) if top else 1.0)
        return {arm: sum(v) / len(v) for arm, v in sorted(shares.items())}


def _array(values: Any, multiline: bool = True) -> Array:
    a = tomlkit.array()
    for v in values:
        a.append(v)
    return a.multiline(multiline) if len(a) > 3 and multiline else a


def _previous(j: InlineTable) -> InlineTable:
    """The grade a page had under an earlier wording, kept on its judgment once it is graded again."""
    out = tomlkit.inline_table()
    out.update({"gain": int(j["gain"]), "text": str(j["reread"])})
    if "evidence" in j:
        out["evidence"] = str(j["evidence"])
    return out


def _trap_line(s: Session, qid: str, text: str, distractor: str) -> str:
    if not distractor:
        return "trap: name the distractor, the lexically similar document that does not answer"
    q = _as_graded(s, qid, "trap", text, distractor=distractor)
    ranking = s.ranker()(text)
    t = validity.trap_ranks(q, ranking)
    at = f"{t.distractor_rank} ({t.distractor_page})" if t.distractor_rank else "nowhere"
    if not q.judgments:  # no gold yet: "traps" would be a guess; name what must not answer instead
        return f"trap: BM25 ranks distractor {distractor} at {at}; no gold page judged yet: " + _above(ranking, t)
    gold = f"{t.gold_rank} ({t.gold_page})" if t.gold_rank else "nowhere"
    return (f"trap: BM25 ranks distractor {distractor} at {at}, the gold pages at {gold}: "
            + ("traps" if t.traps else "NOT a trap: reword the query or reclassify it"))


def _above(ranking: Sequence[PageKey], t: validity.TrapRanks) -> str:
    """Before any gold page is judged: the pages BM25 ranks above the distractor, any of which, if it
    answers, makes the query no trap."""
    if t.distractor_rank is None:
        return "BM25 matches no page of it, so it cannot trap: reword the query or name another distractor"
    above = [f"{page_id(*p)} ({r})" for r, p in enumerate(ranking[:t.distractor_rank - 1], 1) if p[0] != t.distractor]
    if not above:
        return "nothing ranks above it, so it traps"
    more = " …" if len(above) > 5 else ""
    return f"it traps only if none of the pages BM25 ranks above it answers: {', '.join(above[:5])}{more}"


def _described_lines(s: Session, q: Table, text: str) -> list[str]:
    """A described query under corpus-wide BM25 (keyword-easy when a gold page ranks in its top 3: the pages
    that must not answer, before any is graded) and against every pooled page (the largest word overlap,
    any shared 4-word run)."""
    return [_keyword_easy_line(s, str(q["id"]), text)] + (_overlap_lines(s, q, text) if "pooled" in q else [
        "described: no pool yet: its overlap with the pooled pages is checked once it is pooled"])


def _as_graded(s: Session, qid: str, cls: str, text: str, **fields: str) -> Query:
    """The query as written, with the pages graded above 0 so far: what the strict checks will judge."""
    return Query(qid, cls, text, tuple(Judgment(d, p, g) for (d, p), g in s._judged(qid) if g > 0), **fields)


def _keyword_easy_line(s: Session, qid: str, text: str) -> str:
    """The strict check's keyword-easy test (:func:`evalkit.validity.keyword_easy`) as the query stands;
    before any page is graded, the pages BM25 ranks first, any of which would make it keyword-easy."""
    q, ranking = _as_graded(s, qid, "described", text), s.ranker()(text)
    top = ranking[:validity.DESCRIBED_BM25_TOP]
    if not top:
        return "described: BM25 matches no page of it"
    if (hit := validity.keyword_easy(q, ranking)) is not None:
        return f"described: keyword-easy: BM25 ranks gold page {hit[1]} at {hit[0]}: write it further from the " \
               "page's words"
    named = ", ".join(f"{page_id(*p)} ({r})" for r, p in enumerate(top, 1))
    if q.judgments:
        return f"described: BM25 ranks no gold page in its top {validity.DESCRIBED_BM25_TOP} ({named})"
    return f"described: keyword-easy if one of the pages BM25 ranks first answers: {named}"


def _overlap_lines(s: Session, q: Table, text: str) -> list[str]:
    pooled = [(str(p), s.text(*split_page_id(str(p)))) for p in q.get("pooled", [])]
    share, pid, shared = qrels.most_shared(text, pooled)
    runs = [(r, p) for p, page in pooled for r in validity.shared_runs(text, page)[:1]]
    out = []
    if share > qrels.DESCRIBED_MAX_OVERLAP:
        out.append(f"described: shares {share:.0%} of its content words with pooled page {pid} "
                   f"(max {qrels.DESCRIBED_MAX_OVERLAP:.0%} with a page judged relevant): {', '.join(shared)}")
    if runs:
        run, pid = max(runs, key=lambda r: len(r[0]))
        out.append(f"described: shares the run {run!r} with pooled page {pid}")
    return out or [f"described: {len(words(text))} words, no pooled page shares more than "
                   f"{qrels.DESCRIBED_MAX_OVERLAP:.0%} of them or a 4-word run"]


def regrade_file(path: str | Path, docs: "OpenCorpus", out: str | Path, n: int = 20, seed: int = 0) -> Path:
    """:func:`regrade` of the query file ``path`` (which must exist: a session would create it), for
    ``evalkit qrels regrade``; refused when nothing in ``path`` is judged yet (and, by :func:`regrade`, when
    ``out`` exists)."""
    path, out = Path(path), Path(out)
    if not path.is_file():
        raise JudgingError(f"{path}: no such query file")
    session = Session(path, docs, arms=())
    try:
        if not any(session._judged(qid) for qid in session.ids()):
            raise JudgingError(f"{path}: no judged page to regrade yet")
        return regrade(session, out, n, seed)
    finally:
        session.close()


def regrade(session: Session, out: str | Path, n: int = 20, seed: int = 0) -> Path:
    """A second assessor's file: a random sample of ``n`` judged pages, same queries, every grade blank
    (``pooled`` holds the sample), to be judged blind in its own workbench and compared with
    ``evalkit qrels agree FIRST SECOND``."""
    import random

    out = Path(out)
    if out.exists():
        raise JudgingError(f"{out} exists (it may hold a second assessor's grades): choose another file")
    judged = [(qid, p) for qid in session.ids() for p, _ in session._judged(qid)]
    sample = sorted(random.Random(seed).sample(judged, min(n, len(judged))))
    doc = tomlkit.document()
    doc["set"] = tomlkit.table()
    doc["set"].update({"name": out.stem, "corpus": session.docs.name})
    queries = tomlkit.aot()
    for qid in dict.fromkeys(q for q, _ in sample):
        src = session._query(qid)
        t = tomlkit.table()
        t.update({"id": qid, "class": str(src["class"]), "text": str(src["text"])})
        t["judgments"] = tomlkit.array()
        t["pooled"] = _array(sorted((page_id(*p) for q, p in sample if q == qid),
                                    key=lambda i: pooling.blind_key(split_page_id(i))))
        queries.append(t)
    doc["query"] = queries
    write_atomic(out, tomlkit.dumps(doc))
    return out

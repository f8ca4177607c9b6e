"""The judging workbench as a JupyterLab widget (anywidget): ``ek.judge("qrels/mine.toml", docs)``.

The view (``evalkit/data/judge.js``, served from the installed package, no CDN) draws the state this object
sends and sends back the assessor's keys; every rule and every write is :class:`evalkit.judging.Session`'s.
Where the assessor stands (query, page) is derived from the file on opening, so a reopened workbench
resumes at the first page left to read. Given a run to gate (``results``, ``baseline``, ``candidate``), it also
shows the local judge's agreement and refusals and, after each grade, "can I decide yet?"
(:mod:`evalkit.judging_gate`); the judge's opinion of a page only once the person has graded it.
"""
from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from . import dirs, judging, judging_gate, qrels
from .judging import JudgingError, Session
from .records import ABSTAIN_KINDS, CLASSES, page_id
from .text import words

if TYPE_CHECKING:
    from .api import OpenCorpus


class Workbench(anywidget.AnyWidget):
    """One judging session drawn in a notebook; ``session`` is the plain-Python workbench under it."""

    _esm = dirs.shipped("judge.js")
    view = traitlets.Dict().tag(sync=True)

    def __init__(self, session: Session, drafts: str | Path = Path("qrels") / "drafts",
                 beside: judging_gate.Beside | None = None):
        super().__init__()
        self.session, self.drafts_dir, self.beside = session, Path(drafts), beside
        self.qid: str | None = next((q for q in session.ids() if session.left(q)), next(iter(session.ids()), None))
        self.index = self._first_unjudged()
        self.image = self.rubric = False
        self.shown: str | None = None  # the page the view shows: the one a key acts on
        self.display = "passage"  # passage first (its best windows); "page" after w, until another page is shown
        self.shows = "page"  # what the view shows of the page now (a short page is its own passage): timed with it
        self.words = 0  # how many words that is: the time log's reading model takes them out of the decision time
        self._on_screen: tuple[Any, ...] = ()  # what the view last showed: a change restarts the person's clock
        self.message, self.before = session.message, self.session.before(self.qid) if self.qid else []
        self.pending: dict[tuple[str, str], str] = {}  # (query, page) -> evidence taken before its grade
        self.confirm: tuple[str, int] | None = None  # (page, gain) a second press of which regrades the page
        self.drafting, self.offered = False, ""  # the stream of drafts shown, and the class it offers
        self.found: tuple[str, list[judging.PageKey]] | None = None  # (arm, pages) of a search outside the pool
        self.on_msg(self._on_msg)
        self.decision = self._decide()
        self.refresh()

    # -- where the assessor stands --

    def _first_unjudged(self) -> int:
        """Where to stand in the current query: its first page left to read. Its arms are searched once
        here (for Judged@10 and an adaptive strategy's next page) when it has a pool."""
        if self.qid is None:
            return 0
        if "pooled" in self.session._query(self.qid):
            self.session.search(self.qid)
        queue = self.session.queue(self.qid)
        return next((i for i, item in enumerate(queue) if item.todo), max(len(queue) - 1, 0))

    def _pages(self) -> list[judging.Item]:
        """The pages the cursor walks: the query's queue, or the pages a search outside the pool found."""
        queue = self.session.queue(self.qid) if self.qid else []
        if self.found is None:
            return queue
        known = {i.id: i for i in queue}
        return [known.get(page_id(*p)) or judging.Item(p[0], p[1], None, "", False) for p in self.found[1]]

    def _item(self) -> judging.Item | None:
        pages = self._pages()
        return pages[self.index] if 0 <= self.index < len(pages) else None

    def refresh(self) -> None:
        """Send the whole state to the view (text only: the view sets it as text, never as markup)."""
        s, item = self.session, self._item()
        query = dict(s._query(self.qid).unwrap()) if self.qid else None
        queue = s.queue(self.qid) if self.qid else []
        judgment = s._judgment(self.qid, (item.doc, item.page)) if item and self.qid else None
        self.shown = item.id if item else None
        drafts = self._draft_view()
        on_screen = (self.qid, self.shown, drafts and drafts["current"] and drafts["current"]["id"])
        if on_screen != self._on_screen:
            if on_screen[:2] != self._on_screen[:2]:
                self.display = "passage"
            self._on_screen = on_screen
            s.timer.shown()
        try:
            text = s.text(item.doc, item.page) if item and query else ""
        except JudgingError as e:  # a page the file names (edited by hand) that the corpus does not have
            text, self.message, item = "", str(e), None
        windows = judging.passages(text, str(query["text"])) if item and query else []
        self.shows = "page" if self.display == "page" or windows == [text.strip()] else "passage"
        self.words = len(words(text)) if self.shows == "page" else sum(len(words(w)) for w in windows)
        segments = judging.mark(text, str(query["text"])) if item and query else []
        self.view = {
            "file": str(s.path), "classes": list(CLASSES), "kinds": list(ABSTAIN_KINDS),
            "query": query and {k: query.get(k, "") for k in ("id", "class", "text", "kind", "distractor")},
            "left": sum(i.todo for i in queue), "position": f"{self.index + 1}/{len(self._pages())}",
            "item": item and {"id": item.id, "gain": item.gain, "skipped": item.skipped,
                              "evidence": self.pending.get((str(self.qid), item.id)) or item.evidence,
                              "kept": (str(self.qid), item.id) in self.pending,
                              "notes": str(judgment.get("notes", "")) if judgment is not None else "",
                              "reread": item.reread, "previous": _previous(judgment),
                              "judge": self._opinion(item)},
            "segments": segments, "display": self.shows, "short": bool(windows) and windows == [text.strip()],
            "passages": [judging.mark(w, str(query["text"])) for w in windows] if query and self.shows == "passage"
            else [],
            "image": base64.b64encode(judging.render(s.docs, item.doc, item.page)).decode() if item and self.image
            else "",
            "rubric": {str(k): v for k, v in s.gains().items()}, "show_rubric": self.rubric,
            "before": self.before, "problems": [f"{p.field}: {'warning: ' if p.warning else ''}{p.message}"
                                                for p in s.problems(self.qid)] if self.qid else [],
            "judged_at": s.judged_at(self.qid) if self.qid else {}, "message": self.message,
            "draft": drafts, "found": self.found and {"arm": self.found[0], "n": len(self.found[1])},
            "search_arm": s.search_arm(),
            "judge": self.beside and self.beside.judge, "decide": self.decision,
        }

    def _opinion(self, item: judging.Item) -> str:
        """The judge's opinion of the page shown: only once the person has graded it (under this wording)."""
        graded = None if item.reread else item.gain
        return self.beside.opinion(str(self.qid), item.doc, item.page, graded) if self.beside else ""

    def _decide(self) -> dict[str, Any] | None:
        """"Can I decide yet?", computed again only when the file's text changed (a key that changes no
        grade, a move or a toggle, costs nothing)."""
        return self.beside.decide(self.session._text, self.session.query_set) if self.beside else None

    # -- the assessor's actions --

    def _on_msg(self, _widget: Any, msg: dict[str, Any], _buffers: Sequence[bytes]) -> None:
        self.message, notice = "", ""
        if msg.get("action") != "grade":
            self.confirm = None  # a regrade is confirmed by the very next key only
        try:
            notice = self.session.sync()  # the file as it is on disk now, a hand edit included
            ACTIONS[str(msg.get("action"))](self, msg)
        except (JudgingError, KeyError) as e:
            self.message = str(e)
        self.message = "; ".join(m for m in (notice, self.message) if m)
        if self.qid is not None and self.qid not in self.session.ids():  # gone from the file
            self._open(next(iter(self.session.ids()), None))
        self.decision = self._decide()
        self.refresh()

    def grade(self, msg: dict[str, Any]) -> None:
        """Grade the page shown and go on. A page graded already (under this wording) is not regraded by a
        stray digit: the same grade moves on, another one asks to be pressed again."""
        qid, item = self._need_item()
        gain, confirm = int(msg["value"]), self.confirm
        if item.gain is not None and not item.reread and gain != item.gain and confirm != (item.id, gain):
            self.confirm = (item.id, gain)
            self.message = f"{item.id} is graded {item.gain}: press {gain} again to change it to {gain}, j to move on"
            return
        if item.gain != gain or item.reread or self.pending.get((qid, item.id)):
            found_by = f"{qrels.FOUND_BY}{self.found[0]}" if self.found and item.gain is None else ""
            self.session.grade(qid, item.doc, item.page, gain, self.pending.get((qid, item.id), ""), found_by)
            self._timed("grade", qid, item, found_by=found_by)
        self.pending.pop((qid, item.id), None)
        self._advance(qid)

    def evidence(self, msg: dict[str, Any]) -> None:
        """The quote as the page's evidence: stored at once on a graded page (the page stays), kept for the
        grade on one not graded yet (or to be read again), so evidence and grade come in either order."""
        qid, item = self._need_item()
        if item.todo:
            quote = self.session.quote(qid, item.doc, item.page, str(msg.get("text", "")))
            self.pending[(qid, item.id)] = quote
            self.message = f"evidence kept for the grade (0-3 stores both): {quote[:120]!r}"
        else:
            quote = self.session.evidence(qid, item.doc, item.page, str(msg.get("text", "")))
            self.message = f"evidence stored: {quote[:120]!r}"
        self._timed("evidence", qid, item)

    def note(self, msg: dict[str, Any]) -> None:
        qid = self._need_query("save the query before writing a note on it")
        item = self._shown_item(qid)
        self.session.note(qid, str(msg.get("text", "")), *((item.doc, item.page) if item else ()))
        if item:  # a note on the query itself is part of writing it
            self._timed("note", qid, item)

    def skip(self, msg: dict[str, Any]) -> None:
        qid, item = self._need_item()
        self.session.skip(qid, item.doc, item.page)
        self._timed("skip", qid, item)
        self.index = self._first_unjudged()

    def undo(self, msg: dict[str, Any]) -> None:
        self.message = "undone" if self.session.undo() else "nothing to undo"
        self.session.timer.record("undo", self.qid or "")
        if self.qid not in self.session.ids():
            self.qid, self.found = next(iter(self.session.ids()), None), None
        self.index = min(self.index, max(len(self._pages()) - 1, 0)) if self.qid else 0

    def move(self, msg: dict[str, Any]) -> None:
        n = len(self._pages())
        self.index = max(0, min(n - 1, self.index + int(msg["value"])))
        self.image = False

    def query(self, msg: dict[str, Any]) -> None:
        ids = self.session.ids()
        if ids:
            self._open(ids[(ids.index(self.qid) + int(msg["value"])) % len(ids)] if self.qid in ids else ids[0])

    def write(self, msg: dict[str, Any]) -> None:
        qid = str(msg.get("id", ""))
        self.before = self.session.write_query(qid, str(msg.get("class", "")), str(msg.get("text", "")),
                                               str(msg.get("kind", "")), str(msg.get("distractor", "")))
        self.session.timer.record("query", qid.strip())
        self.qid, self.found = qid.strip(), None
        self.index = self._first_unjudged()

    def new(self, msg: dict[str, Any]) -> None:
        self.qid, self.before, self.index, self.found = None, [], 0, None

    def pool(self, msg: dict[str, Any]) -> None:
        qid = self._need_query("save the query before pooling pages for it")
        pages = self.session.pool(qid)
        self.found = None
        self.before = self.session.before(qid)
        self.index = self._first_unjudged()
        self.message = (f"pooled {len(pages)} page(s) with {self.session.strategy.label} from "
                        f"{len(self.session.arms)} arm(s)")

    def draft(self, msg: dict[str, Any]) -> None:
        """Into the stream of drafts (of the class chosen, or any) and out of it again."""
        if not self.drafting and not self.session.drafts(self.drafts_dir):
            raise JudgingError(f"no draft in {self.drafts_dir} for corpus {self.session.docs.name!r} "
                               "(`evalkit qrels draft` writes them)")
        self.drafting = not self.drafting

    def _draft(self) -> dict[str, Any]:
        fresh = self.session.fresh_drafts(self.drafts_dir, self.offered)
        if not fresh:
            raise JudgingError(f"no {self.offered or 'draft'} left to review in {self.drafts_dir}")
        return fresh[0]

    def draft_accept(self, msg: dict[str, Any]) -> None:
        """The draft shown made a query, as it is or with the text the assessor edited; on to the next."""
        d, text = self._draft(), " ".join(str(msg.get("text", "")).split())
        edited = bool(text) and text != " ".join(str(d["text"]).split())
        qid = self.session.from_draft(d, text=text if edited else "")
        self.session.timer.record("draft-accept", qid, edited=edited or None)
        self.message = (f"draft {d['id']} is query {qid}{' (edited)' if edited else ''}: ] to judge it, or on with "
                        "the next draft")

    def draft_reject(self, msg: dict[str, Any]) -> None:
        d = self._draft()
        self.session.reject_draft(d)
        self.session.timer.record("draft-reject", str(d["id"]), cls=str(d["class"]))
        self.message = f"draft {d['id']} rejected"

    def draft_class(self, msg: dict[str, Any]) -> None:
        """The class the stream offers (``""``: every class), to even out the balance."""
        cls = str(msg.get("value", ""))
        if cls and cls not in CLASSES:
            raise JudgingError(f"class {cls!r} is not one of {', '.join(CLASSES)}")
        self.offered = cls

    def _draft_view(self) -> dict[str, Any] | None:
        """The stream as the view shows it: the draft to decide on, drafts left and queries per class."""
        if not self.drafting:
            return None
        every = self.session.fresh_drafts(self.drafts_dir)
        shown = next((d for d in every if self.offered in ("", d["class"])), None)
        left = {c: sum(d["class"] == c for d in every) for c in CLASSES}
        return {"class": self.offered, "left": sum(left[c] for c in CLASSES if self.offered in ("", c)),
                "balance": {c: [n, left[c]] for c, n in self.session.balance().items()},
                "current": shown and {k: str(shown.get(k, "")) for k in ("id", "class", "text", "source", "distractor",
                                                                           "kind", "context")}
                | {"pages": [page_id(str(p["doc"]), int(p["page"])) for p in shown.get("pages", [])]}}

    def toggle_image(self, msg: dict[str, Any]) -> None:
        self.image = not self.image

    def find(self, msg: dict[str, Any]) -> None:
        """Search the corpus outside the pool (any arm; the first pooled arm unless told) and walk the pages
        found: a grade given there records ``found_by``, and the cursor goes to the next page found."""
        qid = self._need_query("save the query before searching the corpus for it")
        arm, pages = self.session.find(str(msg.get("text", "")), str(msg.get("arm", "")))
        self.session.timer.record("search", qid)
        self.found, self.index = (arm, pages), 0
        self.message = (f"{len(pages)} page(s) found by {arm} outside the pool: grade them as any page; Esc: back "
                        "to the pool" if pages else f"{arm} finds nothing for that")

    def unfind(self, msg: dict[str, Any]) -> None:
        """Back from a search's pages to the pool, at its first page left to read (the pages graded from the
        search now head the queue)."""
        if self.found is not None:
            self.found = None
            self.index = self._first_unjudged()

    def toggle_whole(self, msg: dict[str, Any]) -> None:
        """The whole page, one key away from its passages, and back."""
        self.display = "passage" if self.display == "page" else "page"

    def toggle_rubric(self, msg: dict[str, Any]) -> None:
        self.rubric = not self.rubric

    def _open(self, qid: str | None) -> None:
        self.qid, self.found = qid, None
        self.index, self.before, self.image = self._first_unjudged(), self.session.before(qid) if qid else [], False

    def _need_query(self, why: str) -> str:
        if self.qid is None:
            raise JudgingError(why)
        if self.qid not in self.session.ids():
            raise JudgingError(f"{self.session.path}: query {self.qid!r} is no longer in the file (changed on "
                               "disk): nothing written")
        return self.qid

    def _shown_item(self, qid: str) -> judging.Item | None:
        """The page the view shows, where the file (maybe edited since) now puts it; refused when the file
        no longer has it for the query, so that a key never lands on a page the assessor did not see."""
        if self.shown is not None:
            at = next((i for i, item in enumerate(self._pages()) if item.id == self.shown), None)
            if at is None:
                raise JudgingError(f"{self.session.path}: {self.shown} is no longer a page of query {qid!r} (the "
                                   "file changed on disk): nothing written")
            self.index = at
        return self._item()

    def _need_item(self) -> tuple[str, judging.Item]:
        qid = self._need_query("no page to judge here: write a query first")
        item = self._shown_item(qid)
        if item is None:
            raise JudgingError("no page to judge here: pool the query first (p)")
        return qid, item

    def _timed(self, action: str, qid: str, item: judging.Item, found_by: str = "") -> None:
        """Log the person's seconds on a page action just done, with what they were shown of the page."""
        self.session.timer.record(action, qid, item.doc, item.page, self.shows, found_by=found_by, words=self.words)

    def _advance(self, qid: str) -> None:
        if self.found is not None:  # the next page the search found
            self.index = min(self.index + 1, len(self.found[1]) - 1)
            return
        queue = self.session.queue(qid)
        nxt = next((i for i in range(self.index + 1, len(queue)) if queue[i].todo), None)
        self.index = nxt if nxt is not None else self._first_unjudged() if any(i.todo for i in queue) else self.index
        self.image = False

    def close(self) -> None:
        self.session.close()
        super().close()


def _previous(judgment: Any) -> str:
    """A page's grade under an earlier wording, as the view shows it once the page is graded again."""
    prev = judgment.get("previous") if judgment is not None else None
    return f"{prev.get('gain')} under {str(prev.get('text', ''))!r}" if isinstance(prev, dict) else ""


ACTIONS: dict[str, Callable[[Workbench, dict[str, Any]], None]] = {
    "grade": Workbench.grade, "evidence": Workbench.evidence, "note": Workbench.note, "skip": Workbench.skip,
    "undo": Workbench.undo, "move": Workbench.move, "query": Workbench.query, "write": Workbench.write,
    "new": Workbench.new, "pool": Workbench.pool, "draft": Workbench.draft, "image": Workbench.toggle_image,
    "rubric": Workbench.toggle_rubric, "whole": Workbench.toggle_whole,
    "find": Workbench.find, "unfind": Workbench.unfind, "draft_accept": Workbench.draft_accept,
    "draft_reject": Workbench.draft_reject, "draft_class": Workbench.draft_class,
}


def judge(path: str | Path, corpus: OpenCorpus | None = None, arms: Sequence[Any] = judging.DEFAULT_ARMS,
          strategy: str = judging.DEFAULT_STRATEGY, drafts: str | Path = Path("qrels") / "drafts", *,
          results: str | Path | None = None, baseline_arm: str | None = None, candidate_arm: str | None = None,
          predictions: str | Path | None = None, rules: str | Path | None = None,
          docs: OpenCorpus | None = None) -> Workbench:
    """Open the judging workbench on a query file (created when missing) over an opened corpus; see
    :mod:`evalkit.judging`. A workbench this kernel already has open on the file is closed first (the cell run
    again replaces it); one in another process is refused. With ``results`` (a run on this query file),
    ``baseline_arm`` and ``candidate_arm`` (two of its arms): the local judge's agreement and, after each grade, what
    the gate (``rules``, default as ``evalkit gate``'s) can say now and what to grade next, from the judge's
    ``predictions`` (default ``RESULTS/judge/predictions.parquet``, written by ``evalkit qrels judge``).
    ``docs=``: the corpus's old keyword, for one release."""
    if docs is not None:
        import warnings

        warnings.warn("ek.judge(path, docs=CORPUS) is deprecated and goes in the next release: pass the opened "
                      "corpus as ek.judge(path, corpus=...) (docs= is a folder of PDFs, as in ek.corpus)",
                      DeprecationWarning, stacklevel=2)
        corpus = docs
    if corpus is None:
        raise TypeError("ek.judge needs the opened corpus: ek.judge(path, ek.corpus(...))")
    # refused before the file is locked
    near = judging_gate.beside(results, baseline_arm, candidate_arm, predictions, rules)
    return Workbench(Session(path, corpus, arms, strategy, replace=True), drafts, near)

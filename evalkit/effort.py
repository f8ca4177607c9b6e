"""A person's judging time: the workbench's time log beside a query file, read and summed per unit of work.

The log ``.<file>.time`` (``qrels/.mine.toml.time`` beside ``qrels/mine.toml``) holds one JSON object per
line, appended as each action ends, never written into the query file:

``{"t": "2026-12-02T03:50:12Z", "action": "grade", "query": "n1", "doc": "a.pdf", "page": 3,
"display": "passage", "seconds": 14.2}``

- ``t``: when the action ended, ISO 8601 with a time zone;
- ``action``: one of :data:`ACTIONS`;
- ``query``: the query's id (a rejected draft's: the id it would have had);
- ``doc``, ``page`` (1-based, physical), ``display`` (``passage`` or ``page``: what the person was shown):
  required for the page actions (:data:`PAGE_ACTIONS`), else absent or null;
- ``seconds``: the person's seconds on this action (from the previous action's end, pauses capped by the
  writer), a finite number >= 0;
- ``class`` (optional): the query's class, for a query not in the file (a rejected draft).

:func:`effort` sums the seconds into person-seconds per query written, per draft accepted (rejected drafts'
time included: it is what an accepted one costs) and per page graded (grades, evidence, notes, skips and
searches outside the pool), overall, by class, and for pages by display. A log cut short by a killed kernel
(an unfinished last line) is read up to that line, which the summary names.

:func:`reading_model` turns pages into person-hours for plans and replays: the words the passage display
shows read at :data:`WORDS_PER_MINUTE`, plus the median *decision* time of a graded page in the log: the
seconds it cost less the reading of the words it showed (``words``, recorded by the workbench), so reading is
counted once (no log, no decision time: never a made-up default).
"""
from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .qrels import QrelsError
from .text import PASSAGE_WORDS, PASSAGES

PAGE_ACTIONS = ("grade", "evidence", "note", "skip")
ACTIONS = ("query", "draft-accept", "draft-reject", *PAGE_ACTIONS, "search", "undo")
DISPLAYS = ("passage", "page")
# unit of work -> (the actions whose seconds it costs, the action that completes one unit)
UNITS = {"query written": (("query",), "query"),
         "draft accepted": (("draft-accept", "draft-reject"), "draft-accept"),
         "page graded": ((*PAGE_ACTIONS, "search"), "grade")}
NOT_IN_FILE = "(not in the file)"
WORDS_PER_MINUTE = 250  # a reader's pace on prose, the figure the reading model names


def log_path(query_file: Path) -> Path:
    """Where the workbench keeps a query file's time log: ``.<name>.time`` beside it."""
    return query_file.parent / f".{query_file.name}.time"


@dataclass(frozen=True)
class Action:
    """One line of the time log."""

    t: datetime
    action: str
    query: str
    seconds: float
    doc: str | None = None
    page: int | None = None
    display: str | None = None
    cls: str | None = None
    words: int | None = None  # words on screen when the action ended (page actions; older logs lack it)

    @property
    def unit(self) -> tuple[str, str | None, int | None]:
        """What the action worked on: a query, or one page of it."""
        return self.query, self.doc, self.page


@dataclass(frozen=True)
class Log:
    """A time log as read: its actions, and whether an unfinished last line was left out."""

    path: Path
    actions: tuple[Action, ...]
    unfinished: bool = False


def _field(where: str, d: dict, key: str, kind: type | tuple[type, ...], optional: bool = False):
    value = d.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise QrelsError(f"{where}: field {key!r} is {value!r}, want a {getattr(kind, '__name__', 'number')}")
    return value


def parse(line: str, where: str) -> Action:
    """One log line as an :class:`Action`; QrelsError naming ``where`` (file:line) and the field."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise QrelsError(f"{where}: not a JSON object: {e.msg}") from None
    if not isinstance(d, dict):
        raise QrelsError(f"{where}: not a JSON object")
    action = _field(where, d, "action", str)
    if action not in ACTIONS:
        raise QrelsError(f"{where}: field 'action' is {action!r}, want one of {', '.join(ACTIONS)}")
    seconds = float(_field(where, d, "seconds", (int, float)))
    if not math.isfinite(seconds) or seconds < 0:
        raise QrelsError(f"{where}: field 'seconds' is {seconds!r}, want a finite number >= 0")
    try:
        t = datetime.fromisoformat(_field(where, d, "t", str))
    except ValueError:
        raise QrelsError(f"{where}: field 't' is {d['t']!r}, want an ISO 8601 time") from None
    if t.tzinfo is None:
        raise QrelsError(f"{where}: field 't' is {d['t']!r}, want a time zone (…Z or …+00:00)")
    on_page = action in PAGE_ACTIONS
    page = _field(where, d, "page", int, optional=not on_page)
    display = _field(where, d, "display", str, optional=not on_page)
    if page is not None and page < 1:
        raise QrelsError(f"{where}: field 'page' is {page}, want a page number from 1")
    if display is not None and display not in DISPLAYS:
        raise QrelsError(f"{where}: field 'display' is {display!r}, want {' or '.join(DISPLAYS)}")
    words = _field(where, d, "words", int, optional=True)
    if words is not None and words < 0:
        raise QrelsError(f"{where}: field 'words' is {words}, want a number of words >= 0")
    return Action(t, action, _field(where, d, "query", str), seconds, _field(where, d, "doc", str, not on_page),
                  page, display, _field(where, d, "class", str, optional=True), words)


def read(path: Path) -> Log:
    """The log at ``path``; a last line without its newline that does not parse (the writer was killed
    mid-line) is left out and flagged, any other bad line raises QrelsError naming its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QrelsError(f"{path}: no time log (the judging workbench writes it beside the query file as a "
                         "person judges)") from None
    lines = text.split("\n")
    actions, unfinished = [], False
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            actions.append(parse(line, f"{path}:{n}"))
        except QrelsError:
            if n < len(lines):  # a complete line: bad data, said as such
                raise
            unfinished = True
    return Log(path, tuple(actions), unfinished)


@dataclass(frozen=True)
class Row:
    """Person-seconds on one unit of work for one group (all, a class, a display)."""

    unit: str
    by: str  # "all", "class" or "display"
    group: str
    n: int
    seconds: float

    @property
    def per_unit(self) -> float:
        return self.seconds / self.n if self.n else math.nan


def _rows(unit: str, by: str, actions: list[Action], key) -> list[Row]:
    """One row per group of ``key`` over the actions of ``unit``: its seconds, and the units it completed."""
    spent, done = UNITS[unit]
    groups = dict.fromkeys(key(a) for a in actions if a.action in spent)
    out = []
    for g in groups:
        mine = [a for a in actions if a.action in spent and key(a) == g]
        finished = {a.unit if unit == "page graded" else a.query for a in mine if a.action == done}
        out.append(Row(unit, by, str(g), len(finished), sum(a.seconds for a in mine)))
    return sorted(out, key=lambda r: r.group)


def effort(actions: Iterable[Action], classes: Mapping[str, str]) -> list[Row]:
    """Person-seconds per unit of work, overall, by class (``classes``: query id -> class, from the query
    file; an action's own ``class`` for a query not in it), and for pages by display."""
    acts = list(actions)
    def cls(a: Action) -> str:
        return classes.get(a.query) or a.cls or NOT_IN_FILE

    rows = []
    for unit in UNITS:
        rows += _rows(unit, "all", acts, lambda a: "all") + _rows(unit, "class", acts, cls)
        if unit == "page graded":
            rows += _rows(unit, "display", acts, lambda a: a.display or "(none)")
    return [r for r in rows if r.seconds or r.n]


def table(log: Log, rows: list[Row]) -> str:
    """The terminal summary: the log's span and total, then one line per row."""
    total = sum(a.seconds for a in log.actions)
    span = (f", {min(a.t for a in log.actions):%Y-%m-%d %H:%M %Z} to {max(a.t for a in log.actions):%Y-%m-%d %H:%M %Z}"
            if log.actions else "")
    lines = [f"time log {log.path}: {len(log.actions)} actions{span}; {total:.0f} person-seconds "
             f"({total / 3600:.2f} person-hours)" + ("; an unfinished last line left out" if log.unfinished else ""),
             f"{'unit':<15} {'by':<8} {'group':<18} {'n':>5} {'person-s':>9} {'s/unit':>7}"]
    lines += [f"{r.unit:<15} {r.by:<8} {r.group:<18} {r.n:>5} {r.seconds:>9.0f} {r.per_unit:>7.1f}" for r in rows]
    return "\n".join(lines)


def beside(query_file: Path) -> Log | None:
    """The query file's time log as read, None while the workbench has written none."""
    path = log_path(query_file)
    return read(path) if path.exists() else None


@dataclass(frozen=True)
class ReadingModel:
    """What one page costs a person: ``words`` shown read at ``wpm``, plus ``decision`` seconds (None:
    not measured, reading alone) and where that figure came from."""

    words: int
    wpm: int
    decision: float | None
    source: str

    @property
    def seconds_per_page(self) -> float:
        return self.words / self.wpm * 60 + (self.decision or 0.0)

    def hours(self, pages: float) -> float:
        return pages * self.seconds_per_page / 3600

    @property
    def statement(self) -> str:
        """The model in one line, to print beside the hours it gives."""
        decided = f" + median decision {self.decision:.1f} s" if self.decision is not None else ""
        return (f"person-hours: {self.words} words shown per page at {self.wpm} words/min{decided} "
                f"({self.source}; {self.seconds_per_page:.1f} s per page)")


def reading_model(log: Log | None) -> ReadingModel:
    """The reading model of person-hours: the passage display's words (PASSAGES windows of PASSAGE_WORDS; a
    shorter page shows fewer, so this is the most read) at WORDS_PER_MINUTE, plus the median decision time
    of a graded page in ``log``: the person-seconds its grades, evidence, notes and skips cost, less the
    reading of the most words it showed (``words``; a line without them, from an older log, is taken to have
    shown the passage display's words), never below 0. Without a log or a grade in it, no decision time,
    and the statement says so."""
    words = PASSAGE_WORDS * PASSAGES
    spent: dict[tuple, float] = {}
    shown: dict[tuple, int] = {}
    graded = set()
    for a in log.actions if log else ():
        if a.action in PAGE_ACTIONS:
            spent[a.unit] = spent.get(a.unit, 0.0) + a.seconds
            shown[a.unit] = max(shown.get(a.unit, 0), words if a.words is None else a.words)
            graded |= {a.unit} if a.action == "grade" else set()
    if log is None or not graded:
        source = f"no grade in {log.path.name} yet" if log else "no time log yet"
        return ReadingModel(words, WORDS_PER_MINUTE, None, f"reading alone; {source}")
    decisions = [max(spent[u] - shown[u] / WORDS_PER_MINUTE * 60, 0.0) for u in graded]
    return ReadingModel(words, WORDS_PER_MINUTE, statistics.median(decisions),
                        f"measured over {len(graded)} graded pages in {log.path.name}, less their reading")

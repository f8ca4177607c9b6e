"""The workbench's side of the time log: how long the person took over each action, appended beside the
query file (never in it) in the format :mod:`evalkit.effort` reads.

Measured in the kernel, not the browser: the clock starts when the workbench sends the view a new item
to show (another page, another query, a draft, a search's page) and stops when the action's key arrives;
the few milliseconds the browser takes to draw are in both ends alike. An action's seconds run from the
later of that start and the previous action's end, so nothing is counted twice. A stretch longer than
:data:`BREAK` (ten minutes) is a break, not work: the action is given :data:`BREAK` seconds, the rest
is not counted. The clock is injectable (``clock``: seconds since the epoch), so tests never depend on speed.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from .effort import ACTIONS, log_path

BREAK = 600.0  # seconds: a longer stretch without a key is a break, counted as this much work at most


class Timer:
    """The time log of one query file: :meth:`shown` when the person is shown something new to act on,
    :meth:`record` when an action of theirs ends."""

    def __init__(self, query_file: Path, clock: Callable[[], float] = time.time):
        self.path, self.clock = log_path(query_file), clock
        self.since = clock()

    def shown(self) -> None:
        """Something new is on screen: the next action's seconds start now."""
        self.since = self.clock()

    def record(self, action: str, query: str, doc: str | None = None, page: int | None = None,
               display: str | None = None, cls: str | None = None, **extra: object) -> dict[str, object]:
        """Append one line for an action that just ended; returns it. The line is written whole, in one
        ``write`` to a file opened for appending, so a kill leaves at most an unfinished last line (which
        :func:`evalkit.effort.read` leaves out). ``cls``: the class of a query not in the file (a rejected
        draft); ``extra`` fields are written as given: ``edited`` and ``found_by`` for the record, ``words``
        (what a page action showed) for effort's reading model."""
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        now = self.clock()
        seconds = round(min(max(now - self.since, 0.0), BREAK), 3)
        self.since = now
        line: dict[str, object] = {"t": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
                                   "action": action, "query": query}
        line.update({k: v for k, v in (("doc", doc), ("page", page), ("display", display), ("class", cls))
                     if v is not None})
        line.update({k: v for k, v in extra.items() if v not in (None, "")})
        line["seconds"] = seconds
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        return line

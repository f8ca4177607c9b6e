"""The workbench's time log as written: seconds from what was shown to the key, breaks capped, lines that
:mod:`evalkit.effort` reads back; a fake clock, so no test depends on speed."""
from __future__ import annotations

import json

import pytest

from evalkit import effort
from evalkit.judging_time import BREAK, Timer


class Clock:
    """Seconds since the epoch, moved by hand."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def test_seconds_run_from_what_was_shown_or_the_last_action_and_a_break_is_capped(tmp_path):
    clock = Clock()
    timer = Timer(tmp_path / "mine.toml", clock)
    clock.tick(30)
    timer.shown()  # a new page: the 30 s before it are not its
    clock.tick(12.5)
    timer.record("grade", "q1", "a.pdf", 3, "passage")
    clock.tick(4)
    timer.record("evidence", "q1", "a.pdf", 3, "page")
    clock.tick(3 * BREAK)  # lunch
    timer.record("skip", "q1", "b.pdf", 1, "passage")
    timer.record("draft-reject", "n9", cls="needle")
    log = effort.read(tmp_path / ".mine.toml.time")
    assert [(a.action, a.seconds, a.display) for a in log.actions] == [
        ("grade", 12.5, "passage"), ("evidence", 4.0, "page"), ("skip", BREAK, "passage"), ("draft-reject", 0.0, None)]
    assert log.actions[-1].cls == "needle" and log.actions[0].t.tzinfo is not None
    assert not (tmp_path / "mine.toml").exists()  # beside the file, never in it


def test_an_unknown_action_is_refused_and_nothing_written(tmp_path):
    timer = Timer(tmp_path / "mine.toml", Clock())
    with pytest.raises(ValueError, match="unknown action 'read'"):
        timer.record("read", "q1")
    assert not (tmp_path / ".mine.toml.time").exists()


def test_a_line_is_json_with_the_fields_effort_documents(tmp_path):
    clock = Clock()
    timer = Timer(tmp_path / "mine.toml", clock)
    clock.tick(2)
    line = timer.record("grade", "q1", "a.pdf", 3, "page", found_by="search:keyword")
    assert json.loads((tmp_path / ".mine.toml.time").read_text()) == line
    assert line["t"] == "2027-01-15T08:00:02+00:00" and line["seconds"] == 2.0

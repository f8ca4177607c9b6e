"""The undo journal on its own: patches restore byte for byte, it stays bounded, and it never throws away
an edit made after the action it would undo."""
from __future__ import annotations

import pytest

from evalkit import undo
from evalkit.undo import Journal, UndoError, apply_patch, reverse_patch

TEXTS = ["", "a\n", "a\nb\nc\n", "a\nB\nc\nd", "x = 1\r\ny = 2\r\n", "no newline at end", "a\nb\nc\n" * 3]


@pytest.mark.parametrize("before", TEXTS)
@pytest.mark.parametrize("after", TEXTS)
def test_a_patch_turns_after_back_into_before(before, after):
    assert apply_patch(after, reverse_patch(before, after)) == before


def test_a_patch_is_the_lines_that_changed_not_a_copy():
    before = "".join(f"line {i}\n" for i in range(5000))
    after = before.replace("line 2500\n", "line 2500 graded\n")
    assert reverse_patch(before, after) == [(2500, 2501, "line 2500\n")]


def test_undo_walks_back_then_says_there_is_nothing_and_removes_the_journal(tmp_path):
    f = tmp_path / "q.toml"
    j = Journal(f)
    texts = ["a\n", "a\nb\n", "a\nB\n", "z\n"]
    f.write_text(texts[0])
    for before, after in zip(texts, texts[1:], strict=False):
        f.write_text(after)
        j.record(before, after)
    assert undo.journal_path(f).name == ".q.toml.undo" and len(j) == 3
    for expected in reversed(texts[:-1]):
        assert Journal(f).undo() and f.read_text() == expected  # a new journal object: read from disk
    assert not Journal(f).undo() and not undo.journal_path(f).exists()


def test_an_edit_by_hand_since_the_last_action_is_kept(tmp_path):
    f = tmp_path / "q.toml"
    f.write_text("a\n")
    f.write_text("a\nb\n")
    Journal(f).record("a\n", "a\nb\n")
    f.write_text("a\nb\n# my note\n")
    with pytest.raises(UndoError, match="q.toml changed since"):
        Journal(f).undo()
    assert f.read_text() == "a\nb\n# my note\n"


def test_a_crash_between_the_file_and_the_journal_undoes_nothing_twice(tmp_path):
    f = tmp_path / "q.toml"
    j = Journal(f)
    for before, after in (("", "a\n"), ("a\n", "a\nb\n")):
        f.write_text(after)
        j.record(before, after)
    f.write_text("a\n")  # the file restored, the journal not yet shortened
    assert j.undo() and f.read_text() == ""


def test_the_journal_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(undo, "LIMIT", 3)
    f = tmp_path / "q.toml"
    j = Journal(f)
    for i in range(6):
        f.write_text(f"{i + 1}\n")
        j.record(f"{i}\n", f"{i + 1}\n")
    assert len(j) == 3
    while j.undo():
        pass
    assert f.read_text() == "3\n"


def test_an_entry_whose_file_never_came_is_dropped_by_the_next_action_and_by_undo(tmp_path):
    f = tmp_path / "q.toml"
    j = Journal(f)
    f.write_text("a\n")
    j.record("a\n", "a\nb\n")  # the intent, written first; the process is killed before the file
    j.record("a\n", "a\nc\n")  # the next action: the entry that never landed is dropped
    f.write_text("a\nc\n")
    assert len(j) == 1
    j.record("a\nc\n", "a\nc\nd\n")  # killed again before the file: undo drops it and undoes the one before
    assert j.undo() and f.read_text() == "a\n" and not undo.journal_path(f).exists()


@pytest.mark.parametrize("broken", ["folder", "latin-1"])
def test_an_unreadable_journal_is_one_clear_line(tmp_path, broken):
    f = tmp_path / "q.toml"
    f.write_text("a\n")
    if broken == "folder":
        undo.journal_path(f).mkdir()
    else:
        undo.journal_path(f).write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(UndoError, match=r"\.q\.toml\.undo: the undo journal cannot be read \((a folder|not UTF-8)\)"):
        Journal(f).record("a\n", "b\n")


def test_an_undo_whose_journal_cannot_be_shortened_is_done_and_not_done_twice(tmp_path, monkeypatch):
    f = tmp_path / "q.toml"
    j = Journal(f)
    for before, after in (("", "a\n"), ("a\n", "a\nb\n")):
        j.record(before, after)
        f.write_text(after)
    real = undo.write_atomic

    def full_disk(path, text):
        if path == undo.journal_path(f):
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(undo, "write_atomic", full_disk)
    assert j.undo() and f.read_text() == "a\n"  # the file is back: reported done
    monkeypatch.undo()
    assert j.undo() and f.read_text() == ""  # the next undo knows the first was done

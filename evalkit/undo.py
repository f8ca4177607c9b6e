"""The workbench's undo history, kept on disk beside the query file so that it survives a kernel restart.

The journal ``.<file>.undo`` holds one JSON line per action: the line-level patch that turns the file as
the action left it back into the file before it, with the sha256 of both. A patch, not a copy: a grade in
a 500 kB query file is a few lines. Undo applies the last patch only while the file is still byte for byte
what that action wrote, so an edit made by hand in between is never thrown away; the journal keeps the
last :data:`LIMIT` actions and is removed when nothing is left to undo.

An action's entry is written *before* the file (an intent), and undo writes the file before shortening
the journal, so a kill at any point leaves entries whose digests tell what happened: an entry whose file
never came (the file is still its ``before``) is dropped, by undo and by the next :meth:`Journal.record`.
"""
from __future__ import annotations

import hashlib
import json
from difflib import SequenceMatcher
from pathlib import Path

from .atomic import write_atomic

LIMIT = 200  # actions kept; older ones cannot be undone
Patch = list[tuple[int, int, str]]


class UndoError(Exception):
    """Undo refused (the file is no longer what the last action wrote), or the journal unreadable."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reverse_patch(before: str, after: str) -> Patch:
    """The line ranges of ``after`` to replace, and by what, to get ``before`` back."""
    a, b = after.splitlines(keepends=True), before.splitlines(keepends=True)
    head = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    tail = next((i for i, (x, y) in enumerate(zip(reversed(a[head:]), reversed(b[head:]), strict=False)) if x != y),
                min(len(a), len(b)) - head)  # lines alike at both ends are left out of the (slow) matcher
    a, b = a[head:len(a) - tail], b[head:len(b) - tail]
    return [(head + i1, head + i2, "".join(b[j1:j2])) for tag, i1, i2, j1, j2 in
            SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if tag != "equal"]


def apply_patch(after: str, patch: Patch) -> str:
    lines = after.splitlines(keepends=True)
    for i1, i2, text in reversed(patch):  # from the end, so earlier line numbers still hold
        lines[i1:i2] = [text]
    return "".join(lines)


def journal_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.undo")


class Journal:
    """The undo history of the query file ``path``, on disk."""

    def __init__(self, path: Path):
        self.path, self.file = path, journal_path(path)

    def _entries(self) -> list[dict]:
        try:
            lines = self.file.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as e:
            why = "a folder" if self.file.is_dir() else "not UTF-8" if isinstance(e, UnicodeDecodeError) else e.strerror
            raise UndoError(f"{self.file}: the undo journal cannot be read ({why}): move it away to go on "
                            "(undo then starts from the next action); nothing written") from None
        entries = []
        for line in lines:  # a line that does not parse (a file damaged by hand) cannot be undone: left out
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if _well_formed(entry):
                entries.append(entry)
        return entries

    def _write(self, entries: list[dict]) -> None:
        if entries:
            write_atomic(self.file, "".join(json.dumps(e) + "\n" for e in entries[-LIMIT:]))
        else:
            self.file.unlink(missing_ok=True)

    def record(self, before: str, after: str) -> None:
        """Note an action about to replace ``before`` (the file now) by ``after``: call it before writing
        the file. Entries of earlier actions whose file never came are dropped first."""
        entries = _landed(self._entries(), digest(before))
        entry = {"before": digest(before), "after": digest(after), "patch": reverse_patch(before, after)}
        self._write([*entries, entry])

    def __len__(self) -> int:
        return len(self._entries())

    def undo(self) -> bool:
        """Put the file back as it was before the last action; False when there is none."""
        entries = self._entries()
        if not entries:
            return False
        now = self.path.read_bytes().decode("utf-8")  # line ends as they are
        entries = _landed(entries, digest(now))
        if not entries:
            self._write([])
            return False
        if digest(now) != entries[-1]["after"]:
            raise UndoError(f"{self.path} changed since the workbench's last action (edited by hand?): "
                            f"nothing undone, so that change is kept")
        write_atomic(self.path, apply_patch(now, entries[-1]["patch"]))
        try:
            self._write(entries[:-1])
        except OSError:  # the file is back: its digest tells the next undo that this entry is done
            pass
        return True


def _landed(entries: list[dict], now: str) -> list[dict]:
    """``entries`` without the last ones whose file never came, or was undone already (a kill between the
    journal's write and the file's): the file ``now`` is still what they started from."""
    while entries and entries[-1]["before"] == now != entries[-1]["after"]:
        entries = entries[:-1]
    return entries


def _well_formed(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("before"), str) and isinstance(entry.get("after"), str)
            and isinstance(entry.get("patch"), list)
            and all(isinstance(p, list) and len(p) == 3 and isinstance(p[0], int) and isinstance(p[1], int)
                    and isinstance(p[2], str) for p in entry["patch"]))

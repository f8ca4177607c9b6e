"""Atomic writes: the old text or the new, and no temporary file left behind by a process killed mid-write."""
import os
import subprocess
import sys

from evalkit.atomic import sweep, write_atomic

# A real write_atomic in a child process, killed (os._exit: no cleanup runs) between the flushed temporary
# file and the rename, as a kernel killed mid-write is.
KILLED = """
import os, sys
from pathlib import Path
from evalkit import atomic
os.replace = lambda *a: os._exit(9)
atomic.write_atomic(Path(sys.argv[1]), "half-way")
"""


def test_a_write_killed_before_its_rename_leaves_the_old_text_and_the_next_write_removes_its_temp(tmp_path):
    target = tmp_path / "mine.toml"
    write_atomic(target, "old")
    child = subprocess.run([sys.executable, "-c", KILLED, str(target)], env={**os.environ})
    assert child.returncode == 9 and target.read_text() == "old"
    left = [p.name for p in tmp_path.iterdir() if p != target]
    assert len(left) == 1 and left[0].startswith(".mine.toml.") and left[0].endswith(".tmp")  # hidden, .gitignored
    mine = tmp_path / f".mine.toml.{os.getpid()}.x.tmp"  # a write of a live process (this one) is under way
    mine.write_text("")
    other = tmp_path / ".other.toml.999999999.x.tmp"  # another file's: not this write's business
    other.write_text("")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, other.name, "mine.toml"])
    assert sweep(tmp_path / "other.toml") == [other] and not other.exists()

"""Atomic writes: the old text or the new, and no temporary file left behind by a process killed mid-write."""
import os
import subprocess
import sys

import pytest

from evalkit.atomic import replacing, sweep, write_atomic

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


def test_a_failed_replacement_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("stopped")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_every_write_is_flushed_to_disk_before_its_rename_and_named_so_the_sweep_finds_it(tmp_path, monkeypatch):
    """Text, bytes and a file a library writes itself all go through one temporary file: fsynced, then renamed."""
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(f"replace {a}"), real_replace(a, b)))
    write_atomic(tmp_path / "t.toml", "é\r\n")
    write_atomic(tmp_path / "b.bin", b"\x00\xff")
    with replacing(tmp_path / "c.parquet") as tmp:
        with open(tmp, "wb") as f:  # as pandas' to_parquet or shutil.copyfile write it
            f.write(b"PAR1")
    assert (tmp_path / "t.toml").read_bytes() == "é\r\n".encode() and (tmp_path / "b.bin").read_bytes() == b"\x00\xff"
    assert (tmp_path / "c.parquet").read_bytes() == b"PAR1" and len(calls) == 6
    for synced, renamed in zip(calls[::2], calls[1::2], strict=True):
        name = os.path.basename(synced)
        assert renamed == f"replace {synced}" and name.startswith(".") and f".{os.getpid()}." in name
        assert name.endswith(".tmp")  # what sweep() and resultsdir.foreign() recognise
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.bin", "c.parquet", "t.toml"]

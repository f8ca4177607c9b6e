"""Writing a file so that a reader, or a crash, sees the old text or the new one, never half of it; and
holding a folder while a file in it is read, changed and written, so two writers at once keep both changes.

The temporary file is ``.<name>.<pid>.<random>.tmp`` beside the target: hidden, ignored by ``.gitignore``,
matched by no reader's ``*.toml``, and named by the process writing it, so the next write of the same file
removes what a killed process (a kernel killed mid-write) left, and never a write still under way.
"""
from __future__ import annotations

import fcntl
import glob
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SUFFIX = ".tmp"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (a temporary file beside it, flushed to disk, then ``os.replace``)."""
    sweep(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sweep(path: Path) -> list[Path]:
    """Remove the temporary files of earlier writes of ``path`` whose process is gone; returns them."""
    gone = []
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*{SUFFIX}"):
        pid = tmp.name[len(path.name) + 2:].partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)
            gone.append(tmp)
    return gone


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: it may be writing)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (ProcessLookupError, OverflowError):
        return False
    return True

@contextmanager
def holding(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` itself while the block runs (a file replaced by
    :func:`write_atomic` is a new file each time, so the lock is the folder's; no lock file is left beside
    the user's files). Another process's block waits; the kernel drops the lock if this one dies."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock

"""Writing a file so that a reader, or a crash, sees the old text or the new one, never half of it; and
holding a folder while a file in it is read, changed and written, so two writers at once keep both changes."""
from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (a temporary file beside it, flushed to disk, then ``os.replace``)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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

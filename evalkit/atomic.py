"""Writing a file so that a reader, or a crash, sees the old contents or the new ones, never half of them;
and holding a folder while a file in it is read, changed and written, so two writers at once keep both changes.

Every file evalkit replaces goes through :func:`replacing` (text and bytes through :func:`write_atomic`): a
temporary file ``.<name>.<pid>.<random>.tmp`` beside the target, flushed to disk (``fsync``) and then renamed
onto it, and removed on any failure (a full disk, Ctrl-C), so no half-written file is left. The name is hidden,
ignored by ``.gitignore``, matched by no reader's ``*.toml`` and carries the writing process, so the next write
of the same file removes what a killed process (a kernel killed mid-write) left, and never a write still under way.
"""
from __future__ import annotations

import fcntl
import glob
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .oserrors import naming

SUFFIX = ".tmp"


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A new, empty temporary file beside ``path`` for the block to write (a copy, a parquet file, a download),
    flushed to disk and renamed onto ``path`` when the block succeeds, removed when it fails. An error that
    names no file, or that a full disk caused, names ``path``."""
    path = Path(path)
    sweep(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{SUFFIX}")
    try:
        with naming(path):
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask's mode, as open()'s
            yield tmp
            fd = os.open(tmp, os.O_RDONLY)  # whatever wrote it (a library's own open), it is on disk before the rename
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
    finally:
        with suppress(OSError):  # absent once renamed; a read-only folder refuses even that it is absent
            tmp.unlink()


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8, its line endings as given)."""
    with replacing(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(data)


def temporary(name: str) -> bool:
    """Whether the file name ``name`` is one of :func:`replacing`'s temporary files (a reader skips it)."""
    return name.startswith(".") and name.endswith(SUFFIX)


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
    :func:`replacing` is a new file each time, so the lock is the folder's; no lock file is left beside
    the user's files). Another process's block waits; the kernel drops the lock if this one dies."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock

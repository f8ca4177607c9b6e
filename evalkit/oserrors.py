"""What went wrong with a file, in one line that names it and the real cause.

An error from ``write()`` carries no file name (``[Errno 28] No space left on device``), and an input/output
error on a full disk does not say the disk is full. :func:`naming` puts the path on such an error where the
path is known, and :func:`describe` is the one line every command prints. (Writing a file so that a failure
leaves no half of it is :mod:`evalkit.atomic`'s.)
"""
from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FULL_BYTES = 1 << 20  # free space under which a disk is called full (SQLite and a write both need more)

CAUSES = {  # errno -> the cause said in words a user acts on (strerror says it less plainly)
    errno.ENOSPC: "no space left on device (the disk is full: free some space, or write to another disk)",
    errno.EDQUOT: "disk quota exceeded (free some space, or write to another disk)",
    errno.EFBIG: "file too large (over this process's or the file system's file size limit)",
    errno.EROFS: "read-only file system (write to another folder)",
}


def _existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (the disk a file would be written to)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def disk_full(path: Path | str) -> bool:
    """Whether the disk holding ``path`` (or the folder it would be created in) has under 1 MiB free."""
    try:
        return shutil.disk_usage(_existing(Path(path))).free < FULL_BYTES
    except OSError:
        return False


def describe(error: OSError, path: Path | str | None = None) -> str:
    """``PATH: cause`` for an OSError (``path`` when the error names none): ENOSPC and its kin in plain
    words, and an input/output error on a disk with no free space called what it is, a full disk."""
    where = error.filename if error.filename is not None else path
    cause = CAUSES.get(error.errno or 0) or error.strerror or str(error)
    if error.errno == errno.EIO and where is not None and disk_full(where):
        cause = f"{CAUSES[errno.ENOSPC]}; the system said: input/output error"
    return f"{where}: {cause}" if where is not None else cause


@contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """Inside the block, an OSError that names no file, or that the disk being written cannot take (a full
    disk: ``shutil.copyfile`` names its source then), names ``path``: the file being written."""
    try:
        yield
    except OSError as e:
        if e.errno is None or (e.filename is not None and e.errno not in CAUSES):
            raise
        raise type(e)(e.errno, e.strerror, str(path)) from e


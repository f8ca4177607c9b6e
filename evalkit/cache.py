"""The cache database is derived data: what went wrong with it is named, with what to do about it.

Everything in it (page texts, FTS5 indexes, vectors) is keyed by content (document sha256, corpus digest,
model key) and is rebuilt from the PDFs by the next command that needs it, so deleting a damaged one loses
nothing but time -- hours, on a large corpus. So deleting is advised only for real damage: a full disk, a
read-only file or folder and a lock held by another process are said to be what they are, and any other
error is checked with ``PRAGMA quick_check`` before the cache is called damaged.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from .oserrors import disk_full


class CacheError(Exception):
    """The cache database cannot be used; the message names its path, what happened and what to do."""


# SQLite's primary result codes that say nothing about the file's health -> what the user can do.
NOT_DAMAGE = {
    "SQLITE_FULL": "the disk holding it is full: free some space (or point --cache or $EVALKIT_CACHE at another "
                   "disk) and run the command again",
    "SQLITE_READONLY": "it cannot be written (a read-only file or folder): make it writable, or point --cache or "
                       "$EVALKIT_CACHE at a writable folder",
    "SQLITE_BUSY": "another process holds its lock (a run or an index build): wait for it to end and run the "
                   "command again",
    "SQLITE_LOCKED": "another connection holds its lock: wait for it to end and run the command again",
    "SQLITE_CANTOPEN": "it cannot be opened (a missing or unwritable folder): check the folder, or point --cache "
                       "or $EVALKIT_CACHE elsewhere",
    "SQLITE_PERM": "the system refused access to it: check its permissions",
}


def rebuild_hint(path: Path) -> str:
    return (f"it holds only derived data: delete it (rm '{path}' '{path}-wal' '{path}-shm') "
            "and run the command again to rebuild it")


def _detail(error: Exception | str) -> str:
    return " ".join(str(error).replace("*", "").split())  # quick_check reports span lines


def damaged(path: Path, error: Exception | str) -> CacheError:
    return CacheError(f"the cache {path} is damaged ({_detail(error)}); {rebuild_hint(path)}")


def _primary(error: Exception) -> str:
    """SQLite's primary result code name (``SQLITE_READONLY`` for ``SQLITE_READONLY_DIRECTORY``)."""
    return "_".join((getattr(error, "sqlite_errorname", None) or "").split("_")[:2])


DAMAGE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def quick_check(path: Path) -> tuple[bool | None, str]:
    """``PRAGMA quick_check`` of ``path`` on a read-only connection of its own: (True, "ok"), (False, what it
    found), or (None, why it could not run)."""
    try:
        db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            found = db.execute("PRAGMA quick_check(1)").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error as e:
        return (False if _primary(e) in DAMAGE else None), _detail(e)
    return found == "ok", _detail(found)


def explain(path: Path, error: Exception) -> CacheError:
    """What an SQLite error on the cache at ``path`` means for the user: a full disk, a read-only place, a
    busy lock, a cache that passes its check (run again), or damage (rebuild)."""
    if (what := NOT_DAMAGE.get(_primary(error))) is not None:
        return CacheError(f"the cache {path} is not damaged, but {what} ({_detail(error)})")
    if _primary(error) == "SQLITE_IOERR" and disk_full(path):  # SQLite says "disk I/O error" for a full disk too
        return CacheError(f"the cache {path} cannot be written: {NOT_DAMAGE['SQLITE_FULL']} ({_detail(error)})")
    healthy, found = quick_check(path)
    if healthy:
        disk = " once the disk has free space and works" if _primary(error) == "SQLITE_IOERR" else ""
        return CacheError(f"the cache {path} failed ({_detail(error)}) but passes PRAGMA quick_check, so it is not "
                          f"damaged: run the command again{disk} (keep it: it holds your extracted pages and vectors)")
    if healthy is None:
        return CacheError(f"the cache {path} failed ({_detail(error)}) and could not be checked ({found}): run the "
                          "command again once nothing else uses it")
    return damaged(path, _detail(error) if found == _detail(error) else f"{_detail(error)}; quick_check: {found}")


def check(db: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` (about 3 ms per MB: it reads every page but checks no index against its
    table); raises :class:`CacheError` naming ``path`` on any problem."""
    try:
        row = db.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as e:
        raise explain(path, e) from None
    if row[0] != "ok":
        raise damaged(path, row[0])

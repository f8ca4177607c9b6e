"""The cache database is derived data: a damaged one is found on open and named with the command that
rebuilds it, instead of surfacing later as SQLite's own "database disk image is malformed".

Everything in it (page texts, FTS5 indexes, vectors) is keyed by content (document sha256, corpus digest,
model key) and is rebuilt from the PDFs by the next command that needs it, so deleting it loses nothing
but time.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path


class CacheError(Exception):
    """The cache database cannot be used; the message names its path and how to rebuild it."""


def rebuild_hint(path: Path) -> str:
    return (f"it holds only derived data: delete it (rm '{path}' '{path}-wal' '{path}-shm') "
            "and run the command again to rebuild it")


def damaged(path: Path, error: Exception | str) -> CacheError:
    detail = " ".join(str(error).replace("*", "").split())  # quick_check reports span lines
    return CacheError(f"the cache {path} is damaged ({detail}); {rebuild_hint(path)}")


def check(db: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` (about 3 ms per MB: it reads every page but checks no index against its
    table); raises :class:`CacheError` naming ``path`` on any problem."""
    try:
        row = db.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as e:
        raise damaged(path, e) from None
    if row[0] != "ok":
        raise damaged(path, row[0])

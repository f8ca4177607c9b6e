"""Identifiers in every format: document names and query ids as TREC files, TSV and page ids carry them.

TREC files are split on white space and page ids on ``#``, so a name such as ``my notes.pdf`` or a query id
``q 1`` would silently shift fields (trec_eval then scores something else than evalkit did). Names are kept
as they are everywhere evalkit reads them (file names, query files, results); where they go into a
white-space or ``#``-delimited format they are percent-encoded, reversibly: white space, control
characters, ``#`` and ``%`` become ``%XX`` of their UTF-8 bytes; everything else (non-ASCII included) is
written as is. Unicode normalization is not changed: ``café`` in NFC and in NFD are different names, as they
are on disk; a folder holding both is refused (:func:`normalization_clashes`).
"""
from __future__ import annotations

import os
import unicodedata
from functools import lru_cache
from urllib.parse import unquote


def _escaped(c: str) -> bool:
    return c in "#%" or c.isspace() or not c.isprintable()


@lru_cache(maxsize=1 << 16)  # a corpus has few names, and every page id of every ranking encodes one
def encode(name: str) -> str:
    """``name`` safe for a white-space and ``#``-delimited field; :func:`decode` gives it back."""
    return "".join("".join(f"%{b:02X}" for b in c.encode()) if _escaped(c) else c for c in name)


@lru_cache(maxsize=1 << 16)
def decode(field: str) -> str:
    return unquote(field, errors="strict")


def normalization_clashes(names: list[str]) -> list[tuple[str, str]]:
    """Pairs of distinct names that are the same text in Unicode NFC (``café`` composed and decomposed):
    a judgment written one way would silently miss the file written the other way."""
    seen: dict[str, str] = {}
    clashes = []
    for n in names:
        key = unicodedata.normalize("NFC", n)
        if key in seen and seen[key] != n:
            clashes.append((seen[key], n))
        seen.setdefault(key, n)
    return clashes


def unsafe(name: object) -> str | None:
    """Why ``name`` (from a lock, a query set, a definition) cannot be a file name inside its folder, or None.
    Names are joined onto folders (the data dir, a corpus folder, the results dir), so ``..``, an absolute
    path or a separator would write or read outside them."""
    if not isinstance(name, str) or not name:
        return "is not a non-empty string"
    if name in (".", ".."):
        return f"is {name!r}, a folder, not a name in it"
    if any(sep and sep in name for sep in (os.sep, os.altsep)):
        return f"holds a path separator ({os.sep}): a name here is one file or folder name"
    if "\0" in name:
        return "holds a NUL character"
    return None

"""Where evalkit keeps corpora, caches and the lock file.

Everything derived lives in one cache directory so it can be deleted and rebuilt; environment variables
override the XDG defaults so tests and CI can point at throw-away folders.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Root for fetched corpora: $EVALKIT_DATA, else $XDG_DATA_HOME/evalkit."""
    if env := os.environ.get("EVALKIT_DATA"):
        return Path(env)
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "evalkit"


def cache_dir() -> Path:
    """Root for the page store, indexes and vectors: $EVALKIT_CACHE, else $XDG_CACHE_HOME/evalkit."""
    if env := os.environ.get("EVALKIT_CACHE"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evalkit"


def lock_path() -> Path:
    """The corpora.lock in use: $EVALKIT_LOCK, else ./corpora.lock, else the one shipped with evalkit."""
    if env := os.environ.get("EVALKIT_LOCK"):
        return Path(env)
    here = Path.cwd() / "corpora.lock"
    return here if here.exists() else REPO_ROOT / "corpora.lock"

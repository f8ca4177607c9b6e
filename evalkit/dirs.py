"""Where evalkit keeps corpora, caches, lock files and the files it ships.

Everything derived lives in one cache directory so it can be deleted and rebuilt; environment variables
override the XDG defaults so tests and CI can point at throw-away folders. Files shipped with evalkit
(``evalkit/data``: the default gate rules, the report notebooks; the corpora lock, which the build copies
there from the repository's top level) are read from the installed package and never written; a user's
own files resolve against the working directory.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


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


def shipped(name: str) -> Path:
    """A file shipped inside the package (``evalkit/data/NAME``): read it, never write it."""
    path = resources.files("evalkit") / "data" / name
    if not isinstance(path, Path):  # wheels install as files; a zipped install would hand out a zip member
        raise RuntimeError(f"evalkit is installed in an archive; its data file {name} needs a folder install")
    return path


def shipped_lock() -> Path:
    """The corpora lock shipped with evalkit: in a checkout (an editable install runs from one) the
    repository's top-level ``corpora.lock``; installed from a wheel, the copy the build put into
    ``evalkit/data`` (setup.py). Read it, never write it."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "corpora.lock").is_file():
        return checkout / "corpora.lock"
    return shipped("corpora.lock")


def lock_paths() -> tuple[Path, ...]:
    """The corpora.lock files read by default, later ones winning on a corpus name: $EVALKIT_LOCK alone,
    else the lock shipped with evalkit (its corpora stay at hand) and ./corpora.lock when there is one
    (in evalkit's own checkout, the shipped lock itself)."""
    if env := os.environ.get("EVALKIT_LOCK"):
        return (Path(env),)
    ours, here = shipped_lock(), Path.cwd() / "corpora.lock"
    return (ours, here) if here.exists() and not here.samefile(ours) else (ours,)


def lock_target() -> Path:
    """Where a lock is written by default: $EVALKIT_LOCK, else ./corpora.lock (never the installation)."""
    return Path(os.environ.get("EVALKIT_LOCK") or Path.cwd() / "corpora.lock")


def rules_path() -> Path:
    """The gate rules used by default: ./gate.toml when the working directory has one, else those shipped."""
    here = Path.cwd() / "gate.toml"
    return here if here.exists() else shipped("gate.toml")

"""Owning a results directory: refuse folders that are not ours, one run at a time, atomic files.

A results directory is evalkit's when it holds ``manifest.json``; any other non-empty folder is refused
(a run would overwrite its ``summary.csv``). A run holds an exclusive ``flock`` on ``.evalkit.lock`` in
the directory for as long as it runs; the kernel drops it when the process dies, however it dies, so a
manifest still saying ``running`` with nobody holding the lock is a run that was killed.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

LOCK = ".evalkit.lock"


def slug(label: str) -> str:
    """A file name for an arm label (labels may hold '/', e.g. a model id)."""
    return re.sub(r"[^\w.,=()+-]+", "_", label)


class ResultsError(Exception):
    """A results directory that cannot be used or read; the message names it and what to do."""


@contextmanager
def owned(out: Path, command: str = "evalkit run") -> Iterator[Path]:
    """Create (or take over) the results directory ``out`` and hold its lock while the block runs."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ResultsError(f"{out} is a file, not a results directory: choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            raise ResultsError(f"{out} is in use by another run ({holder}): wait for it to end or choose "
                               "another --out") from None
        foreign = sorted(p.name for p in out.iterdir() if p.name != LOCK)
        if foreign and not (out / "manifest.json").exists():
            raise ResultsError(f"{out} is not empty and is not an evalkit results directory (no manifest.json; "
                               f"holds {', '.join(foreign[:3])}{', …' if len(foreign) > 3 else ''}): "
                               "choose another --out")
        os.ftruncate(fd, 0)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, {command}, since {stamp}\n".encode(), 0)
        yield out
    finally:
        os.close(fd)  # closing releases the lock


def held(out: Path) -> bool:
    """Whether a live process holds ``out``'s lock (a ``running`` manifest without it was killed)."""
    try:
        fd = os.open(Path(out) / LOCK, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def status(out: Path, manifest: dict) -> str:
    """The manifest's status, with a ``running`` run that nobody holds shown as interrupted."""
    s = manifest.get("status", "?")
    return "interrupted (killed; continue it with --resume)" if s == "running" and not held(out) else s


@contextmanager
def atomic(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path``, renamed onto it when the block succeeds: a reader sees the old
    file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, data: dict) -> None:
    with atomic(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: Path) -> dict:
    """A manifest, or :class:`ResultsError` naming the file when it is not readable JSON."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultsError(f"{path} is damaged ({e}): it describes the run; remove the directory and run "
                           "again (the answers cannot be trusted without it)") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path} is damaged (not a JSON object)")
    return data

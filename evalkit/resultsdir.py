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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

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
    foreign = sorted(p.name for p in out.iterdir() if p.name != LOCK) if out.is_dir() else []
    if foreign and not (out / "manifest.json").exists():  # refused before anything is written there
        raise ResultsError(f"{out} is not empty and is not an evalkit results directory (no manifest.json; "
                           f"holds {', '.join(foreign[:3])}{', …' if len(foreign) > 3 else ''}): "
                           "choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            raise ResultsError(f"{out} is in use by another run ({holder}): wait for it to end or choose "
                               "another --out") from None
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


# What evalkit writes into a results directory; anything else there is not evalkit's and is never read.
WRITTEN = frozenset({"manifest.json", "per_query.parquet", "summary.csv", "gate.json", "report.ipynb", "report.html",
                     "figures", "runs", "robustness", LOCK})
# manifest.json fields every reader relies on: (path, type); arms are checked entry by entry.
MANIFEST_FIELDS = (("corpus", dict), ("corpus.name", str), ("corpus.digest", str), ("qrels", dict),
                   ("qrels.name", str), ("qrels.digest", str), ("qrels.queries", int), ("arms", list))
OPTIONAL_FIELDS = (("status", str), ("depth", int), ("environment", dict), ("environment.machine", dict),
                   ("environment.packages", dict), ("corpus.documents", dict), ("qrels.gains", dict),
                   ("qrels.path", str), ("specs", list))
ARM_FIELDS = (("label", str, True), ("spec", str, True), ("params", dict, False), ("describe", dict, False),
              ("models", list, False))
KINDS = {int: "a whole number", str: "a string", dict: "a table", list: "a list"}
_ABSENT = object()


def foreign(out: Path) -> list[str]:
    """Names in the results directory ``out`` that evalkit did not write: a report lists them, nothing reads them."""
    return sorted(p.name for p in Path(out).iterdir()
                  if p.name not in WRITTEN and not (p.name.startswith(".") and p.name.endswith(".partial")))


def _field(data: dict, dotted: str):
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return _ABSENT
        data = data[key]
    return data


def check_manifest(path: Path, data: dict) -> dict:
    """``data`` (read from ``path``) when every field readers use has its type, else ResultsError naming the
    file and the field: a hand-edited or foreign manifest is bad input, never a crash further on."""
    def check(where: str, value, kind: type, required: bool = True) -> None:
        if value is _ABSENT:
            if required:
                raise ResultsError(f"{path}: field {where!r} is missing")
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ResultsError(f"{path}: field {where!r} is not {KINDS[kind]}")

    for dotted, kind in MANIFEST_FIELDS:
        check(dotted, _field(data, dotted), kind)
    for dotted, kind in OPTIONAL_FIELDS:
        check(dotted, _field(data, dotted), kind, required=False)
    for i, arm in enumerate(data["arms"]):
        check(f"arms[{i}]", arm, dict)
        for key, kind, required in ARM_FIELDS:
            check(f"arms[{i}].{key}", arm.get(key, _ABSENT), kind, required)
    return data


# per_query.parquet columns every reader relies on; one row per (query, arm) is what makes scores pairable.
PER_QUERY_COLUMNS = ("query", "class", "arm", "outcome", "latency_s")


def check_per_query(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (read from ``path``) when it has the columns readers use and one row per (query, arm), else
    ResultsError naming the file and the first duplicated pair: a summary would average the copies and a
    comparison would pair rows of different queries."""
    missing = [c for c in PER_QUERY_COLUMNS if c not in frame.columns]
    if missing:
        raise ResultsError(f"{path}: column {missing[0]!r} is missing; it is rebuilt from the answers by "
                           f"`evalkit run ... --out {path.parent} --resume`")
    twice = frame[frame.duplicated(["query", "arm"])]
    if len(twice):
        query, arm = twice.iloc[0]["query"], twice.iloc[0]["arm"]
        raise ResultsError(f"{path}: query {query!r} of arm {arm!r} has more than one row ({len(twice)} duplicate "
                           f"row(s) in all): the file was edited or damaged; rebuild it with `evalkit run ... "
                           f"--out {path.parent} --resume`")
    return frame


def measured(manifest: dict) -> dict:
    """What a run's measures were computed on (stored with ``per_query.parquet``): the corpus and query-set
    digests and the arms. A reader compares it with the manifest before trusting the measures."""
    return {"corpus": manifest["corpus"]["digest"], "qrels": manifest["qrels"]["digest"],
            "arms": [a["label"] for a in manifest["arms"]]}

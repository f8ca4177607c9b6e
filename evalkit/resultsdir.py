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

from . import measures
from .atomic import replacing, temporary
from .oserrors import naming

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
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with naming(out / LOCK):
            os.ftruncate(fd, 0)
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


def write_json(path: Path, data: dict) -> None:
    with replacing(path) as tmp:
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
                     "figures", "runs", "robustness", "judge", LOCK})  # judge/: `evalkit qrels judge --results`
# manifest.json fields readers use: (pattern, type, required), a parent before its children. "[]" is every
# item of a list, "{}" every value of a table; a required field is required where its parent is present.
_SERVER = ("server", dict), ("server.name", str), ("server.version", str), ("server.tools_sha256", str), \
    ("definition_sha256", str), ("transport", dict), ("transport.ping_median_s", float), \
    ("warmup_seconds", list), ("warmup_seconds[]", float), ("restarts", int)  # what report_servers reads
_MOMENT = ("load_average", list), ("load_average[]", float), ("reference_ms", float), ("cpu_ms", float)
MANIFEST_FIELDS: tuple[tuple[str, type, bool], ...] = (
    ("corpus", dict, True), ("corpus.name", str, True), ("corpus.digest", str, True), ("corpus.documents", dict, False),
    ("qrels", dict, True), ("qrels.name", str, True), ("qrels.digest", str, True), ("qrels.queries", int, True),
    ("qrels.path", str, False), ("qrels.gains", dict, False), ("qrels.ungraded", list, False),
    ("qrels.ungraded[]", str, False),
    ("status", str, False), ("depth", int, False), ("specs", list, False), ("specs[]", str, False),
    ("environment", dict, False), ("environment.packages", dict, False), ("environment.machine", dict, False),
    ("environment.machine.cpus", int, False), ("environment.machine.memory_bytes", int, False),
    ("environment.calibration", dict, False), ("environment.calibration.cpu_model", str, False),
    ("environment.calibration.cores", int, False), ("environment.calibration.steal_share", float, False),
    *((f"environment.calibration.{m}", dict, False) for m in ("start", "end")),
    *((f"environment.calibration.{m}.{k}", kind, False) for m in ("start", "end") for k, kind in _MOMENT),
    ("arms", list, True), ("arms[]", dict, True), ("arms[].label", str, True), ("arms[].spec", str, True),
    ("arms[].file", str, False), ("arms[].params", dict, False), ("arms[].models", list, False),
    ("arms[].models[]", dict, False), ("arms[].describe", dict, False), ("arms[].describe.workers", dict, False),
    ("arms[].describe.workers{}", dict, False),
    *((f"arms[].describe.{k}", kind, False) for k, kind in _SERVER),
    *((f"arms[].describe.workers{{}}.{k}", kind, False) for k, kind in _SERVER))
KINDS = {int: "a whole number", float: "a number", str: "a string", dict: "a table", list: "a list"}


def foreign(out: Path) -> list[str]:
    """Names in the results directory ``out`` that evalkit did not write: a report lists them, nothing reads them."""
    return sorted(p.name for p in Path(out).iterdir()
                  if p.name not in WRITTEN and not temporary(p.name))


def _parents(data: dict, pattern: str) -> list[tuple[str, object]]:
    """``(where, value)`` of every field ``pattern`` names in ``data`` (``where`` as a reader would write it,
    ``arms[0].label``); absent fields and fields under a value of another type are left out."""
    found: list[tuple[str, object]] = [("", data)]
    for key in re.findall(r"\[\]|\{\}|[^.\[{]+", pattern):
        step: list[tuple[str, object]] = []
        for where, value in found:
            if key == "[]" and isinstance(value, list):
                step += [(f"{where}[{i}]", v) for i, v in enumerate(value)]
            elif key == "{}" and isinstance(value, dict):
                step += [(f"{where}[{k!r}]", v) for k, v in value.items()]
            elif isinstance(value, dict) and key in value:
                step.append((f"{where}.{key}" if where else key, value[key]))
        found = step
    return found


def _fits(value: object, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    return isinstance(value, (int, float)) if kind is float else isinstance(value, kind)


def check_manifest(path: Path, data: dict) -> dict:
    """``data`` (read from ``path``) when every field readers use has its type, else ResultsError naming the
    file and the field: a hand-edited or foreign manifest is bad input, never a crash further on."""
    for pattern, kind, required in MANIFEST_FIELDS:
        parent, _, key = pattern.rpartition(".")
        if required and key not in ("[]", "{}") and not key.endswith(("[]", "{}")):
            for where, holder in _parents(data, parent) if parent else [("", data)]:
                if isinstance(holder, dict) and key not in holder:
                    raise ResultsError(f"{path}: field {f'{where}.{key}' if where else key!r} is missing")
        for where, value in _parents(data, pattern):
            if not _fits(value, kind):
                raise ResultsError(f"{path}: field {where!r} is not {KINDS[kind]}")
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
    for column in ("latency_s", *(c for c in measures.DEFAULT if c in frame.columns)):
        if frame[column].dtype.kind not in "biuf":  # a mean of strings fails far from here, or concatenates
            raise ResultsError(f"{path}: column {column!r} holds {frame[column].dtype} values, not numbers: the file "
                               f"was edited or damaged; rebuild it with `evalkit run ... --out {path.parent} --resume`")
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

"""The query set behind a run, found again for its report: the file the manifest names, used only when
it is byte-identical to the one the run used (for query texts) or for its gain legend."""
from __future__ import annotations

import os
from pathlib import Path

from .. import qrels as _qrels
from ..results import Results

def qrels_file(results: Results) -> Path | None:
    """The query file the run names (``manifest["qrels"]["path"]``), looked up as given, then relative to the
    working directory (the caller's, ``EVALKIT_WORKDIR``, inside the report's kernel) and to the results
    directory (never to the installation); None if it is not found."""
    name = results.manifest.get("qrels", {}).get("path") or ""
    if not name or "\0" in name:  # no file has a NUL in its name
        return None
    p = Path(name)
    here = Path(os.environ.get("EVALKIT_WORKDIR") or Path.cwd())  # the report's kernel runs in a clean folder
    for cand in ([p] if p.is_absolute() else [here / p, results.path / p]):
        if cand.is_file():
            return cand
    return None


def query_set(results: Results) -> _qrels.QuerySet | None:
    """The run's query set, only if its file is found and is byte-identical to the one the run used."""
    path = qrels_file(results)
    if path is None:
        return None
    try:
        qs = _qrels.load(path)
    except _qrels.QrelsError:
        return None
    return qs if qs.digest == results.manifest["qrels"].get("digest") else None


def gains(results: Results) -> dict[int, str]:
    """The gain legend the run recorded, else its query file's, else :data:`evalkit.qrels.DEFAULT_GAINS`."""
    if recorded := results.manifest.get("qrels", {}).get("gains"):
        return {int(g): d for g, d in recorded.items()}
    path = qrels_file(results)
    if path is not None:
        try:
            return dict(_qrels.load(path).gains)
        except _qrels.QrelsError:
            pass
    return dict(_qrels.DEFAULT_GAINS)

"""What a timing depends on: interpreter, SQLite, package versions, machine, and a calibration of the
machine at the start and the end (:mod:`evalkit.calibration`). Runs and benches record it; modules that
read results read it without importing the runner."""
from __future__ import annotations

import os
import platform
import sqlite3
import sys
from importlib import metadata

from . import calibration
from .version import __version__

PACKAGES = ("pymupdf", "fastembed", "onnxruntime", "numpy", "pandas", "scipy", "pyarrow", "tqdm")


def environment() -> dict:
    """The environment record at the start of a timed run; :func:`completed` adds the end."""
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else None
    return {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
            "sqlite": sqlite3.sqlite_version, "evalkit": __version__, "packages": versions,
            "machine": {"platform": platform.platform(), "processor": platform.machine(),
                        "cpus": os.cpu_count(), "memory_bytes": mem},
            "calibration": calibration.start()}


def completed(env: dict) -> dict:
    """``env`` with the calibration's end moment; a record from before calibration is left as it is."""
    if "calibration" not in env:
        return env
    return {**env, "calibration": calibration.finish(env["calibration"])}

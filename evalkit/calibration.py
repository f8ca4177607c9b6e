"""A yardstick for timings: a short fixed reference workload, timed where and when the timings are taken.

An absolute time says as much about the machine and its load as about the code: on the shared 2-core
machine evalkit is built on, one bench of one commit gave figures three times another's. So every
environment record carries the CPU model, the load average and the share of CPU time the hypervisor
stole (``/proc/stat``) at the start and at the end, and the time of a reference workload made of what
evalkit itself spends its time on -- a NumPy matrix product (vector scoring), an SQLite FTS5 query loop
(the keyword arms), a PyMuPDF page parse of a PDF built in memory (extraction) -- each the median of a few
repeats. A timing divided by the reference time is a ratio that travels between machines and moments.

PyMuPDF is imported inside :func:`pdf_parse`, so modules that read results can import this one.
"""
from __future__ import annotations

import functools
import math
import os
import platform
import sqlite3
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone

import numpy as np

REPEATS = 5  # of each part; the median is kept
WORDS = tuple(f"w{i}" for i in range(400))  # the FTS5 vocabulary: fixed, so every machine runs the same loop


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what the platform says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_jiffies() -> dict[str, int]:
    """Cumulative CPU time of the whole machine (``/proc/stat``, in clock ticks): all of it and stolen."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return {}
    return {"total": sum(ticks[:8]), "steal": ticks[7] if len(ticks) > 7 else 0}


def steal_share(start: dict, end: dict) -> float:
    """The share of the machine's CPU time stolen by the hypervisor between two :func:`cpu_jiffies`."""
    try:
        total = end["total"] - start["total"]
        return (end["steal"] - start["steal"]) / total if total > 0 else math.nan
    except (KeyError, TypeError):
        return math.nan


def load_average() -> list[float]:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else [math.nan] * 3


def matrix_product() -> None:
    """150 products of two 96 x 96 float64 matrices (small enough that BLAS stays on one thread)."""
    a = np.random.default_rng(0).standard_normal((96, 96))
    for _ in range(150):
        a = a @ a
        a /= np.abs(a).max()


@functools.cache
def _fts5_table() -> sqlite3.Connection:
    """An in-memory FTS5 table of 800 seeded rows of 40 words (built once, untimed)."""
    rng = np.random.default_rng(0)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.executemany("INSERT INTO t(body) VALUES (?)",
                   [(" ".join(WORDS[i] for i in rng.zipf(1.3, 40) % len(WORDS)),) for _ in range(800)])
    return db


def fts5_queries() -> None:
    """60 BM25-ranked two-word queries on the FTS5 table, top 10 each."""
    db = _fts5_table()
    for i in range(60):
        q = f"{WORDS[(7 * i) % 97 + 50]} OR {WORDS[(13 * i) % 199 + 100]}"
        db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (q,)).fetchall()


@functools.cache
def _pdf() -> bytes:
    """A 6-page text PDF built in memory (once, untimed)."""
    import pymupdf

    doc = pymupdf.open()
    for p in range(6):
        text = " ".join(WORDS[(p * 31 + i) % len(WORDS)] for i in range(700))
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=8)
    data = doc.tobytes()
    doc.close()
    return data


def pdf_parse() -> None:
    """Open the in-memory PDF and extract every page's text, as the page store does."""
    import pymupdf

    with pymupdf.open(stream=_pdf(), filetype="pdf") as parsed:
        for page in parsed:
            page.get_text("text")


PARTS: dict[str, Callable[[], None]] = {"matrix_product": matrix_product, "fts5_queries": fts5_queries,
                                        "pdf_parse": pdf_parse}


def reference(repeats: int = REPEATS) -> dict:
    """Each part's median milliseconds over ``repeats`` runs (one untimed run first), and their sum."""
    parts = {}
    for name, fn in PARTS.items():
        fn()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(1000 * (time.perf_counter() - t0))
        parts[name] = statistics.median(times)
    return {"reference_ms": sum(parts.values()), "parts_ms": parts}


def moment(repeats: int = REPEATS) -> dict:
    """The machine now: time, load average, CPU ticks so far, and the reference workload's time."""
    return {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"), "load_average": load_average(),
            "cpu_jiffies": cpu_jiffies(), **reference(repeats)}


def start(repeats: int = REPEATS) -> dict:
    """The ``calibration`` record at the start of a timed run (:func:`finish` completes it)."""
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "start": moment(repeats)}


def finish(calibration: dict, repeats: int = REPEATS) -> dict:
    """``calibration`` with its end moment, the steal share over the run and the reference time: the mean
    of the start and end figures, since the timings between them ran under both."""
    end = moment(repeats)
    first = calibration["start"]
    return {**calibration, "end": end, "steal_share": steal_share(first["cpu_jiffies"], end["cpu_jiffies"]),
            "reference_ms": (first["reference_ms"] + end["reference_ms"]) / 2}


def reference_ms(environment: dict) -> float:
    """The reference time an environment record carries (NaN for records from before calibration)."""
    cal = environment.get("calibration") or {}
    value = cal.get("reference_ms", (cal.get("start") or {}).get("reference_ms"))
    return float(value) if isinstance(value, (int, float)) else math.nan


def summary(environment: dict) -> str:
    """One line: CPU, cores, reference time at start and end, load average and steal (or why there is none)."""
    cal = environment.get("calibration")
    if not cal:
        return "no calibration recorded (results from before evalkit recorded one)"
    first, end = cal.get("start", {}), cal.get("end")
    text = (f"{cal.get('cpu_model', '?')}, {cal.get('cores', '?')} cores; reference workload "
            f"{first.get('reference_ms', math.nan):.0f} ms at the start")
    if end:
        text += f", {end['reference_ms']:.0f} ms at the end"
    text += f"; load average {first.get('load_average', [math.nan])[0]:.2f}"
    if end:
        text += f" -> {end['load_average'][0]:.2f}; CPU stolen {100 * cal.get('steal_share', math.nan):.1f}%"
    return text

"""A yardstick for timings: a short fixed reference workload, timed where and when the timings are taken.

An absolute time says as much about the machine and its load as about the code: on the shared 2-core
machine evalkit is built on, one bench of one commit gave figures three times another's. So every
environment record carries the CPU model, the load average and the share of CPU time the hypervisor
stole (``/proc/stat``) at the start and at the end, and the time of a reference workload made of what
evalkit itself spends its time on -- NumPy matrix products (vector scoring), SQLite FTS5 queries (the
keyword arms), PyMuPDF page parses of a PDF built in memory (extraction) -- read two ways (:func:`reference`):
its wall time, which a busy machine stretches as it stretches every wall-clock timing, and its CPU time,
which only a slower core stretches. A timing divided by the matching reading is a ratio that travels
between machines and moments. The workload runs with BLAS on one thread: OpenBLAS threads a 96 x 96 product
and its idle threads spin for a while after it, which doubled the CPU reading on an idle machine and left it
to whether the other core was free.

PyMuPDF is imported inside :func:`_pdf`, so modules that read results can import this one.
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

REPEATS = 3  # passes over each part; medians are kept
REREAD_AFTER_S = 60  # a run shorter than this is read once: the load average beside it is a 1-minute average
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


@functools.cache
def _matrices() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((96, 96)), rng.standard_normal((96, 96))


def matrix_product(i: int) -> None:
    """One product of two 96 x 96 float64 matrices."""
    a, b = _matrices()
    a @ (b if i % 2 else a)


@functools.cache
def _fts5_table() -> sqlite3.Connection:
    """An in-memory FTS5 table of 800 seeded rows of 40 words (built once, untimed)."""
    rng = np.random.default_rng(0)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.executemany("INSERT INTO t(body) VALUES (?)",
                   [(" ".join(WORDS[i] for i in rng.zipf(1.3, 40) % len(WORDS)),) for _ in range(800)])
    return db


def fts5_query(i: int) -> None:
    """One BM25-ranked two-word query on the FTS5 table, top 10."""
    q = f"{WORDS[(7 * i) % 97 + 50]} OR {WORDS[(13 * i) % 199 + 100]}"
    _fts5_table().execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (q,)).fetchall()


@functools.cache
def _pdf():
    """A 24-page text PDF built in memory and opened from its bytes (once, untimed)."""
    import pymupdf

    doc = pymupdf.open()
    for p in range(24):
        text = " ".join(WORDS[(p * 31 + i) % len(WORDS)] for i in range(150))
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=9)
    data = doc.tobytes()
    doc.close()
    return pymupdf.open(stream=data, filetype="pdf")


def pdf_page(i: int) -> None:
    """Load one page of the in-memory PDF and extract its text, as the page store does."""
    _pdf()[i % 24].get_text("text")


# part -> (one step, steps per pass)
PARTS: dict[str, tuple[Callable[[int], None], int]] = {
    "matrix_product": (matrix_product, 150), "fts5_queries": (fts5_query, 60), "pdf_parse": (pdf_page, 36)}


def unit(i: int) -> None:
    """One step of every part: the reference workload in miniature (about a millisecond), to time between
    the queries of a latency measurement, so that both see the machine at the same moments."""
    for step, _ in PARTS.values():
        step(i)


def _part(step: Callable[[int], None], n: int, repeats: int) -> tuple[float, float]:
    """(wall, CPU) milliseconds of the median pass over one part's steps."""
    for i in range(n):  # untimed: imports, caches, lazy builds
        step(i)
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(n):
            step(i)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def reference(repeats: int = REPEATS) -> dict:
    """The reference workload read two ways. ``reference_ms``, wall time: it grows with everything that
    slows a process, the share of a core it gets included, as a long loop's or an extraction's wall time
    does. ``cpu_ms``, this process's CPU time: a moment the scheduler gives the core to another process
    does not count, so it grows only with how fast the core runs when it runs us, as a search's CPU time."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        parts = {name: _part(step, n, repeats) for name, (step, n) in PARTS.items()}
    return {"reference_ms": sum(w for w, _ in parts.values()), "cpu_ms": sum(c for _, c in parts.values()),
            "parts_ms": {name: {"wall": w, "cpu": c} for name, (w, c) in parts.items()}}


def moment(repeats: int = REPEATS, *, read: bool = True) -> dict:
    """The machine now: time, load average, CPU ticks so far, and (``read``) the reference workload's time."""
    now = {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"), "load_average": load_average(),
           "cpu_jiffies": cpu_jiffies()}
    return {**now, **reference(repeats)} if read else now


def start(repeats: int = REPEATS) -> dict:
    """The ``calibration`` record at the start of a timed run (:func:`finish` completes it)."""
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "start": moment(repeats)}


KINDS = ("reference_ms", "cpu_ms")  # the two readings of the reference workload, see :func:`reference`


def _seconds_between(first: str, last: str) -> float:
    try:
        return (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    except (TypeError, ValueError):
        return math.inf


def finish(calibration: dict, repeats: int = REPEATS) -> dict:
    """``calibration`` with its end moment and the steal share over the run. A run of
    :data:`REREAD_AFTER_S` or more reads the workload again and keeps the mean of both readings, since its
    timings ran under both; a shorter one keeps the start's reading (the end records time and load only):
    a second reading would measure the same minute, at the cost of a small run's own time."""
    first = calibration["start"]
    end = moment(repeats, read=False)
    if _seconds_between(first.get("time"), end["time"]) >= REREAD_AFTER_S:
        end = {**end, **reference(repeats)}
    readings = [first, end] if "reference_ms" in end else [first]
    return {**calibration, "end": end, "steal_share": steal_share(first["cpu_jiffies"], end["cpu_jiffies"]),
            **{k: sum(m[k] for m in readings) / len(readings) for k in KINDS}}


def reference_ms(environment: dict, kind: str = "reference_ms") -> float:
    """A reference time an environment record carries (``kind``: ``reference_ms`` or ``cpu_ms``): the
    mean of start and end, the start alone for a run that never finished, NaN for records from before
    calibration."""
    cal = environment.get("calibration") or {}
    value = cal.get(kind, (cal.get("start") or {}).get(kind))
    return float(value) if isinstance(value, (int, float)) else math.nan


def summary(environment: dict) -> str:
    """One line: CPU, cores, reference times at start and end, load average and steal (or why there are none)."""
    cal = environment.get("calibration")
    if not cal:
        return "no calibration recorded (results from before evalkit recorded one)"
    first, end = cal.get("start", {}), cal.get("end")

    def times(m: dict) -> str:
        return f"{m.get('reference_ms', math.nan):.0f} ms ({m.get('cpu_ms', math.nan):.0f} ms CPU)"

    text = f"{cal.get('cpu_model', '?')}, {cal.get('cores', '?')} cores; reference workload {times(first)} at the start"
    if end and "reference_ms" in end:
        text += f", {times(end)} at the end"
    elif end:
        text += f", not read again at the end (a run of {_seconds_between(first.get('time'), end.get('time')):.0f} s)"
    text += f"; load average {first.get('load_average', [math.nan])[0]:.2f}"
    if end:
        text += f" -> {end['load_average'][0]:.2f}; CPU stolen {100 * cal.get('steal_share', math.nan):.1f}%"
    return text

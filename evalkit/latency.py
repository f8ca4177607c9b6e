"""Latency measured side by side: the record of a paired re-timing and the ratio that decides on it.

Two runs' recorded latencies were taken at different moments under different loads; on a shared machine
the same candidate gated against two runs of one baseline made minutes apart got ratios 5.9 and 10.1. So
the gate's latency rule decides only on a *paired* timing: both arms built in one process and asked the
same queries one after the other, alternating which goes first (:mod:`evalkit.timing` does it; this
module holds what the gate reads, so the gate never imports arms). Per query the ratio candidate/baseline
cancels much of whatever slowed the machine at that moment, and leaving out the time the search sat in
the kernel's run queue, waiting for a core another process held, cancels most of the rest, while time an
arm spends waiting on its own account (a server, a disk, a sleep) still counts. On this shared machine
(load average 11), `keyword` against `global-index` on `latex` re-timed on the wall clock gave ratios 1.25
and 1.71; less run-queue waits, four times 1.38 to 1.40. The decision is on the per-query ratios' median
(taken on log ratios, so 2x slower and 2x faster weigh the same) with the distribution-free interval of a
median, between two order statistics (the sign test's): its coverage holds for any shape of the ratios and
any number of queries, so six queries all eight times slower fail the rule, where a bootstrap interval,
unreliable on so few, had to call them underpowered. The median, not the mean: a search of a millisecond
that the scheduler interrupts takes ten, and a few such queries would move a mean of ratios far more than
the arms differ.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import quantile_test


@dataclass(frozen=True)
class PairedTiming:
    """Seconds per query of baseline and candidate, timed in one process, interleaved query by query after
    ``warmup`` untimed queries: wall clock (``*_s``) and wall clock less the time the searching thread sat
    in the run queue waiting for a core (``*_unqueued_s``, from ``/proc/thread-self/schedstat``; empty
    where the kernel does not say), with the load average before and after."""

    base_s: tuple[float, ...]
    cand_s: tuple[float, ...]
    warmup: int
    load_average: tuple[float, float] = (math.nan, math.nan)
    base_unqueued_s: tuple[float, ...] = ()
    cand_unqueued_s: tuple[float, ...] = ()

    @property
    def n(self) -> int:
        return len(self.base_s)

    @property
    def clock(self) -> str:
        """``unqueued`` when both arms' times less run-queue waits were taken, else ``wall``."""
        return "unqueued" if len(self.base_unqueued_s) == len(self.cand_unqueued_s) == self.n > 0 else "wall"

    def times(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Baseline and candidate times on the clock that decides (:attr:`clock`)."""
        return (self.base_unqueued_s, self.cand_unqueued_s) if self.clock == "unqueued" else (self.base_s, self.cand_s)


@dataclass(frozen=True)
class Untimed:
    """Why a paired timing could not be taken here (an arm not installed, the corpus missing or changed)."""

    reason: str


def paired_ratio(base_s: Sequence[float], cand_s: Sequence[float],
                 confidence: float = 0.95) -> tuple[float, float, float]:
    """(ratio, low, high): the median of per-query candidate/baseline times and its distribution-free
    interval at ``confidence`` (order statistics of the log ratios, exponentiated: scipy's
    ``quantile_test``); low and high are nan with fewer than :func:`fewest_timed` queries."""
    b, c = np.asarray(base_s, float), np.asarray(cand_s, float)
    if b.shape != c.shape:
        raise ValueError(f"paired times need equal lengths, got {b.size} and {c.size}")
    keep = (b > 0) & (c > 0)
    logs = np.log(c[keep]) - np.log(b[keep])
    if logs.size == 0:
        return math.nan, math.nan, math.nan
    ci = quantile_test(logs, q=0, p=0.5).confidence_interval(confidence)
    return math.exp(float(np.median(logs))), math.exp(ci.low), math.exp(ci.high)


def fewest_timed(confidence: float = 0.95) -> int:
    """The fewest re-timed queries with an interval at ``confidence``: the smallest n whose widest interval,
    from the fastest ratio to the slowest, misses the median only with chance 2 / 2**n (6 at 95%)."""
    return math.ceil(math.log2(2 / (1 - confidence)) - 1e-12)

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
(taken on log ratios, so 2x slower and 2x faster weigh the same) with a percentile bootstrap interval.
The median, not the mean: a search of a millisecond that the scheduler interrupts takes ten, and a few
such queries would move a mean of ratios far more than the arms differ.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import stats


MIN_QUERIES = 10  # re-timed queries below which a bootstrap interval of a median means nothing


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


def paired_ratio(base_s: Sequence[float], cand_s: Sequence[float], confidence: float = 0.95,
                 n_resamples: int = stats.RESAMPLES, seed: int = 0) -> tuple[float, float, float]:
    """(ratio, low, high): the median of per-query candidate/baseline times with its percentile bootstrap
    interval (computed on log ratios, then exponentiated)."""
    b, c = np.asarray(base_s, float), np.asarray(cand_s, float)
    if b.shape != c.shape:
        raise ValueError(f"paired times need equal lengths, got {b.size} and {c.size}")
    keep = (b > 0) & (c > 0)
    mean, low, high = stats.bootstrap_ci(np.log(c[keep]) - np.log(b[keep]), confidence, n_resamples, seed, np.median)
    return math.exp(mean), math.exp(low), math.exp(high)

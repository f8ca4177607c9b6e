"""Latency measured side by side: the record of a paired re-timing and the ratio that decides on it.

Two runs' recorded latencies were taken at different moments under different loads; on a shared machine
the same candidate gated against two runs of one baseline made minutes apart got ratios 5.9 and 10.1. So
the gate's latency rule decides only on a *paired* timing: both arms built in one process and asked the
same queries one after the other, alternating which goes first (:mod:`evalkit.timing` does it; this
module holds what the gate reads, so the gate never imports arms). Per query the ratio candidate/baseline
cancels whatever slowed the machine at that moment; the decision is on their median (taken on log ratios,
so 2x slower and 2x faster weigh the same) with a percentile bootstrap interval. The median, not the mean:
a search of a millisecond that the scheduler interrupts takes ten, and a few such queries would move a
mean of ratios far more than the arms differ.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import stats


@dataclass(frozen=True)
class PairedTiming:
    """Seconds per query of baseline and candidate, timed in one process, interleaved query by query after
    ``warmup`` untimed queries, with the load average before and after."""

    base_s: tuple[float, ...]
    cand_s: tuple[float, ...]
    warmup: int
    load_average: tuple[float, float] = (math.nan, math.nan)

    @property
    def n(self) -> int:
        return len(self.base_s)


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

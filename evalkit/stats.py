"""Uncertainty for per-query scores: bootstrap CIs of a mean and paired comparisons of two arms.

Both are seeded and deterministic, because a CI gate that flips between runs is worse than none. Inputs
must be free of NaN: abstain queries carry NaN ranking scores on purpose and must be left out by the
caller (dropping them here silently is how averages drift, see FIELD_NOTES.md).
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as _st

Verdict = Literal["better", "worse", "not distinguishable"]


def _values(values: Sequence[float] | np.ndarray, what: str = "values") -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if np.isnan(x).any():
        raise ValueError(f"{what} contain NaN: leave abstain queries out before computing statistics")
    return x


def _rng_kw(fn, seed: int) -> dict:
    """scipy >= 1.15 takes ``rng``; older versions ``random_state``. Either way, a seeded Generator."""
    name = "rng" if "rng" in inspect.signature(fn).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap CI of the mean. Fewer than two values have no spread to
    resample, so the bounds are NaN; constant values give a zero-width interval."""
    x = _values(values)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, math.nan, math.nan)
    if np.all(x == x[0]):
        return (mean, mean, mean)
    res = _st.bootstrap((x,), _mean, n_resamples=n_resamples, confidence_level=confidence,
                        method="percentile", vectorized=True, **_rng_kw(_st.bootstrap, seed))
    ci = res.confidence_interval
    return (mean, float(ci.low), float(ci.high))


@dataclass(frozen=True)
class Comparison:
    """Arm b against arm a over the same queries (higher scores are better). ``verdict`` comes from the CI of
    the mean delta alone: "better" if it lies above 0, "worse" if below, else "not distinguishable"."""

    mean_delta: float
    low: float
    high: float
    p_value: float
    n: int
    verdict: Verdict


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y - x, axis=axis)


def paired_compare(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, confidence: float = 0.95,
                   n_resamples: int = 10_000, seed: int = 0) -> Comparison:
    """Per-query paired differences b - a: mean, percentile-bootstrap CI, and a two-sided paired
    randomization (sign-flip) test p-value. Pairing matters: query difficulty varies far more than the
    difference between two arms, and unpaired tests drown the difference in it."""
    x, y = _values(a, "a"), _values(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    d = y - x
    mean, low, high = bootstrap_ci(d, confidence=confidence, n_resamples=n_resamples, seed=seed)
    if d.size == 0:
        p = math.nan
    elif d.size == 1 or np.all(d == 0):
        p = 1.0  # exact: with one pair (or no differences) every sign flip is as extreme as the data
    else:
        res = _st.permutation_test((x, y), _mean_diff, permutation_type="samples", vectorized=True,
                                   n_resamples=n_resamples, alternative="two-sided",
                                   **_rng_kw(_st.permutation_test, seed))
        p = float(res.pvalue)
    verdict: Verdict = "better" if low > 0 else "worse" if high < 0 else "not distinguishable"
    return Comparison(mean_delta=mean, low=low, high=high, p_value=p, n=int(d.size), verdict=verdict)

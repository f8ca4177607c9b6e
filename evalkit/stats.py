"""Uncertainty for per-query scores: bootstrap CIs, paired randomization tests, Holm's correction and the
minimal detectable difference -- everything a gate needs to tell a difference from noise.

All of it is seeded and deterministic, because a CI gate that flips between runs is worse than none. Inputs
must be free of NaN: abstain queries carry NaN ranking scores on purpose and must be left out by the
caller (dropping them here silently is how averages drift, see FIELD_NOTES.md).

Resampling streams: resamples are drawn and reduced :func:`batch` at a time, so memory stays near
:data:`BATCH_VALUES` values whatever the number of queries (20,000 queries x 10,000 resamples in one array
took 9 GB). The random numbers are drawn in the same order as in one array, so the CIs and p-values are
the same as unbatched.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize
from scipy import stats as _st

Verdict = Literal["better", "worse", "not distinguishable"]
ALPHA, POWER, RESAMPLES = 0.05, 0.8, 10_000
RANGE = 1.0  # the largest difference a ranking measure (nDCG, RR, Recall, GoldDoc, ...) can show
TOO_SMALL = "n too small"
NO_VARIANCE = "no variance"  # the paired differences are all alike: no spread to size an MDD from


BATCH_VALUES = 2**21  # values one batch of resamples holds (16 MiB as float64)


def batch(n: int) -> int:
    """Resamples per batch for ``n`` values: :data:`BATCH_VALUES` values at a time, at least one resample."""
    return max(1, BATCH_VALUES // max(n, 1))


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


def bootstrap_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95, n_resamples: int = RESAMPLES,
                 seed: int = 0, statistic: Callable[..., np.ndarray] = _mean) -> tuple[float, float, float]:
    """(estimate, low, high): percentile bootstrap CI of ``statistic`` (the mean; any function of an array
    and an ``axis``, e.g. ``np.median``). Fewer than two values have no spread to resample, so the bounds
    are NaN; constant values give a zero-width interval."""
    x = _values(values)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(statistic(x, axis=-1))
    if x.size < 2:
        return (mean, math.nan, math.nan)
    if np.all(x == x[0]):
        return (mean, mean, mean)
    res = _st.bootstrap((x,), statistic, n_resamples=n_resamples, confidence_level=confidence, batch=batch(x.size),
                        method="percentile", vectorized=True, **_rng_kw(_st.bootstrap, seed))
    ci = res.confidence_interval
    return (mean, float(ci.low), float(ci.high))


def _abs_mean(d: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.abs(np.mean(d, axis=axis))


def sign_flip_p(differences: Sequence[float] | np.ndarray, n_resamples: int = RESAMPLES, seed: int = 0) -> float:
    """Two-sided paired randomization test of "mean difference = 0": flip the sign of each per-query
    difference at random and count how often ``|mean|`` is at least the observed one.

    scipy's ``permutation_test(alternative="two-sided")`` doubles the smaller one-sided p-value, which is
    not (b + 1)/(m + 1); testing ``|mean|`` with ``alternative="greater"`` is. scipy then returns exactly
    that, (b + 1)/(m + 1) with b of m random sign flips as extreme as the data (never 0), and enumerates all
    2^n flips when 2^n <= ``n_resamples`` (the exact p-value b/2^n, whose b counts the data's own signs).
    Random flips are counted by :func:`_random_flips`, batch by batch."""
    d = _values(differences, "differences")
    if d.size == 0:
        return math.nan
    if d.size == 1 or np.all(d == 0):
        return 1.0  # every sign flip is as extreme as the data
    if 2 ** min(d.size, 64) > n_resamples:
        return _random_flips(d, n_resamples, seed)
    res = _st.permutation_test((d,), _abs_mean, permutation_type="samples", vectorized=True,
                               n_resamples=n_resamples, alternative="greater", batch=batch(2 * d.size),
                               **_rng_kw(_st.permutation_test, seed))
    return float(res.pvalue)


def _random_flips(d: np.ndarray, n_resamples: int, seed: int) -> float:
    """scipy's random sign-flip p-value (``permutation_test``, ``samples``, one sample) computed in batches.
    scipy flips each query by permuting the pair (d, -d): one 32-bit draw per query and resample, the pair
    swapped when its low bit is 0; its statistic sees the kept values with queries on the outer axis, which
    the buffer below reproduces, so the null means are scipy's to the last bit but for a few ulps where
    numpy reduces small batches otherwise, which the comparison's tolerance (100 ulp of the observed |mean|,
    scipy's) absorbs. scipy itself loops in Python over the queries once per batch: a minute at 18,000."""
    rng = np.random.default_rng(seed)
    observed = float(_abs_mean(d))
    floor = observed - abs(np.finfo(float).eps * 100 * observed)
    count, step = 0, batch(2 * d.size)
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        swap = (rng.integers(0, 2**32, size=(m, d.size), dtype=np.uint32) & 1) == 0
        kept = np.empty((d.size, m, 2))
        kept[:, :, 0] = np.where(swap.T, -d[:, None], d[:, None])
        count += int(np.count_nonzero(_abs_mean(kept.transpose(2, 1, 0)[0]) >= floor))
    return (count + 1) / (n_resamples + 1)


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment: the i-th smallest of m p-values becomes max over j <= i of
    min(1, (m - j + 1) p_(j)). It controls the family-wise error rate under any dependence between the
    tests (classes of one query set are not independent). NaN p-values (an empty slice) stay NaN and do
    not count towards m."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = order.size
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


def decidable(n: int, alpha: float = ALPHA) -> bool:
    """Whether the exact sign-flip test (:func:`sign_flip_p`) can reject at ``alpha`` over ``n`` queries at
    all: its smallest two-sided p-value is 2 / 2^n, so 5 queries (1/16) never reach 0.05. Below that no
    difference is detectable, however closely two or three differences happen to agree."""
    return n >= fewest_decidable(alpha)


def fewest_decidable(alpha: float = ALPHA) -> int:
    """The fewest queries at which :func:`decidable` holds: 2 / 2^n <= alpha, i.e. n >= 1 - log2(alpha)."""
    return max(2, math.ceil(1 - math.log2(alpha)))


def power(delta: float, sd: float, n: int, alpha: float = ALPHA) -> float:
    """Power of a two-sided paired t-test at level ``alpha`` to detect a true mean difference ``delta``
    over ``n`` queries whose differences have standard deviation ``sd`` (noncentral t, no normal
    approximation: with 22 queries per class the difference matters); 0 where the sign-flip test the gate
    decides with cannot reject at all (:func:`decidable`)."""
    if n < 2:
        return math.nan
    if not decidable(n, alpha):
        return 0.0
    if not sd > 0:
        return float(delta != 0)
    df, nc = n - 1, abs(delta) * math.sqrt(n) / sd
    tc = _st.t.ppf(1 - alpha / 2, df)
    wrong_side = _st.nct.cdf(-tc, df, nc)  # NaN far in the tail, where it is below 1e-30
    return float(_st.nct.sf(tc, df, nc) + (0.0 if math.isnan(wrong_side) else wrong_side))


def mdd(sd: float, n: int, alpha: float = ALPHA, target: float = POWER) -> float:
    """Minimal detectable difference: the smallest true mean difference a two-sided paired test at level
    ``alpha`` detects with probability ``target`` over ``n`` queries whose differences have standard
    deviation ``sd``. It solves ``power(MDD, sd, n, alpha) = target`` exactly; the familiar approximation is
    MDD ~ (t[1 - alpha/2, n - 1] + t[target, n - 1]) * sd / sqrt(n), i.e. about 2.9 sd / sqrt(n) at n = 22.
    NaN ("n too small") where the gate's sign-flip test cannot reject at all (:func:`decidable`)."""
    if not decidable(n, alpha):
        return math.nan
    if not sd > 0:
        return 0.0
    guess = (_st.t.ppf(1 - alpha / 2, n - 1) + _st.t.ppf(target, n - 1)) * sd / math.sqrt(n)
    return float(optimize.brentq(lambda x: power(x, sd, n, alpha) - target, guess / 4, guess * 4, xtol=1e-10))


def detectable(value: float) -> float:
    """An MDD as worth showing: NaN when it is undefined (n < 2) or beyond :data:`RANGE`, where it says
    only that the set is too small."""
    return value if value <= RANGE else math.nan


def ci_text(low: float, high: float) -> str:
    """An interval as every table and verdict writes it, ``[+0.005, +0.059]``; a slice of fewer than two
    queries has none, and says so rather than printing ``[+nan, +nan]``."""
    if math.isnan(low) or math.isnan(high):
        return "[no CI: n < 2]"
    return f"[{low:+.3f}, {high:+.3f}]"


def delta_text(delta: float, low: float, high: float) -> str:
    """A paired difference and its interval as every table and verdict writes it: ``+0.032 [+0.005, +0.059]``."""
    return f"{delta:+.3f} {ci_text(low, high)}"


def power_text(value: float) -> str:
    """A power as a verdict writes it: ``80%``, or ``n/a (n < 2)`` where none is defined (:func:`power`)."""
    return "n/a (n < 2)" if math.isnan(value) else f"{value:.0%}"


def mdd_text(value: float, sd: float = math.nan) -> str:
    """``MDD 0.123``; :data:`NO_VARIANCE` when ``sd``, the spread of the paired differences it came from, is
    0 (two identical arms on a handful of queries: :func:`mdd` is 0, which no set can honestly claim), or
    :data:`TOO_SMALL` where :func:`detectable` is NaN."""
    if sd == 0 and not math.isnan(value):
        return NO_VARIANCE
    return TOO_SMALL if math.isnan(detectable(value)) else f"MDD {value:.3f}"


def queries_needed(delta: float, sd: float, alpha: float = ALPHA, target: float = POWER, most: int = 100_000) -> int:
    """The fewest queries whose paired test at level ``alpha`` detects a true difference ``delta`` with
    probability ``target`` when per-query differences have standard deviation ``sd`` (inverts :func:`power`
    in ``n``, which it increases; ``most`` + 1 when even ``most`` queries would not do)."""
    if not delta or not sd > 0:
        return fewest_decidable(alpha) if sd == 0 and delta else most + 1
    low, high = 2, 2
    while power(delta, sd, high, alpha) < target:
        if high > most:
            return most + 1
        low, high = high, high * 2
    while low < high:  # the smallest n in [low, high] with enough power
        mid = (low + high) // 2
        low, high = (mid + 1, high) if power(delta, sd, mid, alpha) < target else (low, mid)
    return high


def mcnemar_p(worse: int, better: int) -> float:
    """One-sided exact McNemar test that a paired binary outcome got worse: of the queries whose outcome
    changed, ``worse`` changed for the worse and ``better`` for the better; under "no change" each is a
    fair coin, so p = P(Binomial(worse + better, 1/2) >= worse). 1.0 when nothing changed."""
    n = worse + better
    return 1.0 if n == 0 else float(_st.binomtest(worse, n, 0.5, alternative="greater").pvalue)


@dataclass(frozen=True)
class Comparison:
    """Arm b against arm a over the same queries (higher scores are better). ``verdict`` comes from the CI of
    the mean delta alone: "better" if it lies above 0, "worse" if below, else "not distinguishable".
    ``wins``/``ties``/``losses`` count queries where b scored above / equal to / below a; ``sd_delta`` is
    the standard deviation of the per-query differences and ``mdd`` the minimal detectable difference it
    implies (:func:`mdd`)."""

    mean_delta: float
    low: float
    high: float
    p_value: float
    n: int
    verdict: Verdict
    mean_a: float = math.nan
    mean_b: float = math.nan
    wins: int = 0
    ties: int = 0
    losses: int = 0
    sd_delta: float = math.nan
    mdd: float = math.nan


def paired_compare(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, confidence: float = 0.95,
                   n_resamples: int = RESAMPLES, seed: int = 0, alpha: float = ALPHA,
                   target_power: float = POWER) -> Comparison:
    """Per-query paired differences b - a: both means, the mean difference, its percentile-bootstrap CI, the
    two-sided sign-flip p-value (:func:`sign_flip_p`), win/tie/loss counts and the minimal detectable
    difference. Pairing matters: query difficulty varies far more than the difference between two arms,
    and unpaired tests drown the difference in it."""
    x, y = _values(a, "a"), _values(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    d = y - x
    mean, low, high = bootstrap_ci(d, confidence=confidence, n_resamples=n_resamples, seed=seed)
    sd = float(d.std(ddof=1)) if d.size > 1 else math.nan
    verdict: Verdict = "better" if low > 0 else "worse" if high < 0 else "not distinguishable"
    return Comparison(mean_delta=mean, low=low, high=high, p_value=sign_flip_p(d, n_resamples, seed),
                      n=int(d.size), verdict=verdict,
                      mean_a=float(x.mean()) if x.size else math.nan, mean_b=float(y.mean()) if y.size else math.nan,
                      wins=int((d > 0).sum()), ties=int((d == 0).sum()), losses=int((d < 0).sum()),
                      sd_delta=sd, mdd=mdd(sd, int(d.size), alpha, target_power))

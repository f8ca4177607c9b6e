import math

import numpy as np
import pytest

from evalkit.stats import Comparison, bootstrap_ci, paired_compare


def test_bootstrap_ci_contains_the_mean_and_is_deterministic():
    x = np.random.default_rng(1).uniform(0, 1, 40)
    mean, low, high = bootstrap_ci(x, seed=3)
    assert mean == pytest.approx(x.mean()) and low < mean < high
    assert bootstrap_ci(x, seed=3) == (mean, low, high)
    assert bootstrap_ci(list(x), seed=3) == (mean, low, high)
    assert bootstrap_ci(x, seed=4) != (mean, low, high)
    # a wider confidence gives a wider interval
    _, l99, h99 = bootstrap_ci(x, confidence=0.99, seed=3)
    assert l99 < low and h99 > high


def test_bootstrap_ci_roughly_matches_the_normal_interval():
    x = np.random.default_rng(2).normal(0.5, 0.2, 200)
    _, low, high = bootstrap_ci(x)
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert (high - low) / 2 == pytest.approx(half, rel=0.1)


def test_bootstrap_ci_small_and_degenerate_inputs():
    m, lo, hi = bootstrap_ci([0.7])
    assert m == 0.7 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert bootstrap_ci([0.3] * 5) == (pytest.approx(0.3), pytest.approx(0.3), pytest.approx(0.3))
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.1, float("nan")])


def _pair(shift, n=60, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, n)  # per-query difficulty varies a lot...
    b = np.clip(a + shift + rng.normal(0, 0.05, n), 0, 1)  # ...the arms differ by a small shift
    return a, b


def test_paired_compare_verdicts():
    better = paired_compare(*_pair(0.08))
    assert isinstance(better, Comparison)
    assert better.verdict == "better" and better.low > 0 and better.p_value < 0.001 and better.n == 60
    worse = paired_compare(*_pair(-0.08))
    assert worse.verdict == "worse" and worse.high < 0 and worse.p_value < 0.001
    same = paired_compare(*_pair(0.0))
    assert same.verdict == "not distinguishable" and same.low < 0 < same.high and same.p_value > 0.05
    a, b = _pair(0.08)
    assert paired_compare(a, b).mean_delta == pytest.approx(np.mean(b - a))
    assert paired_compare(b, a).verdict == "worse"


def test_paired_compare_is_deterministic_and_checks_its_input():
    a, b = _pair(0.01, n=30, seed=5)
    assert paired_compare(a, b, seed=7) == paired_compare(a, b, seed=7)
    identical = paired_compare(a, a)
    assert identical.mean_delta == 0 and identical.p_value == 1.0 and identical.verdict == "not distinguishable"
    one = paired_compare([0.1], [0.9])
    assert one.n == 1 and one.verdict == "not distinguishable" and math.isnan(one.low)
    with pytest.raises(ValueError, match="equal lengths"):
        paired_compare([0.1, 0.2], [0.3])
    with pytest.raises(ValueError, match="NaN"):
        paired_compare([0.1, float("nan")], [0.3, 0.4])

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from evalkit.stats import (Comparison, bootstrap_ci, decidable, holm, mcnemar_p, mdd, paired_compare, power,
                           queries_needed,
                           sign_flip_p)


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


# ---- the randomization test against exact enumeration -----------------------------------------------------

def _all_sign_flips_p(d):
    """Brute force: every one of the 2^n sign vectors, two-sided on |mean| (the data's own signs included)."""
    d = np.asarray(d, dtype=float)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    null = np.abs((signs * d).mean(axis=1))
    observed = abs(d.mean())
    return np.count_nonzero(null >= observed - 1e-12) / len(signs)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 12])
def test_sign_flip_p_is_exact_enumeration_for_small_n(n):
    rng = np.random.default_rng(n)
    for d in (rng.normal(0.05, 0.2, n), np.round(rng.uniform(-1, 1, n), 1), np.r_[np.zeros(n - 1), 0.3]):
        assert sign_flip_p(d) == pytest.approx(_all_sign_flips_p(d), abs=1e-12)


def test_sign_flip_p_monte_carlo_agrees_with_enumeration_and_is_never_zero():
    d = np.random.default_rng(7).normal(0.08, 0.25, 16)  # 2^16 > 10,000 resamples: Monte Carlo
    exact = _all_sign_flips_p(d)
    p = sign_flip_p(d, n_resamples=10_000, seed=1)
    assert p == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 10_000))
    assert sign_flip_p(d, seed=1) == p and sign_flip_p(d, seed=2) != p  # seeded
    # all 30 differences positive: no random flip out of m is as extreme, so p = (0 + 1)/(m + 1), not 0
    assert sign_flip_p(np.linspace(0.1, 0.4, 30), n_resamples=10_000) == pytest.approx(1 / 10_001)
    assert sign_flip_p(np.linspace(0.1, 0.4, 30), n_resamples=999) == pytest.approx(1 / 1000)
    assert sign_flip_p([0.0, 0.0, 0.0]) == 1.0 and sign_flip_p([0.4]) == 1.0 and math.isnan(sign_flip_p([]))


# ---- the bootstrap against the exhaustive bootstrap distribution ------------------------------------------

def test_bootstrap_ci_agrees_with_the_exhaustive_bootstrap_distribution():
    x = np.array([0.0, 0.2, 0.25, 0.5, 0.9, 1.0])
    means = x[np.array(list(itertools.product(range(6), repeat=6)))].mean(axis=1)  # all 6^6 equally likely resamples
    _, low, high = bootstrap_ci(x, n_resamples=10_000, seed=0)
    # a 10,000-draw percentile lands within the exact 2%-3% (97%-98%) quantile band: +-3 binomial SEs
    assert np.quantile(means, 0.02) <= low <= np.quantile(means, 0.03)
    assert np.quantile(means, 0.97) <= high <= np.quantile(means, 0.98)


# ---- Holm, power, MDD, McNemar ------------------------------------------------------------------------------

def test_holm_matches_a_hand_computed_case():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> raised to 0.06 (step-down monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    out = holm([0.02, math.nan, 0.04])  # an empty slice does not count towards m
    assert out[0] == pytest.approx(0.04) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)
    assert holm([]).size == 0


def _holm_by_definition(p):
    """Holm as the step-down procedure states it: the largest alpha at which each hypothesis is rejected."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


@given(st.lists(st.floats(0, 1), max_size=12))
def test_holm_matches_its_definition_and_never_lowers_a_p_value(p):
    adjusted = holm(p)
    assert adjusted.tolist() == pytest.approx(_holm_by_definition(p))
    assert all(a >= x for a, x in zip(adjusted, p, strict=True))


def test_power_is_alpha_at_zero_and_mdd_inverts_it():
    assert power(0.0, 0.2, 22) == pytest.approx(0.05)
    m = mdd(0.2, 22)
    assert power(m, 0.2, 22) == pytest.approx(0.8)
    approx = (stats.t.ppf(0.975, 21) + stats.t.ppf(0.8, 21)) * 0.2 / math.sqrt(22)
    assert m == pytest.approx(approx, rel=0.02)  # the textbook formula is close
    assert mdd(0.2, 88) == pytest.approx(m * math.sqrt(22 / 88), rel=0.05)  # four times the queries, half the MDD
    assert mdd(0.0, 22) == 0.0 and math.isnan(mdd(0.2, 1))


def test_mdd_agrees_with_a_simulated_t_test():
    sd, n = 0.25, 22
    m = mdd(sd, n)
    d = np.random.default_rng(11).normal(m, sd, (20_000, n))
    rejected = stats.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05
    assert rejected.mean() == pytest.approx(0.8, abs=0.015)  # SE 0.003 at 20,000 simulated query sets


def test_mdd_agrees_with_the_simulated_randomization_test():
    """The gate tests with sign flips, not t: its power at the MDD must be close to 0.8 too."""
    sd, n = 0.25, 22
    m = mdd(sd, n)
    rng = np.random.default_rng(12)
    rejected = [sign_flip_p(rng.normal(m, sd, n), n_resamples=2_000, seed=i) < 0.05 for i in range(400)]
    assert np.mean(rejected) == pytest.approx(0.8, abs=0.07)  # SE 0.02 at 400 simulated query sets


def test_mcnemar_is_the_exact_binomial_tail():
    assert mcnemar_p(5, 0) == pytest.approx(1 / 32)
    assert mcnemar_p(3, 1) == pytest.approx(5 / 16)  # P(X >= 3), X ~ Binomial(4, 1/2)
    assert mcnemar_p(0, 4) == 1.0 and mcnemar_p(0, 0) == 1.0


def test_paired_compare_counts_wins_ties_losses_and_reports_the_mdd():
    a = np.array([0.2, 0.5, 0.5, 0.9, 0.1])
    b = np.array([0.4, 0.5, 0.3, 0.9, 0.6])
    c = paired_compare(a, b)
    assert (c.wins, c.ties, c.losses) == (2, 2, 1)
    assert (c.mean_a, c.mean_b) == (pytest.approx(a.mean()), pytest.approx(b.mean()))
    assert c.sd_delta == pytest.approx(np.std(b - a, ddof=1))
    assert math.isnan(c.mdd)  # 5 queries: the sign-flip test's smallest p is 1/16, so nothing is detectable
    c6 = paired_compare(np.append(a, 0.3), np.append(b, 0.5))
    assert c6.mdd == pytest.approx(mdd(c6.sd_delta, 6)) and 0 < c6.mdd < 1
    assert c.p_value == pytest.approx(_all_sign_flips_p(b - a))


def test_identical_arms_have_no_variance_not_an_mdd_of_zero():
    from evalkit.stats import mdd_text

    c = paired_compare([0.2, 0.5, 0.5, 0.3, 0.7, 0.4], [0.2, 0.5, 0.5, 0.3, 0.7, 0.4])  # six: decidable
    assert c.sd_delta == 0 and c.mdd == 0.0  # the formula's zero, which no set can honestly claim
    assert mdd_text(c.mdd, c.sd_delta) == "no variance" and mdd_text(0.25, 0.1) == "MDD 0.250"
    assert mdd_text(math.nan, math.nan) == "n too small"


def test_a_difference_and_its_interval_are_written_one_way():
    from evalkit.stats import delta_text

    assert delta_text(0.0321, -0.0049, 0.059) == "+0.032 [-0.005, +0.059]"


def test_a_slice_of_one_query_says_it_has_no_interval_and_no_power():
    """One trap query in a class: no bootstrap interval and no power exist, and the text says so instead of
    printing ``[+nan, +nan]`` and ``nan%`` (the newcomer trial's compare, gate and report)."""
    from evalkit.stats import delta_text, power_text

    c = paired_compare([0.3], [0.7])
    assert delta_text(c.mean_delta, c.low, c.high) == "+0.400 [no CI: n < 2]"
    assert power_text(power(0.05, c.sd_delta, 1)) == "n/a (n < 2)" and power_text(0.8) == "80%"


def test_an_mdd_beyond_the_measures_range_is_told_as_n_too_small(two_per_class):
    import pandas as pd

    from evalkit.stats import detectable, mdd_text

    pq = pd.read_parquet(two_per_class / "per_query.parquet").pivot(index="query", columns="arm", values="nDCG@10")
    raw = [paired_compare(pq["base"][q], pq["cand"][q]).mdd for q in (["q000", "q001"], ["q002", "q003"])]
    assert all(math.isnan(m) for m in raw)  # 2 queries each: the MDDs 2.478 and 4.084 are not computed
    assert [mdd_text(m) for m in raw] == ["n too small", "n too small"]
    assert math.isnan(detectable(math.nan)) and mdd_text(0.25) == "MDD 0.250"
    assert mdd_text(1.0) == "MDD 1.000" and mdd_text(1.0001) == "n too small"


def test_no_difference_is_detectable_where_the_sign_flip_test_cannot_reject():
    # two queries whose differences agree closely: a t-based MDD would be 0.012 and its power 100% (what the
    # gate printed for a spread class of 2 queries), yet the exact sign-flip p-value is never below 2 / 2^2
    assert not decidable(5) and decidable(6) and not decidable(6, alpha=0.01) and decidable(8, alpha=0.01)
    assert math.isnan(mdd(0.001, 2)) and math.isnan(mdd(0.2, 5)) and 0 < mdd(0.2, 6) < 1
    assert power(0.05, 0.001, 2) == 0.0 and power(0.05, 0.001, 6) > 0.99
    assert sign_flip_p([0.050, 0.051]) == 0.5 and sign_flip_p([0.1] * 5) > 0.05 >= sign_flip_p([0.1] * 6)
    assert queries_needed(0.05, 0.0) == 6 and queries_needed(0.05, 0.001) == 6


def _dense(d, n_resamples, seed):
    """The sign-flip p-value and bootstrap CI as evalkit computed them before streaming: scipy, one array."""
    p = stats.permutation_test((d,), lambda x, axis=-1: np.abs(np.mean(x, axis=axis)), permutation_type="samples",
                               vectorized=True, n_resamples=n_resamples, alternative="greater",
                               rng=np.random.default_rng(seed)).pvalue
    ci = stats.bootstrap((d,), lambda x, axis=-1: np.mean(x, axis=axis), n_resamples=n_resamples, method="percentile",
                         vectorized=True, rng=np.random.default_rng(seed)).confidence_interval
    return p, (float(ci.low), float(ci.high))


@pytest.mark.parametrize("n, rounding, batch_values", [(17, 1, 64), (60, 2, 500), (300, 3, 7000),
                                                       pytest.param(2500, 2, 2**21, marks=pytest.mark.slow)])
def test_streamed_resampling_gives_the_dense_formulas_numbers(monkeypatch, n, rounding, batch_values):
    """Same seed, same p-value and CI as one dense array, whatever the batch (ties in rounded scores too)."""
    import evalkit.stats as ek_stats

    monkeypatch.setattr(ek_stats, "BATCH_VALUES", batch_values)
    for seed in range(3):
        d = np.random.default_rng(seed).normal(0, 0.3, n).round(rounding)
        p, (low, high) = _dense(d, 2000, seed)
        assert sign_flip_p(d, 2000, seed) == p
        assert bootstrap_ci(d, 0.95, 2000, seed)[1:] == (low, high)


def test_no_resampling_array_grows_with_queries_times_resamples(monkeypatch):
    """The bounded memory design: 4,000 queries x 2,000 resamples would be 8M values in one array; every
    array the statistics see holds at most BATCH_VALUES."""
    import evalkit.stats as ek_stats

    sizes = []

    def spy(x, axis=-1):
        sizes.append(x.size)
        return np.abs(np.mean(x, axis=axis))

    monkeypatch.setattr(ek_stats, "_abs_mean", spy)
    d = np.random.default_rng(0).normal(0, 0.3, 4000)
    sign_flip_p(d, 2000)
    bootstrap_ci(d, n_resamples=2000, statistic=spy)
    assert 4000 * 2000 > ek_stats.BATCH_VALUES >= max(sizes) and len(sizes) > 4

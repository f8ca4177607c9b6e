import math

import numpy as np
import pytest
from scipy.stats import beta

from evalkit import refusal as R
from evalkit.refusal import clopper_pearson, clopper_pearson_upper


def test_wilson_by_hand():
    # p = 0.3, z = 1.959964: centre (p + z^2/2n) / (1 + z^2/n), half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)
    r = R.wilson(3, 10)
    assert (r.low, r.high) == pytest.approx((0.10779, 0.60322), abs=1e-5)
    zero = R.wilson(0, 9)  # not degenerate at 0 of n: [0, z^2/n / (1 + z^2/n)]
    assert zero.low == pytest.approx(0, abs=1e-12) and zero.high == pytest.approx(0.29915, abs=1e-5)
    assert R.wilson(9, 9).low == pytest.approx(1 - 0.29915, abs=1e-5)
    assert math.isnan(R.wilson(0, 0).value) and str(R.wilson(0, 0)) == "n/a (no queries)"
    assert str(r) == "3/10 = 0.300 [0.108, 0.603]"


def test_operating_point_counts_and_kinds():
    refused = [True, False, True, True, False]
    answerable = [True, True, False, False, False]
    kinds = ["", "", "near-miss", "off-domain", "near-miss"]
    op = R.operating_point(refused, answerable, kinds)
    assert (op["correct_refusal"].k, op["correct_refusal"].n) == (2, 3)
    assert (op["wrongful_refusal"].k, op["wrongful_refusal"].n) == (1, 2)
    assert (op["correct_refusal[near-miss]"].k, op["correct_refusal[near-miss]"].n) == (1, 2)
    assert (op["correct_refusal[off-domain]"].k, op["correct_refusal[off-domain]"].n) == (1, 1)
    assert set(R.operating_point(refused, answerable)) == {"correct_refusal", "wrongful_refusal"}


def test_auroc_by_hand():
    # answerable 0.9, 0.5 vs abstain 0.5, 0.1: pairs won 1 + 1 + 1, one tie (1/2) -> 3.5 / 4
    assert R.auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == 0.875
    assert R.auroc([0.1, 0.2], [True, False]) == 0.0
    assert R.auroc([-math.inf, 0.2], [False, True]) == 1.0  # a query with no answer ranks lowest
    assert math.isnan(R.auroc([0.1, 0.2], [True, True]))
    with pytest.raises(ValueError, match="NaN"):
        R.auroc([math.nan, 0.2], [True, False])


def test_tradeoff_every_threshold():
    curve = R.tradeoff([0.9, 0.5, 0.5, 0.1], [True, True, False, False])
    assert curve["threshold"].tolist() == [0.1, 0.5, 0.9, math.inf]
    assert curve["correct_refusal"].tolist() == [0.0, 0.5, 1.0, 1.0]
    assert curve["wrongful_refusal"].tolist() == [0.0, 0.0, 0.5, 1.0]


def test_risk_coverage_and_aurc_by_hand():
    rc = R.risk_coverage([0.9, 0.8, 0.7], [0.0, 1.0, 0.5])
    assert rc["risk"].tolist() == [0.0, 0.5, 0.5] and rc["coverage"].tolist() == pytest.approx([1 / 3, 2 / 3, 1])
    assert R.aurc([0.9, 0.8, 0.7], [0.0, 1.0, 0.5]) == pytest.approx(1 / 3)
    # a tied band is answered in expectation over its orders, never by position
    assert R.risk_coverage([0.9, 0.9, 0.1], [0.0, 1.0, 1.0])["risk"].tolist() == pytest.approx([0.5, 0.5, 2 / 3])
    assert R.aurc([0.9, 0.9, 0.1], [1.0, 0.0, 1.0]) == pytest.approx((0.5 + 0.5 + 2 / 3) / 3)


def test_losses():
    assert R.losses([0.25, math.nan, 1.0], [True, False, True]).tolist() == [0.75, 1.0, 0.0]


def test_nauc_by_hand():
    # two rates (0, 0.5), two queries: perfect confidence = the oracle (1), reversed = -1
    rates = [0.0, 0.5]
    assert R.nauc([0.1, 0.9], [0.0, 1.0], rates) == pytest.approx(1.0)
    assert R.nauc([0.9, 0.1], [0.0, 1.0], rates) == pytest.approx(-1.0)
    # MTEB's default rates 0..0.9, n = 4, confidence ordering the queries worst-first:
    # raw curve .625 .625 .5 .5 .25 .25 .25 0 0 0 (area .26875); oracle .625 .625 5/6 5/6 1 1 1 1 1 1
    # (area .8104167); flat .625 * .9 = .5625 -> (.26875 - .5625) / (.8104167 - .5625)
    assert R.nauc([0.4, 0.3, 0.2, 0.1], [0.0, 0.5, 1.0, 1.0]) == pytest.approx(-1.184874, abs=1e-6)
    assert math.isnan(R.nauc([0.1, 0.2], [0.5, 0.5]))


def test_calibrate_meets_the_target_and_reads_short():
    conf = np.array([0.91, 0.62, 0.55, 0.47, 0.30, 0.41, 0.20, 0.12])
    ans = np.array([True, True, True, True, True, False, False, False])
    # no answerable may go: refuse below 0.30 (0.20 and 0.12), so the threshold lies in (0.20, 0.30]
    assert R.calibrate(conf, ans, max_wrongful=0.0) == 0.3
    # one of five may go (0.30): refuse below 0.47, so (0.41, 0.47]; every abstain query is refused
    t = R.calibrate(conf, ans, max_wrongful=0.2)
    assert t == 0.44 and ((conf < t) & ~ans).sum() == 3 and ((conf < t) & ans).sum() == 1
    assert R.calibrate(conf, ans, 1.0) > conf.max()
    with pytest.raises(ValueError, match="no threshold"):
        R.calibrate([-math.inf, 0.5], [True, True], 0.0)


def test_short_between():
    assert R.short_between(0.3, 0.5) == 0.4
    assert R.short_between(0.2, 0.3) == 0.3  # (lo, hi]: hi itself qualifies
    assert R.short_between(0.3412, 0.3419) in (0.3415, 0.3416)  # four digits, both 0.00005 from the middle
    assert 0.123456 < R.short_between(0.123456, 0.123457) <= 0.123457


@pytest.mark.parametrize("k,n", [(0, 1), (0, 10), (1, 42), (3, 61), (7, 123), (60, 61), (61, 61), (250, 1000)])
def test_the_clopper_pearson_bounds_are_scipy_s_beta_quantiles(k, n):
    upper = clopper_pearson_upper(k, n)
    assert upper == pytest.approx(1.0 if k == n else beta.ppf(0.95, k + 1, n - k), abs=1e-12)
    two = clopper_pearson(k, n)
    assert (two.k, two.n) == (k, n)
    assert two.low == pytest.approx(0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1), abs=1e-12)
    assert two.high == pytest.approx(1.0 if k == n else beta.ppf(0.975, k + 1, n - k), abs=1e-12)
    assert math.isnan(clopper_pearson_upper(0, 0)) and clopper_pearson(0, 0).n == 0

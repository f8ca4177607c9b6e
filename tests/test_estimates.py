import itertools
import math

import numpy as np
import pytest

from evalkit import estimates as E
from evalkit import measures as M

DOCS = ("a.pdf", "b.pdf", "c.pdf")


def _case(seed: int, per_doc: int = 2, arms: int = 3):
    """A small pool (every page of three documents), random gains, rankings and a judge that is wrong."""
    rng = np.random.default_rng(seed)
    pages = [f"{d}#{p}" for d in DOCS for p in range(1, per_doc + 1)]
    gains = {p: int(rng.choice(4, p=[0.5, 0.2, 0.15, 0.15])) for p in pages}
    rankings = {f"arm{i}": [*rng.permutation(pages), "z.pdf#9"] for i in range(arms)}
    prior = {p: rng.dirichlet(np.ones(4)) for p in pages}  # unrelated to the gains: a useless judge
    return pages, gains, rankings, prior


def _plain(rankings, gains):
    return np.array([[M.measure(m)(r, gains) for r in rankings.values()] for m in E.MEASURES])


@pytest.mark.parametrize("seed", range(5))
def test_every_page_graded_gives_the_plain_measures(seed):
    pages, gains, rankings, prior = _case(seed, per_doc=4)
    pool = E.pool("q", "needle", rankings, prior, {p: (g, 1.0) for p, g in gains.items()})
    est = pool.estimate()
    assert est.shape == (len(E.LAMBDAS), len(E.MEASURES), len(rankings))
    np.testing.assert_allclose(est, np.broadcast_to(_plain(rankings, gains), est.shape), atol=1e-12)


def test_the_judges_expectation_is_the_average_over_every_gain_assignment():
    pages, gains, rankings, prior = _case(7)
    pool = E.pool("q", "needle", rankings, prior, {})
    expected = np.zeros((len(E.MEASURES), len(rankings)))
    for combo in itertools.product(range(4), repeat=len(pages)):
        weight = math.prod(prior[p][g] for p, g in zip(pages, combo, strict=True))
        expected += weight * _plain(rankings, dict(zip(pages, combo, strict=True)))
    np.testing.assert_allclose(pool.estimate((1.0,))[0], expected, atol=1e-12)


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_page_sampling_is_unbiased_for_every_measure_whatever_the_judge(lam):
    """Exact expectation over all 2^n Poisson samples: the useless judge's estimate averages to the truth."""
    pages, gains, rankings, prior = _case(3)
    pi = dict(zip(pages, np.linspace(0.2, 0.9, len(pages)), strict=True))
    mean = np.zeros((len(E.MEASURES), len(rankings)))
    for picked in itertools.product((False, True), repeat=len(pages)):
        chance = math.prod(pi[p] if k else 1 - pi[p] for p, k in zip(pages, picked, strict=True))
        graded = {p: (gains[p], pi[p]) for p, k in zip(pages, picked, strict=True) if k}
        mean += chance * E.pool("q", "needle", rankings, prior, graded).estimate((lam,))[0]
    np.testing.assert_allclose(mean, _plain(rankings, gains), atol=1e-10)
    plug_in = E.pool("q", "needle", rankings, prior, {}).estimate((1.0,))[0]
    assert np.abs(plug_in - _plain(rankings, gains)).max() > 0.05  # the judge alone is wrong


def test_judge_probabilities_become_monotone_distributions():
    d = E.distributions(np.array([0.5, 1.2]), np.array([0.7, 0.4]), np.array([0.1, 0.5]))
    np.testing.assert_allclose(d.sum(axis=1), 1)
    assert (d >= 0).all()
    np.testing.assert_allclose(d[0], [0.5, 0.0, 0.4, 0.1])


def test_ppi_mean_agrees_with_ppi_python():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(0)
    n, big = 4000, 20000
    f = rng.normal(size=n + big)
    y = 0.5 + f[:n] + rng.normal(size=n) * 1.5
    yhat, unl = 2.0 * f[:n] + 0.3, 2.0 * f[n:] + 0.3
    for lam in (None, 0.0, 0.4, 1.0):
        mine = E.ppi_mean(y, yhat, unl, lam)
        ref = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=lam)))
        low, high = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.05, lam=lam))
        assert mine.mean == pytest.approx(ref, abs=1e-12)
        # t vs normal quantile and the two pseudo-queries: negligible at n = 4000
        assert mine.low == pytest.approx(low, rel=2e-3) and mine.high == pytest.approx(high, rel=2e-3)
    assert 0 < E.ppi_mean(y, yhat, unl).lam < 1  # the power-tuned weight is inside (0, 1) here


def test_every_query_graded_gives_the_plain_mean():
    y = np.array([0.1, 0.4, -0.2, 0.3])
    i = E.ppi_mean(y, y * 0 + 5.0, np.zeros(0))
    assert i.mean == pytest.approx(y.mean())


def _coverage(judge: str, reps: int = 1500, n: int = 12, big: int = 120) -> tuple[float, float, float]:
    """Coverage of the finite population's mean difference by the 95% interval over ``reps`` draws of
    ``n`` graded queries of ``big``, stratified in two classes; mean widths, PPI and person-only."""
    rng = np.random.default_rng(11)
    strata = np.repeat(["needle", "spread"], big // 2)
    truth = np.where(rng.random(big) < 0.3, rng.choice([-1.0, 1.0], big), 0.0) * 0.5 + 0.04
    truth += rng.normal(0, 0.2, big)
    pred = {"good": truth + rng.normal(0, 0.05, big),
            "biased": 0.6 * truth + 0.3 + rng.normal(0, 0.05, big),  # shrunk and shifted: a wrong judge
            "useless": rng.normal(0, 0.3, big)}[judge]
    covered, widths, alone = 0, 0.0, 0.0
    for _ in range(reps):
        graded = np.zeros(big, dtype=bool)
        graded[rng.choice(big, n, replace=False)] = True
        i = E.stratified_ppi(truth[graded], pred[graded], strata[graded], pred[~graded], strata[~graded])
        covered += i.low <= truth.mean() <= i.high
        widths += i.high - i.low
        p = E.ppi_mean(truth[graded], pred[graded], pred[~graded], 0.0)
        alone += p.high - p.low
    return covered / reps, widths / reps, alone / reps


@pytest.mark.slow
@pytest.mark.parametrize("judge", ["good", "biased", "useless"])
def test_intervals_hold_whatever_the_judge(judge):
    coverage, width, alone = _coverage(judge)
    assert coverage >= 0.93
    if judge == "good":
        assert width < 0.6 * alone  # a good judge narrows the interval
    else:
        assert width < 1.3 * alone  # a wrong one only costs width, never coverage


def test_a_judge_that_knows_every_gain_predicts_the_plain_measures():
    import pandas as pd

    pages, gains, rankings, _ = _case(5, per_doc=3)
    rows = [("q1", p.split("#")[0], int(p.split("#")[1]), float(g >= 1), float(g >= 2), float(g == 3))
            for p, g in gains.items()]
    table = pd.DataFrame(rows, columns=["query", "doc", "page", "p_ge1", "p_ge2", "p_eq3"])
    by_arm = {a: {"q1": r, "q2": r[:2]} for a, r in rankings.items()}
    pred = E.predicted([("q1", "needle"), ("q2", "spread")], by_arm, table)
    np.testing.assert_allclose(pred[0], _plain(rankings, gains), atol=1e-12)
    np.testing.assert_allclose(pred[1], 0.0)  # q2: nothing predicted, every page gain 0


def test_pairs_estimates_every_measure_and_ordered_pair():
    rng = np.random.default_rng(2)
    truth = rng.random((30, len(E.MEASURES), 3))
    graded = np.arange(30) < 12
    found = E.pairs(truth, truth + 0.1, graded, np.array(["needle"] * 30), ["x", "y", "z"])
    assert len(found) == len(E.MEASURES) * 6
    assert all(e.interval.low <= e.interval.mean <= e.interval.high for e in found)
    assert "12 of 30 queries graded" in found[0].text()


def test_graded_needed_follows_the_ppi_variance():
    assert E.graded_needed(0.05, 0.2, 0.0, 10_000) == math.ceil((0.2 * (1.959964 + 0.841621) / 0.05) ** 2)
    alone, judged = E.graded_needed(0.05, 0.2, 0.0, 400), E.graded_needed(0.05, 0.2, 0.9, 400)
    assert judged < alone / 2  # a judge correlated 0.9 saves more than half the grading
    assert E.graded_needed(0.01, 0.5, 0.5, 50) == 51  # not even grading all 50 would do
    rng = np.random.default_rng(4)  # the formula is the variance ppi_mean reports at that n
    y = rng.normal(0, 0.2, 400)
    f = 0.9 * y + rng.normal(0, 0.2 * math.sqrt(1 - 0.81), 400)
    n = judged
    se = E.ppi_mean(y[:n], f[:n], f[n:]).se
    assert se == pytest.approx(0.2 * math.sqrt((1 - 0.81 * (400 - n) / 400) / n), rel=0.35)


def test_an_undecided_estimate_says_how_many_more_queries_to_grade():
    rng = np.random.default_rng(8)
    truth = rng.normal(0, 0.2, (200, len(E.MEASURES), 2))
    truth[:, :, 1] += 0.08  # arm y is better by 0.08
    strata = np.array(["needle"] * 200)
    few = E.estimate(truth, truth * 0, np.arange(200) < 8, strata, "nDCG@10", ["x", "y"], "y", "x")
    assert few.verdict == "undecided" and 0 < few.more_to_grade() <= 192
    more = few.more_to_grade()
    after = E.estimate(truth, truth * 0, np.arange(200) < 8 + more, strata, "nDCG@10", ["x", "y"], "y", "x")
    assert after.interval.high - after.interval.low < few.interval.high - few.interval.low
    assert E.estimate(truth, truth * 0, np.arange(200) < 150, strata, "nDCG@10", ["x", "y"], "y",
                      "x").more_to_grade() == 0


def test_an_interval_never_leaves_the_range_its_mean_lies_in():
    """Two graded queries whose differences are -1 and +1: a t interval reaches far past +-1 (the gate
    printed [-1.266, +1.266]); a paired difference of measures lies in [-1, 1], a measure's mean in [0, 1]."""
    graded = np.array([True, True, False, False, False])
    strata = np.array(["needle"] * 5)
    truth, predicted = np.array([-1.0, 1.0, 0, 0, 0]), np.array([0.2, -0.1, 0.3, 0.0, -0.4])
    e = E.of_values(truth, predicted, graded, strata, "nDCG@10", "b", "a", confidence=0.99)
    assert (e.interval.low, e.interval.high) == (-1.0, 1.0) and (e.person_only.low, e.person_only.high) == (-1.0, 1.0)
    mean = E.of_values((truth + 1) / 2, (predicted + 1) / 2, graded, strata, "nDCG@10", "b", bounds=(0.0, 1.0))
    assert (mean.interval.low, mean.interval.high) == (0.0, 1.0)


def test_an_interval_on_too_few_graded_queries_says_so_in_words():
    one = E.of_values(np.array([0.5, 0, 0]), np.array([0.4, 0.1, 0.2]), np.array([True, False, False]),
                      np.array(["trap"] * 3), "nDCG@10", "b", "a")
    none = E.of_values(np.zeros(3), np.array([0.4, 0.1, 0.2]), np.zeros(3, bool), np.array(["trap"] * 3),
                       "nDCG@10", "b", "a")
    assert E.interval_text(one.interval) == "+0.500 (no interval: 1 graded query here)"
    assert E.interval_text(none.interval) == "unknown: no graded query here" and "nan" not in none.text()

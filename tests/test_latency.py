
import numpy as np
import pytest

from evalkit.latency import PairedTiming, paired_ratio


def test_the_paired_ratio_is_the_median_of_per_query_ratios():
    base = np.random.default_rng(0).uniform(0.001, 0.02, 40)
    assert paired_ratio(base, base) == (1.0, 1.0, 1.0)
    assert paired_ratio(base, 2 * base) == pytest.approx((2.0, 2.0, 2.0))
    noisy = 1.5 * base * np.random.default_rng(1).lognormal(0, 0.1, 40)
    ratio, low, high = paired_ratio(base, noisy)
    assert low < ratio < high and low < 1.5 < high


def test_a_few_interrupted_searches_do_not_move_it():
    base = np.full(40, 0.001) * np.random.default_rng(2).lognormal(0, 0.02, 40)
    cand = base.copy()
    cand[:4] *= 10  # the scheduler took the core away during four of the candidate's searches
    ratio, low, high = paired_ratio(base, cand)
    assert ratio == pytest.approx(1.0) and high < 1.05
    assert np.exp(np.mean(np.log(cand / base))) > 1.25  # a mean of ratios would have called it 25% slower


def test_times_less_run_queue_waits_decide_where_the_kernel_gives_them():
    wall = tuple(np.full(10, 0.004))
    t = PairedTiming(wall, wall, 5, base_unqueued_s=tuple(np.full(10, 0.003)),
                     cand_unqueued_s=tuple(np.full(10, 0.0036)))
    assert t.clock == "unqueued" and t.times() == (t.base_unqueued_s, t.cand_unqueued_s)
    assert PairedTiming(wall, wall, 5).clock == "wall" and PairedTiming(wall, wall, 5).times() == (wall, wall)


def test_unpaired_lengths_are_refused():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_ratio([0.1, 0.2], [0.1])

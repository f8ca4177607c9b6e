"""Coverage of the latency rule's interval of the median per-query ratio, by simulation.

    python benchmarks/latency_interval.py --draws 2000

Re-timings are drawn with a true median ratio of 1.3 (candidate over baseline) and noise on the log ratio
of median 0, skewed (a shifted exponential: an arm now and then much slower) or heavy-tailed (Student t, 2
degrees of freedom), at several numbers of re-timed queries. For each it prints how often the 95% interval
holds 1.3: the distribution-free interval the rule decides on (:func:`evalkit.latency.paired_ratio`) and,
for comparison, the percentile bootstrap of the median it used before (1000 resamples).
"""
from __future__ import annotations

import argparse

import numpy as np

from evalkit import stats
from evalkit.latency import paired_ratio

TRUE = 1.3
NOISE = {"skewed": lambda rng, n: rng.exponential(1, n) - np.log(2), "heavy": lambda rng, n: rng.standard_t(2, n)}


def retimed(rng: np.random.Generator, n: int, noise: str) -> tuple[np.ndarray, np.ndarray]:
    """A baseline's times for ``n`` queries and the candidate's, TRUE times as long under the ``noise``."""
    base = rng.uniform(0.001, 0.02, n)
    return base, base * np.exp(np.log(TRUE) + NOISE[noise](rng, n))


def coverage(n: int, noise: str, draws: int) -> tuple[float, float]:
    """(order statistics, bootstrap): the share of ``draws`` simulated re-timings whose interval holds TRUE."""
    rng = np.random.default_rng(n)
    held = np.zeros(2)
    for i in range(draws):
        base, cand = retimed(rng, n, noise)
        logs = np.log(cand / base)
        _, low, high = paired_ratio(base, cand)
        _, blow, bhigh = stats.bootstrap_ci(logs, 0.95, 1000, i, np.median)
        held += (low <= TRUE <= high, blow <= np.log(TRUE) <= bhigh)
    return held[0] / draws, held[1] / draws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--queries", type=int, nargs="+", default=[6, 8, 10, 25])
    args = ap.parse_args()
    for n in args.queries:
        for noise in NOISE:
            new, old = coverage(n, noise, args.draws)
            print(f"{n:3d} queries, {noise:6s} noise: order statistics {new:.3f}, bootstrap {old:.3f}", flush=True)


if __name__ == "__main__":
    main()

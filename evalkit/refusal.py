"""Refusal measures: how well a per-query confidence separates answerable queries from those nothing answers.

Pure functions over arrays, one entry per query: ``confidence`` (higher = answer; a query refused because
the arm found nothing carries -inf), ``answerable`` (bool), a ranking measure per query where one is needed
(``metric``, e.g. nDCG@10). A query is refused at threshold t when its confidence is < t. Correct refusals
and wrongful refusals are always reported together (either alone is maximised by refusing all or nothing),
and every rate carries a Wilson 95% interval: with 9 or 22 abstain queries the intervals are wide, and
saying so is the point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.integrate import trapezoid
from scipy.stats import binom, binomtest, mannwhitneyu

# MTEB's abstention rates for nAUC: 0, 0.1, ..., 0.9
MTEB_RATES = np.linspace(0, 1, 11)[:-1]


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` with its Wilson score interval (no continuity correction); NaN when n = 0."""

    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else math.nan

    def __str__(self) -> str:
        if not self.n:
            return "n/a (no queries)"
        return f"{self.k}/{self.n} = {self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def wilson(k: int, n: int, confidence: float = 0.95) -> Rate:
    """``k`` successes in ``n`` trials with the Wilson score interval (scipy's ``proportion_ci``): unlike the
    normal approximation it stays inside [0, 1] and is not degenerate at 0 of n or n of n."""
    if n == 0:
        return Rate(0, 0, math.nan, math.nan)
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return Rate(int(k), int(n), float(ci.low), float(ci.high))


def _solve(tail, target: float) -> float:
    """The p in [0, 1] where the binomial tail ``tail(p)`` (monotone in p) crosses ``target``, by bisection:
    the definition of the exact interval, not the beta quantile that equals it, so the two can be checked
    against each other (tests/test_refusal.py)."""
    low, high = 0.0, 1.0
    rising = tail(1.0) > tail(0.0)
    for _ in range(60):  # 2**-60: far below any rate a query set can show
        mid = (low + high) / 2
        if (tail(mid) < target) == rising:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def clopper_pearson_upper(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided exact (Clopper–Pearson) upper bound on a rate seen ``k`` times in ``n``: the largest p with
    P(Binomial(n, p) <= k) >= 1 - confidence. 1.0 at k = n; NaN when n = 0. For a split-conformal threshold
    set at the ``k + 1``-th lowest of ``n`` calibration scores it is also the bound, at that confidence, on the
    wrongful-refusal rate of the threshold itself (the rate is Beta(k + 1, n - k) over calibration sets)."""
    if n == 0:
        return math.nan
    if k >= n:
        return 1.0
    return _solve(lambda p: float(binom.cdf(k, n, p)), 1 - confidence)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> Rate:
    """``k`` of ``n`` with the two-sided exact (Clopper–Pearson) interval, each tail (1 - confidence) / 2: wider
    than Wilson's, never below its nominal coverage."""
    if n == 0:
        return Rate(0, 0, math.nan, math.nan)
    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else _solve(lambda p: float(binom.sf(k - 1, n, p)), tail)
    return Rate(int(k), int(n), low, clopper_pearson_upper(k, n, 1 - tail))


def _arrays(confidence, answerable) -> tuple[np.ndarray, np.ndarray]:
    c, a = np.asarray(confidence, dtype=float), np.asarray(answerable, dtype=bool)
    if c.shape != a.shape:
        raise ValueError(f"{c.size} confidences for {a.size} queries")
    if np.isnan(c).any():
        raise ValueError("a confidence is NaN: every query needs one (was the arm wrapped in admit(...)?)")
    return c, a


def operating_point(refused, answerable, kinds=None) -> dict[str, Rate]:
    """Correct refusal over abstain queries and wrongful refusal over answerable ones at one operating
    point (``refused``: what the arm did), plus correct refusal per abstain kind when ``kinds`` names them."""
    r, a = np.asarray(refused, dtype=bool), np.asarray(answerable, dtype=bool)
    out = {"correct_refusal": wilson(int((r & ~a).sum()), int((~a).sum())),
           "wrongful_refusal": wilson(int((r & a).sum()), int(a.sum()))}
    if kinds is not None:
        k = np.asarray(kinds, dtype=object)
        for kind in sorted({x for x in k[~a] if x}):
            m = ~a & (k == kind)
            out[f"correct_refusal[{kind}]"] = wilson(int((r & m).sum()), int(m.sum()))
    return out


def tradeoff(confidence, answerable) -> pd.DataFrame:
    """Correct and wrongful refusal rate at every threshold that changes them: each distinct finite
    confidence (refuse what lies strictly below it) and +inf (refuse everything). The first row is the
    threshold that refuses only what has no answer at all."""
    c, a = _arrays(confidence, answerable)
    thresholds = np.r_[np.unique(c[np.isfinite(c)]), np.inf]
    if not np.isfinite(c).any():
        thresholds = np.array([np.inf])
    refused = c[None, :] < thresholds[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame({"threshold": thresholds,
                             "correct_refusal": (refused & ~a).sum(1) / (~a).sum(),
                             "wrongful_refusal": (refused & a).sum(1) / a.sum()})


def auroc(confidence, answerable) -> float:
    """P(an answerable query's confidence > an abstain query's), ties counting one half (the Mann-Whitney
    U over the product of the class sizes); NaN unless both classes are present."""
    c, a = _arrays(confidence, answerable)
    if a.all() or not a.any():
        return math.nan
    c = np.nan_to_num(c, neginf=np.finfo(float).min)  # -inf ranks lowest, like any other lowest value
    return float(mannwhitneyu(c[a], c[~a]).statistic / (a.sum() * (~a).sum()))


def losses(metric, answerable) -> np.ndarray:
    """The loss of answering: 1 - metric for an answerable query, 1 for an abstain query (answering a
    question nothing answers is a full error)."""
    m, a = np.asarray(metric, dtype=float), np.asarray(answerable, dtype=bool)
    return np.where(a, 1.0 - np.nan_to_num(m), 1.0)


def risk_coverage(confidence, loss) -> pd.DataFrame:
    """Risk (mean loss of the answered queries) when the k most confident queries are answered, k = 1..n.
    Inside a band of equal confidence the risk is the expectation over the band's orders (its mean loss),
    so no tie is broken by position."""
    c, lost = np.asarray(confidence, dtype=float), np.asarray(loss, dtype=float)
    n = len(c)
    if n == 0:
        return pd.DataFrame({"coverage": [], "risk": []})
    order = np.argsort(-c, kind="stable")
    c, lost = c[order], lost[order]
    band_start = np.r_[0, np.flatnonzero(c[1:] != c[:-1]) + 1]
    band_end = np.r_[band_start[1:], n]
    risk = np.empty(n)
    done = 0.0
    for s, e in zip(band_start, band_end, strict=True):
        band_mean = lost[s:e].mean()
        for j in range(s, e):  # k = j + 1 answered: the band above fully, (j + 1 - s) of this band
            risk[j] = (done + (j + 1 - s) * band_mean) / (j + 1)
        done += lost[s:e].sum()
    return pd.DataFrame({"coverage": np.arange(1, n + 1) / n, "risk": risk})


def aurc(confidence, loss) -> float:
    """Area under the risk-coverage curve: the mean risk over coverages 1/n .. n/n (lower is better)."""
    rc = risk_coverage(confidence, loss)
    return float(rc["risk"].mean()) if len(rc) else math.nan


def abstention_curve(confidence, metric, rates=MTEB_RATES) -> np.ndarray:
    """Mean metric of the queries kept when the least confident ``round(rate * n)`` abstain (at most n - 1),
    as MTEB computes it (Python's round; equal confidences are kept in input order: a stable sort)."""
    c, m = np.asarray(confidence, dtype=float), np.asarray(metric, dtype=float)
    order = np.argsort(c, kind="stable")
    return np.array([m[order[min(round(r * len(c)), len(c) - 1):]].mean() for r in rates])


def nauc(confidence, metric, rates=MTEB_RATES) -> float:
    """MTEB's normalised area under the abstention curve (Gisserot-Boukhlef et al., arXiv:2402.12997):
    (AUC - flat) / (oracle - flat), trapezoidal areas over ``rates``; the oracle abstains on the worst
    metric first, the flat curve stays at the mean. 1 = oracle, 0 = no better than not abstaining; NaN when
    the oracle is flat (every query scores the same)."""
    rates = np.asarray(rates, dtype=float)
    raw = abstention_curve(confidence, metric, rates)
    oracle = abstention_curve(metric, metric, rates)
    flat = oracle[0] * (rates[-1] - rates[0])
    area, oracle_area = trapezoid(raw, rates), trapezoid(oracle, rates)
    return math.nan if oracle_area == flat else float((area - flat) / (oracle_area - flat))


def calibrate(confidence, answerable, max_wrongful: float) -> float:
    """The threshold that refuses the most abstain queries while refusing at most ``max_wrongful`` of the
    answerable ones. Every threshold between the highest confidence it refuses and the lowest it answers
    refuses the same queries; it returns the shortest decimal there (nearest the middle), for a readable spec."""
    c, a = _arrays(confidence, answerable)
    curve = tradeoff(c, a)
    ok = np.flatnonzero(curve["wrongful_refusal"].to_numpy() <= max_wrongful)
    if not len(ok):
        raise ValueError(f"no threshold keeps wrongful refusal <= {max_wrongful}: queries with no answer at all "
                         "are refused at every threshold")
    j = ok[-1]
    hi = curve["threshold"].iloc[j]
    lo = curve["threshold"].iloc[j - 1] if j else -np.inf
    if not np.isfinite(hi):  # refusing everything is allowed: any threshold above the largest confidence
        return float(np.nextafter(lo, np.inf)) if np.isfinite(lo) else math.inf
    if not np.isfinite(lo):
        return float(hi)
    return short_between(lo, hi)


def short_between(lo: float, hi: float) -> float:
    """The decimal with the fewest digits in (lo, hi], nearest the midpoint: a threshold a person can read."""
    mid = (lo + hi) / 2
    for digits in range(0, 17):
        scale = 10.0 ** digits
        ks = range(math.floor(lo * scale), math.floor(hi * scale) + 2)
        inside = [x for x in (round(k / scale, digits) for k in ks) if lo < x <= hi]
        if inside:
            return min(inside, key=lambda x: abs(x - mid))
    return hi

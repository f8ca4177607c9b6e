"""Measures and paired differences from a person's grades on a sample of each pool plus a judge's predictions
on every pooled page, with intervals that stay valid whatever the judge's quality (prediction-powered
inference, Angelopoulos et al. 2023; PPI++'s power tuning, 2023; stratified by query class).

Design. Every pooled page i of a query is graded by the person independently with a recorded inclusion
probability pi_i (Poisson sampling); the judge gives every pooled page a distribution q_i over gains 0..3,
and must not have seen this query's grades (cross-fitting by query). A page's *corrected* distribution is

    q~_i = q_i + 1[i graded] (delta_{g_i} - q_i) / pi_i        (a signed measure; E q~_i = delta_{g_i})

Why this is exact for nonlinear measures. nDCG's normaliser, the document gain (the best page of a
document) and GoldDoc@3 (any gold document among the first three) are not linear in the page gains, so
correcting each page's gain is unbiased for DCG only. But the *multilinear extension* of a measure f,
F(q_1..q_n) = E[f(g)] with g_i ~ q_i independent, is linear in each q_i separately; since the q~_i are
independent with means delta_{g_i}, E F(q~) = F(delta_g) = f(g): the estimate of every query's measure is
unbiased for any judge. F is computed exactly (never sampled): GoldDoc@3 is one minus a product, a
document's gain distribution is a product per level, and nDCG@10 is a dynamic programme over the multiset
of the ten largest gains (286 states), carrying E[DCG; state] beside the state's mass. When every page is
graded (pi = 1) the estimate is the measure itself. The judge enters through lam * q_i + (1 - lam) * [gain
0]: lam = 0 is the person-only (Horvitz-Thompson) estimate, and any lam keeps the estimate unbiased.

Across queries the per-query estimates are independent (the judge cross-fitted), so the interval is a
t-interval on their mean, stratified by class (each class's variance over its own queries). lam is chosen
per query from a grid to minimise the variance of the *other* queries of its class (cross-fitted: a query's
own grades never choose its lam, which keeps its estimate unbiased). Everything here is pure.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats as _st

from .measures import GOLD_GAIN, _log2, to_docs
from .records import split_page_id

GAINS = 4  # gains 0..3
DEPTH = 10  # nDCG@10's cutoff, at page and document level
GOLD_TOP = 3  # GoldDoc@3's documents
MEASURES = ("nDCG@10", "nDCG@10(doc)", "GoldDoc@3")
LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0)  # the judge's weight; 0 = the person's grades alone


# --------------------------------------------------------------------------------------------------------
# Pages: label distributions


def distributions(p_ge1: np.ndarray, p_ge2: np.ndarray, p_eq3: np.ndarray) -> np.ndarray:
    """(n, 4) gain distributions from the judge's P(gain >= 1), P(gain >= 2), P(gain = 3), made monotone
    (P(>= 2) <= P(>= 1)) and clipped to [0, 1] so a careless judge still yields distributions."""
    p1 = np.clip(np.asarray(p_ge1, dtype=float), 0, 1)
    p2 = np.minimum(np.clip(np.asarray(p_ge2, dtype=float), 0, 1), p1)
    p3 = np.minimum(np.clip(np.asarray(p_eq3, dtype=float), 0, 1), p2)
    return np.stack([1 - p1, p1 - p2, p2 - p3, p3], axis=-1)


def corrected(prior: np.ndarray, grade: np.ndarray, pi: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """The per-page signed distributions q~ (module docstring): the judge's ``prior`` shrunk by ``lam``
    towards gain 0, plus each graded page's (delta_grade - prior) / pi. ``grade`` is -1 where the person
    did not grade; ``pi`` is each page's inclusion probability (only graded pages' are used)."""
    shrunk = lam * prior
    shrunk[:, 0] += 1.0 - lam
    graded = grade >= 0
    if not graded.any():
        return shrunk
    if np.any(pi[graded] <= 0) or np.any(pi[graded] > 1):
        raise ValueError("a graded page's inclusion probability must lie in (0, 1]")
    delta = np.zeros((int(graded.sum()), GAINS))
    delta[np.arange(len(delta)), grade[graded]] = 1.0
    shrunk[graded] += (delta - shrunk[graded]) / pi[graded, None]
    return shrunk


def below(dist: np.ndarray) -> np.ndarray:
    """(n, 3): P(gain < k) for k = 1, 2, 3, linear in each distribution."""
    return np.cumsum(dist[:, :3], axis=1)


def doc_distributions(dist: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
    """(n_docs, 4): each document's best-page gain distribution, P(max < k) = prod over its pages of
    P(gain < k): multilinear in the pages (each page belongs to one document)."""
    under = np.ones((n_docs, 3))
    np.multiply.at(under, doc, below(dist))
    return np.column_stack([under[:, 0], np.diff(under, axis=1), 1 - under[:, 2]])


# --------------------------------------------------------------------------------------------------------
# nDCG@10's dynamic programme over the top-10 multiset of gains


@cache
def _states() -> tuple[np.ndarray, np.ndarray]:
    """Every multiset of at most DEPTH positive gains as counts (c3, c2, c1); ``trans[k, s]`` the state after
    adding a page of gain k (the top DEPTH kept); ``inv_idcg[s]`` 1 / ideal DCG (0 for the empty state)."""
    states = [(a, b, c) for a in range(DEPTH + 1) for b in range(DEPTH + 1 - a) for c in range(DEPTH + 1 - a - b)]
    index = {s: i for i, s in enumerate(states)}
    trans = np.zeros((GAINS, len(states)), dtype=np.int64)
    inv = np.zeros(len(states))
    for i, s in enumerate(states):
        gains = [3] * s[0] + [2] * s[1] + [1] * s[2]
        idcg = sum(g / _log2(r) for r, g in enumerate(gains))
        inv[i] = 1.0 / idcg if idcg else 0.0
        for k in range(GAINS):
            top = sorted([*gains, k] if k else gains, reverse=True)[:DEPTH]
            trans[k, i] = index[(top.count(3), top.count(2), top.count(1))]
    return trans, inv


def expected_ndcg(dist: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """E[nDCG] per arm under independent gains ``dist`` (n, 4), signed allowed: ``weights[a, i]`` is
    1 / log2(rank + 1) where arm a ranks unit i in its first DEPTH, else 0. A unit with a certain gain of 0
    changes nothing and is skipped."""
    trans, inv = _states()
    n_arms, n_states = weights.shape[0], trans.shape[1]
    mass, moment = np.zeros(n_states), np.zeros((n_arms, n_states))
    mass[0] = 1.0
    flat = trans[:, None, :] + n_states * np.arange(n_arms)[None, :, None]  # (k, arm, state) -> arm * S + next
    k = np.arange(GAINS, dtype=float)
    for q, w in zip(dist, weights.T):
        if q[0] == 1.0 and not q[1:].any():
            continue
        mom = q[:, None, None] * (moment[None] + (w[None, :, None] * k[:, None, None]) * mass[None, None, :])
        moment = np.bincount(flat.ravel(), mom.ravel(), minlength=n_arms * n_states).reshape(n_arms, n_states)
        mass = np.bincount(trans.ravel(), (q[:, None] * mass[None, :]).ravel(), minlength=n_states)
    return moment @ inv


def expected_golddoc(dist: np.ndarray, member: np.ndarray) -> np.ndarray:
    """E[GoldDoc@3] per arm: one minus the product of P(gain < GOLD_GAIN) over the pooled pages of the arm's
    first three documents (``member[a, i]``)."""
    miss = below(dist)[:, GOLD_GAIN - 1]
    return 1.0 - np.prod(np.where(member, miss[None, :], 1.0), axis=1)


# --------------------------------------------------------------------------------------------------------
# One query's pool


@dataclass(frozen=True)
class Pool:
    """One query's pooled pages with the judge's distributions, the person's grades (-1: not graded) and
    inclusion probabilities, and the arms' rankings as weights over the pooled pages and documents."""

    query: str
    cls: str
    pages: tuple[str, ...]
    prior: np.ndarray  # (n, 4)
    grade: np.ndarray  # (n,) int, -1 where not graded
    pi: np.ndarray  # (n,)
    doc: np.ndarray  # (n,) document index of each page
    page_weights: np.ndarray  # (arms, n)
    doc_weights: np.ndarray  # (arms, docs)
    gold_member: np.ndarray  # (arms, n) bool: the page's document is among the arm's first three

    def estimate(self, lam: float) -> np.ndarray:
        """(measures, arms): every measure of :data:`MEASURES` for every arm, unbiased for any judge."""
        q = corrected(self.prior.copy(), self.grade, self.pi, lam)
        docs = doc_distributions(q, self.doc, self.doc_weights.shape[1])
        return np.stack([expected_ndcg(q, self.page_weights), expected_ndcg(docs, self.doc_weights),
                         expected_golddoc(q, self.gold_member)])


def _rank_weights(ranked: Sequence[str], index: Mapping[str, int], size: int) -> np.ndarray:
    w = np.zeros(size)
    for r, unit in enumerate(ranked[:DEPTH]):
        if unit in index:
            w[index[unit]] = 1.0 / _log2(r)
    return w


def pool(query: str, cls: str, rankings: Mapping[str, Sequence[str]], prior: Mapping[str, np.ndarray],
         grades: Mapping[str, tuple[int, float]]) -> Pool:
    """A query's :class:`Pool`: the pages the judge predicted (``prior``: page id -> 4 gain probabilities)
    or the person graded (``grades``: page id -> (gain, inclusion probability)); a graded page without a
    prediction is predicted gain 0. A ranked page outside the pool has gain 0 (unjudged), as in
    :mod:`evalkit.measures`. Arms are in the order of ``rankings``."""
    pages = tuple(dict.fromkeys([*prior, *grades]))
    index = {p: i for i, p in enumerate(pages)}
    doc_names = tuple(dict.fromkeys(split_page_id(p)[0] for p in pages))
    doc_index = {d: i for i, d in enumerate(doc_names)}
    doc = np.array([doc_index[split_page_id(p)[0]] for p in pages], dtype=np.int64)
    zero = np.eye(GAINS)[0]
    dist = np.array([prior.get(p, zero) for p in pages], dtype=float).reshape(-1, GAINS)
    grade = np.array([grades[p][0] if p in grades else -1 for p in pages], dtype=np.int64)
    pi = np.array([grades[p][1] if p in grades else 1.0 for p in pages], dtype=float)
    arms = list(rankings.values())
    page_w = np.array([_rank_weights(r, index, len(pages)) for r in arms]).reshape(len(arms), len(pages))
    docs_of = [to_docs(r) for r in arms]
    doc_w = np.array([_rank_weights(d, doc_index, len(doc_names)) for d in docs_of]).reshape(len(arms), len(doc_names))
    top3 = [{doc_index[d] for d in ds[:GOLD_TOP] if d in doc_index} for ds in docs_of]
    member = np.array([[int(d) in t for d in doc] for t in top3], dtype=bool).reshape(len(arms), len(pages))
    return Pool(query, cls, pages, dist, grade, pi, doc, page_w, doc_w, member)


def table(pools: Sequence[Pool], lambdas: Sequence[float] = LAMBDAS) -> np.ndarray:
    """(lambdas, queries, measures, arms): every query's estimates at every judge weight."""
    return np.array([[p.estimate(lam) for p in pools] for lam in lambdas]).reshape(
        len(lambdas), len(pools), len(MEASURES), -1)


# --------------------------------------------------------------------------------------------------------
# Across queries: stratified, power-tuned, cross-fitted


def cross_fitted(values: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """(queries,): each query's value at the judge weight (row of ``values``, (lambdas, queries)) whose
    variance over the *other* queries of its stratum is smallest; a stratum of one query takes the first
    row (the person alone). A query's own grades never choose its weight, so its estimate stays unbiased."""
    out = values[0].copy()
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        if idx.size < 3:
            continue
        v = values[:, idx]
        n = idx.size - 1
        total, squares = v.sum(axis=1, keepdims=True), (v**2).sum(axis=1, keepdims=True)
        rest_mean = (total - v) / n
        rest_var = ((squares - v**2) - n * rest_mean**2) / (n - 1)  # (lambdas, queries of s)
        out[idx] = v[np.argmin(rest_var, axis=0), np.arange(idx.size)]
    return out


@dataclass(frozen=True)
class Interval:
    """A stratified mean with its t-interval: ``n`` queries, ``df`` Welch-Satterthwaite's degrees of
    freedom, ``se`` its standard error."""

    mean: float
    low: float
    high: float
    se: float
    n: int
    df: float


def stratified(values: np.ndarray, strata: np.ndarray, confidence: float = 0.95) -> Interval:
    """The mean of ``values`` weighting each stratum by its share of the queries (the plain mean), with
    the stratified standard error (each stratum's own variance) and a Welch-Satterthwaite t-interval. A
    stratum of one query contributes no variance estimate: it borrows the pooled variance of the others."""
    n = values.size
    parts = []
    for s in np.unique(strata):
        v = values[strata == s]
        parts.append((v.size, v.var(ddof=1) if v.size > 1 else math.nan))
    pooled = np.nanmean([var for _, var in parts]) if any(not math.isnan(var) for _, var in parts) else math.nan
    terms = [(m / n) ** 2 * (pooled if math.isnan(var) else var) / m for m, var in parts]
    se = math.sqrt(sum(terms)) if n > 1 else math.nan
    denom = sum(t**2 / max(m - 1, 1) for t, (m, _) in zip(terms, parts))
    df = (se**4 / denom) if denom > 0 else max(n - 1, 1)
    mean = float(values.mean()) if n else math.nan
    half = float(_st.t.ppf(0.5 + confidence / 2, df)) * se if se > 0 else 0.0
    return Interval(mean, mean - half, mean + half, se, n, df)


@dataclass(frozen=True)
class Estimate:
    """One measure's paired difference b - a (or one arm's mean, ``a`` empty) over a slice of queries:
    the prediction-powered interval, the person-only interval from the same grades, the effective number
    of queries (how many queries the person-only estimate would need for the same standard error), and the
    judge-person correlation on the graded pages of the slice."""

    measure: str
    a: str
    b: str
    cls: str
    interval: Interval
    person_only: Interval
    correlation: float
    graded: int

    @property
    def n_eff(self) -> float:
        """Queries the person-only estimate would need for this standard error."""
        p, s = self.person_only.se, self.interval.se
        return self.interval.n * (p / s) ** 2 if s > 0 else math.inf

    @property
    def gain(self) -> float:
        """1 - width / person-only width: the interval's real narrowing (negative: wider)."""
        p, s = self.person_only.se, self.interval.se
        return 1 - s / p if p > 0 else math.nan

    @property
    def verdict(self) -> str:
        """"better" (low > 0), "worse" (high < 0) or "undecided"."""
        i = self.interval
        return "better" if i.low > 0 else "worse" if i.high < 0 else "undecided"

    def text(self) -> str:
        i = self.interval
        sign = "+" if self.a else ""
        return (f"{i.mean:{sign}.3f} [{i.low:{sign}.3f}, {i.high:{sign}.3f}] n={i.n} n_eff={self.n_eff:.0f} "
                f"rho={self.correlation:.2f} gain={self.gain:+.0%} ({self.graded} pages graded)")


def correlation(pools: Sequence[Pool]) -> tuple[float, int]:
    """Pearson correlation of the person's grade with the judge's expected gain over the graded pages,
    and how many there are (NaN below three or without spread)."""
    g = np.concatenate([p.grade[p.grade >= 0] for p in pools]) if pools else np.zeros(0)
    e = np.concatenate([p.prior[p.grade >= 0] @ np.arange(GAINS) for p in pools]) if pools else np.zeros(0)
    if g.size < 3 or g.std() == 0 or e.std() == 0:
        return math.nan, int(g.size)
    return float(np.corrcoef(g, e)[0, 1]), int(g.size)


def paired(est: np.ndarray, pools: Sequence[Pool], arms: Sequence[str], measure: str, a: str | None, b: str,
           cls: str = "all", confidence: float = 0.95) -> Estimate:
    """The estimate of ``measure``'s mean difference b - a (``a`` None: b's mean) over the pools' queries
    (``est``: :func:`table` of these pools), stratified by class, the judge's weight cross-fitted."""
    m = MEASURES.index(measure)
    vals = est[:, :, m, arms.index(b)] - (est[:, :, m, arms.index(a)] if a is not None else 0.0)
    strata = np.array([p.cls for p in pools])
    rho, graded = correlation(pools)
    return Estimate(measure, a or "", b, cls, stratified(cross_fitted(vals, strata), strata, confidence),
                    stratified(vals[0], strata, confidence), rho, graded)


# --------------------------------------------------------------------------------------------------------
# Sampling designs


def uniform_pi(n: int, budget: float) -> np.ndarray:
    """Each of ``n`` pooled pages graded with probability budget / n (capped at 1): ``budget`` pages
    expected per query."""
    return np.full(n, min(1.0, budget / n) if n else 1.0)


def informed_pi(prior: np.ndarray, budget: float, floor: float = 0.5) -> np.ndarray:
    """Inclusion probabilities spending ``budget`` expected pages where the judge is unsure: a share
    ``floor`` spread evenly (so no page's weight 1 / pi can explode when the judge is confidently wrong),
    the rest in proportion to the judge's standard deviation of the gain (Neyman allocation), capped at 1
    with the excess handed on to the others."""
    n = len(prior)
    if budget >= n:
        return np.ones(n)
    mean = prior @ np.arange(GAINS)
    sd = np.sqrt(np.maximum(prior @ np.arange(GAINS) ** 2 - mean**2, 0))
    share = floor / n + (1 - floor) * (sd / sd.sum() if sd.sum() > 0 else np.full(n, 1 / n))
    pi = np.zeros(n)
    free = np.ones(n, dtype=bool)
    while True:  # cap at 1, spread what is left over the uncapped pages
        left = budget - (~free).sum()
        pi[free] = left * share[free] / share[free].sum()
        over = free & (pi >= 1)
        if not over.any():
            return np.where(free, pi, 1.0)
        free &= ~over


def draw(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Poisson sampling: each page independently with its probability (the design the estimates assume)."""
    return rng.random(pi.shape) < pi

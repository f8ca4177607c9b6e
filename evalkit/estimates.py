"""Measures and paired differences from a person's grades plus a judge's predictions on every pooled page,
with intervals that stay valid whatever the judge's quality: prediction-powered inference (Angelopoulos et
al., Science 2023), PPI++'s power tuning (Angelopoulos, Duchi & Zrnic 2023) and stratified PPI by query
class (Fisch et al., NeurIPS 2024), as Oosterhuis et al. (KDD 2024) apply PPI to IR measures.

The judge gives every pooled page a distribution q_i over gains 0..3 and must not have seen the grades of
the query it predicts (cross-fitting by query). Its prediction of a query's measure is the measure's
*multilinear extension* F(q) = E[f(g)], g_i ~ q_i independent, computed exactly (never sampled): GoldDoc@3
is one minus a product, a document's gain distribution a product per level, nDCG@10 a dynamic programme over
the multiset of the ten largest gains (286 states) carrying E[DCG; state] beside the state's mass.

Two designs, both unbiased for any judge:

* **Pages** (:func:`corrected`): every pooled page graded independently with a recorded probability pi_i;
  q~_i = q_i + 1[graded] (delta_{g_i} - q_i) / pi_i. F is linear in each q_i separately and the q~_i are
  independent with means delta_{g_i}, so E F(q~) = f(g), nonlinear normaliser, document maximum and
  GoldDoc@3 included. But the signed q~ multiply (weights 1 / pi on several pages at once), so with a few
  graded pages per pool one query's estimate varies far more than queries do
  (docs/deciding-with-few-grades.md measures it). Use it only where most of a pool is graded.
* **Queries** (:func:`ppi_mean`, :func:`stratified_ppi`, :func:`estimate`): a random set of queries graded
  whole (their measures exact), the judge's F(q) on every query; the PPI++ mean. What the replays use.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from .measures import GOLD_GAIN, _log2, to_docs
from .records import page_id, split_page_id

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


def _scatter(index: np.ndarray, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``values`` into a zero array of ``shape`` at the flat ``index``es."""
    return np.bincount(index, values.ravel(), minlength=math.prod(shape)).astype(float).reshape(shape)


def expected_ndcg(dist: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """E[nDCG] per arm under independent gains ``dist`` ((n, 4), or (batch, n, 4) for several versions of
    the same pool at once; signed allowed): ``weights[a, i]`` is 1 / log2(rank + 1) where arm a ranks unit
    i in its first DEPTH, else 0. Returns (arms,) or (batch, arms). A unit whose gain is 0 for certain in
    every version changes nothing and is skipped."""
    trans, inv = _states()
    d = dist[None] if dist.ndim == 2 else dist
    n_batch, n_arms, n_states = d.shape[0], weights.shape[0], trans.shape[1]
    mass, moment = np.zeros((n_batch, n_states)), np.zeros((n_batch, n_arms, n_states))
    mass[:, 0] = 1.0
    rows = n_states * np.arange(n_batch * n_arms).reshape(n_batch, 1, n_arms, 1)
    flat = (trans[None, :, None, :] + rows).ravel()  # (batch, k, arm, state) -> (batch * arms + arm) * S + next
    flat_mass = (trans[None] + n_states * np.arange(n_batch)[:, None, None]).ravel()
    k = np.arange(GAINS, dtype=float)[None, :, None, None]
    for i in range(d.shape[1]):
        q = d[:, i, :]  # (batch, 4)
        if np.all(q[:, 0] == 1.0) and not q[:, 1:].any():
            continue
        w = weights[None, None, :, i, None]
        mom = q[:, :, None, None] * (moment[:, None] + w * k * mass[:, None, None, :])
        moment = _scatter(flat, mom, moment.shape)
        mass = _scatter(flat_mass, q[:, :, None] * mass[:, None, :], mass.shape)
    out = moment @ inv
    return out[0] if dist.ndim == 2 else out


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

    def estimate(self, lambdas: Sequence[float] = LAMBDAS) -> np.ndarray:
        """(lambdas, measures, arms): every measure of :data:`MEASURES` for every arm at every judge
        weight, each unbiased for any judge."""
        q = np.stack([corrected(self.prior.copy(), self.grade, self.pi, lam) for lam in lambdas])
        docs = np.stack([doc_distributions(x, self.doc, self.doc_weights.shape[1]) for x in q])
        gold = np.stack([expected_golddoc(x, self.gold_member) for x in q])
        return np.stack([expected_ndcg(q, self.page_weights), expected_ndcg(docs, self.doc_weights), gold], axis=1)


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


COLUMNS = ("query", "doc", "page", "p_ge1", "p_ge2", "p_eq3")  # the judge's predictions table


def read_predictions(path: Path) -> pd.DataFrame:
    """A judge's predictions table (csv or parquet, :data:`COLUMNS`); ValueError naming the file and what is
    wrong: unreadable, a missing column, or a probability outside [0, 1]."""
    try:
        table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read the judge's predictions ({e})") from None
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: the judge's predictions lack the column(s) {', '.join(missing)}")
    probs = table[list(COLUMNS[3:])].apply(pd.to_numeric, errors="coerce")
    if probs.isna().any().any() or ((probs < 0) | (probs > 1)).any().any():
        raise ValueError(f"{path}: every p_ge1, p_ge2, p_eq3 must be a probability in [0, 1]")
    return table


def predicted(queries: Sequence[tuple[str, str]], rankings: Mapping[str, Mapping[str, Sequence[str]]],
              predictions: pd.DataFrame) -> np.ndarray:
    """(queries, measures, arms): every query's measures expected under the judge's ``predictions`` (the
    judge's table: query, doc, page, p_ge1, p_ge2, p_eq3), for ``queries`` as (id, class) and the arms'
    ``rankings`` ({arm: {query id: page ids in order}}). A page the judge did not predict has gain 0."""
    by_query = dict(tuple(predictions.groupby("query", sort=False)))
    out = []
    for qid, cls in queries:
        t = by_query.get(qid, predictions.iloc[:0])
        dist = distributions(t["p_ge1"].to_numpy(), t["p_ge2"].to_numpy(), t["p_eq3"].to_numpy())
        prior = {page_id(d, int(p)): x for d, p, x in zip(t["doc"], t["page"], dist, strict=True)}
        ranked = {a: by_q.get(qid, ()) for a, by_q in rankings.items()}
        out.append(pool(qid, cls, ranked, prior, {}).estimate((1.0,))[0])
    return np.array(out).reshape(len(queries), len(MEASURES), len(rankings))


# --------------------------------------------------------------------------------------------------------
# Across queries: prediction-powered means (PPI++), stratified by class


@dataclass(frozen=True)
class Interval:
    """A mean with its interval: ``n`` queries graded by the person, ``unlabeled`` predicted only, ``lam``
    the judge's weight (0: the person's grades alone), ``df`` the t quantile's degrees of freedom."""

    mean: float
    low: float
    high: float
    se: float
    n: int
    unlabeled: int
    lam: float
    df: float


# the two pseudo-queries' distance from the mean: the smallest of 0.25, 0.35, 0.5 keeping GoldDoc@3 covered
PSEUDO = 0.35
STRATUM = 10  # the fewest graded queries per class for a stratified estimate


def _var(x: np.ndarray) -> float:
    return float(x.var(ddof=1)) if x.size > 1 else math.nan


def _guarded_var(x: np.ndarray) -> float:
    """The sample variance with two pseudo-queries at mean +- PSEUDO added (as Agresti-Coull adds pseudo
    counts): a handful of graded queries that happen to agree (GoldDoc@3's difference is 0 on most queries)
    would otherwise give a zero-width interval; the guard fades as 2 / (n + 1)."""
    if x.size < 2:
        return math.nan
    return float((((x - x.mean()) ** 2).sum() + 2 * PSEUDO**2) / (x.size + 1))


def power_tuned(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimising judge weight for a mean (Angelopoulos, Duchi & Zrnic 2023, ppi-python's
    ``_calc_lam_glm``): Cov(Y, Yhat) / ((1 + n / N) Var(Yhat)), clipped to [0, 1]; 0 without spread."""
    n, big = y.size, yhat_unlabeled.size
    var = _var(np.concatenate([yhat, yhat_unlabeled]))
    if n < 2 or big == 0 or not var > 0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1 + n / big) * var), 0.0, 1.0))


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, lam: float | None = None,
             confidence: float = 0.95) -> Interval:
    """The prediction-powered mean: lam * mean(Yhat over the unlabeled) + mean(Y - lam * Yhat over the
    labeled), unbiased for any judge and any fixed lam; its standard error adds both parts' variances (the
    two sets are disjoint, so independent). t quantile with n - 1 degrees of freedom (ppi-python uses the
    normal one; with a handful of graded queries it undercovers). ``lam`` None: :func:`power_tuned`."""
    y, yhat, unl = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_unlabeled))
    lam = power_tuned(y, yhat, unl) if lam is None else lam
    n, big = y.size, unl.size
    rect = y - lam * yhat
    mean = lam * (unl.mean() if big else 0.0) + (rect.mean() if n else math.nan)
    var = _guarded_var(rect) / n if n > 1 else math.nan
    var += lam**2 * (_var(unl) / big if big > 1 else 0.0)
    return _interval(mean, var, n - 1, n, big, lam, confidence)


def _interval(mean: float, var: float, df: float, n: int, big: int, lam: float, confidence: float) -> Interval:
    from scipy import special  # here: `evalkit run` reads predictions through this module, and scipy takes a second

    se = math.sqrt(var) if var >= 0 else math.nan
    half = (float(special.stdtrit(df, 0.5 + confidence / 2)) * se  # Student's t quantile times the error
            if df >= 1 and se > 0 else 0.0 if se == 0 else math.nan)
    return Interval(float(mean), float(mean - half), float(mean + half), se, n, big, lam, df)


def stratified_ppi(y: np.ndarray, yhat: np.ndarray, strata: np.ndarray, yhat_unlabeled: np.ndarray,
                   strata_unlabeled: np.ndarray, lam: float | None = None, confidence: float = 0.95) -> Interval:
    """Stratified PPI (Fisch et al. 2024): :func:`ppi_mean` within each stratum (its own judge weight), the
    strata weighted by their share of all queries, degrees of freedom by Welch-Satterthwaite. Falls back to
    one stratum when a stratum has fewer than STRATUM graded queries (its variance and judge weight would
    rest on too few queries; measured: stratifying 4 classes of ~5 graded queries widened the interval)."""
    names = np.unique(np.concatenate([strata, strata_unlabeled]))
    counts = {s: int((strata == s).sum()) for s in names}
    if len(names) < 2 or min(counts.values()) < STRATUM:
        return ppi_mean(y, yhat, yhat_unlabeled, lam, confidence)
    total = strata.size + strata_unlabeled.size
    parts = [(((strata == s).sum() + (strata_unlabeled == s).sum()) / total,
              ppi_mean(y[strata == s], yhat[strata == s], yhat_unlabeled[strata_unlabeled == s], lam, confidence))
             for s in names]
    mean = sum(w * p.mean for w, p in parts)
    terms = [(w * p.se) ** 2 for w, p in parts]
    var = sum(terms)
    df = var**2 / sum(t**2 / max(p.n - 1, 1) for t, (_, p) in zip(terms, parts,
                                                                  strict=True)) if var > 0 else strata.size - 1
    lam_mean = sum(w * p.lam for w, p in parts)
    return _interval(mean, var, df, strata.size, strata_unlabeled.size, lam_mean, confidence)


@dataclass(frozen=True)
class Estimate:
    """One measure's paired difference b - a (or arm b's mean, ``a`` empty) over a slice of queries: the
    prediction-powered interval, the person-only interval from the same graded queries, the judge-person
    correlation of the per-query values on the graded queries, and what both imply."""

    measure: str
    a: str
    b: str
    cls: str
    interval: Interval
    person_only: Interval
    correlation: float
    pages_per_query: float | None = None  # pages a person reads to grade an ungraded query whole, on average

    @property
    def n_eff(self) -> float:
        """Graded queries the person-only estimate would need for this standard error."""
        p, s = self.person_only.se, self.interval.se
        return self.person_only.n * (p / s) ** 2 if s > 0 and p == p else math.nan

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

    def more_to_grade(self, margin: float = 0.0, power: float = 0.8, alpha: float = 0.05) -> int:
        """How many more queries, drawn at random from the ungraded ones, the person should grade whole for
        the interval (at level ``alpha``: the interval's own) to decide about ``margin`` (0: the sign) with
        probability ``power`` if the difference is what it looks like now (:func:`graded_needed` from this
        estimate's spread and judge correlation); 0 when it decides already, at least 1 when it does not
        (the normal approximation may say the queries graded suffice where the t interval is still open),
        ``unlabeled`` + 1 when grading every query would not do."""
        i, p = self.interval, self.person_only
        if i.low > margin or i.high < margin:
            return 0
        sd = p.se * math.sqrt(p.n) if p.se == p.se else math.nan
        if not sd > 0:
            return i.unlabeled + 1
        rho = self.correlation if self.correlation == self.correlation else 0.0
        total = i.n + i.unlabeled
        return max(1, graded_needed(i.mean - margin, sd, rho, total, alpha, power) - i.n)

    def text(self) -> str:
        """The interval, what it rests on and, when undecided, what deciding takes (in pages too when the
        pages an ungraded query leaves to read are known)."""
        i, sign = self.interval, "+" if self.a else ""
        return (f"{interval_text(i, sign)}  {i.n} of {i.n + i.unlabeled} queries graded"
                + (f", n_eff {self.n_eff:.0f}" if self.n_eff == self.n_eff else "") + self.agreement() + self._next())

    def agreement(self) -> str:
        """", judge-person r …, … narrower than the person alone": each part only where it is a number."""
        return ((f", judge-person r {self.correlation:.2f}" if self.correlation == self.correlation else "")
                + (f", {self.gain:+.0%} narrower than the person alone" if self.gain == self.gain else ""))

    def pages_to_grade(self) -> int | None:
        """What :meth:`more_to_grade` is in pages to read (None: not known)."""
        return None if self.pages_per_query is None else round(self.more_to_grade() * self.pages_per_query)

    def _next(self) -> str:
        if self.verdict != "undecided":
            return f"; {self.verdict}"
        k = self.more_to_grade()
        if k > self.interval.unlabeled:
            return f"; {NOT_DECIDABLE}"
        return "; " + to_grade(k, self.pages_to_grade(), approx=True)


NOT_DECIDABLE = ("undecided: grading every query would not decide it; write more queries (evalkit qrels plan "
                 "--judge says how many)")


def to_grade(k: int, pages: int | None = None, approx: bool = False, queries: Sequence[str] = (),
             shown: int = 10) -> str:
    """What deciding takes, in a person's words, the same in every place that says it (compare, gate,
    gate.json, the report, the workbench): "undecided: grade 4 more queries (≈ 37 pages): q12, q31, …".
    Whole queries, drawn at random: the person grades every pooled page of each (the per-page correction
    was measured too noisy, docs/deciding-with-few-grades.md). ``pages``: what that is to read (``approx``:
    estimated, not counted from the queries' pools); ``queries``: which, the first ``shown`` named."""
    what = f"grade {k} more {'query' if k == 1 else 'queries'}"
    if pages is not None:
        what += f" ({'≈ ' if approx else ''}{pages} page{'' if pages == 1 else 's'})"
    if queries:
        what += ": " + ", ".join(queries[:shown]) + (", …" if len(queries) > shown else "")
    return f"undecided: {what}"


def _corr(y: np.ndarray, yhat: np.ndarray) -> float:
    if y.size < 3 or y.std() == 0 or yhat.std() == 0:
        return math.nan
    return float(np.corrcoef(y, yhat)[0, 1])


def estimate(truth: np.ndarray, predicted: np.ndarray, graded: np.ndarray, strata: np.ndarray, measure: str,
             arms: Sequence[str], b: str, a: str | None = None, cls: str = "all",
             confidence: float = 0.95) -> Estimate:
    """The :class:`Estimate` of ``measure``'s mean difference b - a (``a`` None: b's mean). ``truth`` and
    ``predicted`` are (queries, measures, arms): the measures under the person's grades (read only where
    ``graded``) and their expectation under the judge (:meth:`Pool.estimate` without grades)."""
    m = MEASURES.index(measure)

    def col(x: np.ndarray) -> np.ndarray:
        return x[:, m, arms.index(b)] - (x[:, m, arms.index(a)] if a is not None else 0.0)

    return of_values(col(truth), col(predicted), graded, strata, measure, b, a or "", cls, confidence,
                     (-1.0, 1.0) if a is not None else (0.0, 1.0))


def of_values(truth: np.ndarray, predicted: np.ndarray, graded: np.ndarray, strata: np.ndarray, measure: str,
              b: str, a: str = "", cls: str = "all", confidence: float = 0.95,
              bounds: tuple[float, float] = (-1.0, 1.0)) -> Estimate:
    """The :class:`Estimate` of the mean of one per-query value: ``truth`` under the person's grades (read
    only where ``graded``), ``predicted`` its expectation under the judge, for every query. The value lies
    in ``bounds`` (every measure lies in [0, 1], so a paired difference in [-1, 1]): the intervals are cut
    to that range (a t interval on two graded queries reached +-1.27), which keeps their coverage."""
    y, yhat = truth[graded], predicted
    ppi = stratified_ppi(y, yhat[graded], strata[graded], yhat[~graded], strata[~graded], None, confidence)
    alone = ppi_mean(y, yhat[graded], yhat[~graded], 0.0, confidence)
    return Estimate(measure, a, b, cls, within(ppi, *bounds), within(alone, *bounds), _corr(y, yhat[graded]))


def within(i: Interval, low: float, high: float) -> Interval:
    """``i`` cut to [low, high], where the estimated mean is known to lie; a missing bound stays missing."""
    return dataclasses.replace(i, low=min(max(i.low, low), high), high=max(min(i.high, high), low))


def interval_text(i: Interval, sign: str = "+") -> str:
    """``mean [low, high]``, or why there is no interval: no query graded here, or too few for a spread."""
    if i.mean != i.mean:
        return "unknown: no graded query here"
    if i.low != i.low:
        return f"{i.mean:{sign}.3f} (no interval: {i.n} graded {'query' if i.n == 1 else 'queries'} here)"
    return f"{i.mean:{sign}.3f} [{i.low:{sign}.3f}, {i.high:{sign}.3f}]"


def pairs(truth: np.ndarray, predicted_: np.ndarray, graded: np.ndarray, strata: np.ndarray, arms: Sequence[str],
          confidence: float = 0.95) -> list[Estimate]:
    """:func:`estimate` of every measure and every ordered pair of ``arms`` (b against a): what a gate
    decides on."""
    return [estimate(truth, predicted_, graded, strata, m, arms, b, a, confidence=confidence)
            for m in MEASURES for a in arms for b in arms if a != b]


def graded_needed(delta: float, sd: float, rho: float, total: int, alpha: float = 0.05, power: float = 0.8) -> int:
    """The fewest of ``total`` queries a person must grade whole for the power-tuned PPI interval to detect a
    true difference ``delta`` with probability ``power`` at level ``alpha`` (normal approximation), when
    per-query differences have standard deviation ``sd`` and the judge's predictions of them correlation
    ``rho`` (both from a pilot). With the variance-minimising weight the variance is
    sd^2 / n * (1 - rho^2 (total - n) / total); ``total`` + 1 when grading every query would not do."""
    from scipy import special

    z = special.ndtri(1 - alpha / 2) + special.ndtri(power)
    target = (abs(delta) / z) ** 2
    for n in range(2, total + 1):
        if sd**2 / n * (1 - rho**2 * (total - n) / total) <= target:
            return n
    return total + 1

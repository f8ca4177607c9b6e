"""Deciding with few grades, replayed against the full judgments: do prediction-powered intervals keep the
gate's decisions when a person grades only a few queries and a judge predicts the rest?

The recorded judgments are the person. At each budget of person-graded pages per query (on average,
against today's depth-10 pool) a random set of answerable queries is graded whole, as many as the budget
pays for (at least 4); a judge gives its expected measures for every query
(:func:`evalkit.estimates.predicted`); for every measure and ordered pair of arms the interval of
:func:`evalkit.estimates.estimate` is set beside the full judgments' mean difference (covered?) and
verdict: *equal*, *undecided*, *opposite* or *false* (significant where the full judgments are not).

A judge that learns from grades (the local judge) may learn only from the draw's graded queries, and a
graded query's prediction must not come from its own grades: :func:`cross_predict` fits one judge per
fold of the graded queries, predicts that fold with it and every ungraded query with the mean of the fold
judges (cross-prediction-powered inference: Zrnic & Candès, PNAS 2024).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import estimates, measures, recorded, stats
from .atomic import replacing
from .autojudge import features, model, session
from .qrels import QuerySet
from .records import page_id

BUDGETS = (1.0, 2.0, 3.0, 5.0, 10.0)  # person-graded pages per query, on average
DEPTH = 10
OUTCOMES = ("equal", "undecided", "opposite", "false")
CHANCES = ["p_ge1", "p_ge2", "p_eq3"]
Judge = Callable[[np.ndarray], np.ndarray]  # graded queries (mask) -> (queries, measures, arms) expected
SPEC = model.Spec()  # the judge `evalkit qrels judge` trains by default


@dataclass(frozen=True, eq=False)
class Replayed:
    """A query set's answerable queries as a replay reads them: (id, class), the arms, every query's
    measures under the full judgments (queries, measures, arms), its depth-10 pool's size, the arms' rankings
    as page ids and the full judgments' verdict per (measure, a, b): (mean difference b - a, verdict)."""

    name: str
    queries: tuple[tuple[str, str], ...]
    arms: tuple[str, ...]
    full: np.ndarray
    cost: np.ndarray
    ranked: Mapping[str, Mapping[str, Sequence[str]]]
    truths: Mapping[tuple[str, str, str], tuple[float, str]]

    @property
    def strata(self) -> np.ndarray:
        return np.array([c for _, c in self.queries])


def pool_pages(rankings: Mapping[str, Sequence]) -> list:
    """The depth-10 pool: what a person grading a query whole reads."""
    return list(dict.fromkeys(p for r in rankings.values() for p in r[:DEPTH]))


def of_run(qs: QuerySet, ans: Mapping[str, Mapping[str, Any]], resamples: int = 2000) -> Replayed:
    """The replay's view of a query set and the arms' recorded answers ``ans`` (:func:`recorded.answers`)."""
    answerable = [q for q in qs.queries if q.answerable]
    arms = tuple(ans)
    rankings = {q.id: recorded.rankings(ans, q.id) for q in answerable}
    full = np.array([[[measures.evaluate(q, ans[a][q.id], [m])[m] for a in arms] for m in estimates.MEASURES]
                     for q in answerable]).reshape(len(answerable), len(estimates.MEASURES), len(arms))
    return Replayed(qs.name, tuple((q.id, q.cls) for q in answerable), arms, full,
                    np.array([len(pool_pages(rankings[q.id])) for q in answerable]),
                    {a: {q.id: [page_id(*p) for p in rankings[q.id][a]] for q in answerable} for a in arms},
                    verdicts(full, arms, resamples))


def verdicts(full: np.ndarray, arms: Sequence[str], resamples: int = 2000) -> dict:
    """The full judgments' verdict per (measure, a, b): the gate's paired bootstrap CI on every query."""
    out = {}
    for m, name in enumerate(estimates.MEASURES):
        for i, a in enumerate(arms):
            for j, b in enumerate(arms):
                if a != b:
                    c = stats.paired_compare(full[:, m, i], full[:, m, j], n_resamples=resamples)
                    out[(name, a, b)] = (c.mean_delta, c.verdict if c.verdict in ("better", "worse") else "undecided")
    return out


def graded_count(cost: np.ndarray, budget: float) -> int:
    """How many queries graded whole the budget (pages per query, on average) pays for: at least 4."""
    return min(len(cost), max(4, int(round(budget * len(cost) / cost.mean()))))


def draw(cost: np.ndarray, budget: float, seed: int, d: int) -> np.ndarray:
    """Draw ``d``'s graded queries (a mask): uniformly at random, seeded by (seed, budget, d) alone, so every
    judge of a replay sees the same draws and a longer replay extends a shorter one."""
    rng = np.random.default_rng([seed, int(round(budget * 100)), d])
    graded = np.zeros(len(cost), dtype=bool)
    graded[rng.choice(len(cost), size=graded_count(cost, budget), replace=False)] = True
    return graded


def fixed(rep: Replayed, table: pd.DataFrame) -> Judge:
    """A judge that never learns from the draw (the ranks judge, fitted on another set): one table."""
    pred = estimates.predicted(rep.queries, rep.ranked, table)
    return lambda graded: pred


def replay(rep: Replayed, judge: Judge, budget: float, draws: int, seed: int = 0) -> list[dict]:
    """Per draw, measure and ordered pair: covered, verdict and width, the person-only interval's beside."""
    rows = []
    for d in range(draws):
        graded = draw(rep.cost, budget, seed, d)
        pred = judge(graded)
        for (m, a, b), (delta, truth) in rep.truths.items():
            e = estimates.estimate(rep.full, pred, graded, rep.strata, m, list(rep.arms), b, a)
            i, p = e.interval, e.person_only
            alone = estimates.Estimate(m, a, b, "all", p, p, e.correlation).verdict
            rows.append({"draw": d, "budget": budget, "measure": m, "a": a, "b": b, "truth": truth,
                         "graded_queries": int(graded.sum()), "pages": int(rep.cost[graded].sum()),
                         "covered": i.low <= delta <= i.high, "verdict": e.verdict, "width": i.high - i.low,
                         "covered_person": p.low <= delta <= p.high, "verdict_person": alone,
                         "width_person": p.high - p.low, "r": e.correlation, "n_eff": e.n_eff})
    return rows


# ---- the local judge, trained in each draw on the draw's graded queries only ----------------------------

def person_frame(frame: pd.DataFrame, graded: Sequence[str]) -> pd.DataFrame:
    """The judge's rows as the draw's person left them: a graded query's pooled pages all graded (a page the
    full judgments did not judge is 0, as the person grading it whole would say and as the replay's truth
    scores it), every other query's grades removed."""
    mine = frame["query"].isin(set(graded))
    gain = frame["gain"].where(mine)
    return frame.assign(gain=gain.where(gain.notna() | ~(mine & frame["pooled"]), 0.0))


def cross_predict(frame: pd.DataFrame, graded: Sequence[str], fit: Callable[[pd.DataFrame], Any],
                  predict: Callable[[Any, pd.DataFrame], np.ndarray], folds: int = session.FOLDS,
                  seed: int = 0) -> pd.DataFrame:
    """Every row of ``frame`` predicted (query, doc, page, p_ge1, p_ge2, p_eq3) by judges that learnt from the
    ``graded`` queries' grades only: the graded queries dealt into ``folds`` folds by id; a fold's rows
    predicted by the judge ``fit`` on the other folds, an ungraded query's by the mean of the fold judges."""
    person = person_frame(frame, graded)
    ids = sorted(set(graded))
    k = min(folds, len(ids))
    fold = dict(zip(ids, model.folds(ids, k, seed), strict=True))
    of = person["query"].map(fold).fillna(-1).to_numpy(int)
    out = np.zeros((len(person), len(CHANCES)))
    for f in range(k):
        judge = fit(person[(of >= 0) & (of != f)])
        out[of == f] = predict(judge, person[of == f])
        out[of < 0] += predict(judge, person[of < 0]) / k
    keys = person[["query", "doc", "page"]].reset_index(drop=True)
    return keys.assign(**{c: out[:, i] for i, c in enumerate(CHANCES)})


@dataclass(frozen=True, eq=False)
class Learnt:
    """The local judge as a replay's :data:`Judge`: in each draw, :func:`cross_predict` with the judge that
    `evalkit qrels judge` trains, on ``frame`` (its rows of the replayed queries); each draw's table cached in
    ``cache`` (keyed by the rows, settings, model, folds and the draw's graded queries), so a replay rerun or
    extended refits nothing it has."""

    rep: Replayed
    frame: pd.DataFrame
    settings: features.Settings
    spec: model.Spec
    folds: int = session.FOLDS
    cache: Path | None = None

    def fit(self, rows: pd.DataFrame) -> model.Judge:
        return session.fit(rows, self.settings, self.spec)

    @staticmethod
    def predict(judge: model.Judge, rows: pd.DataFrame) -> np.ndarray:
        return judge.predict(rows[list(judge.names)].to_numpy(float)) if len(rows) else np.zeros((0, 3))

    def key(self, graded: Sequence[str]) -> str:
        blob = json.dumps([self.spec.describe(), self.settings.digest(),
                           features.digest(self.frame, list(self.settings.names)), self.folds, sorted(graded)])
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def table(self, graded: Sequence[str]) -> pd.DataFrame:
        path = self.cache / f"{self.rep.name}-{self.key(graded)}.parquet" if self.cache else None
        if path is not None and path.exists():
            return pd.read_parquet(path)
        table = cross_predict(self.frame, graded, self.fit, self.predict, self.folds, self.spec.seed)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with replacing(path) as tmp:
                table.to_parquet(tmp, index=False)
        return table

    def __call__(self, graded: np.ndarray) -> np.ndarray:
        ids = [self.rep.queries[i][0] for i in np.flatnonzero(graded)]
        return estimates.predicted(self.rep.queries, self.rep.ranked, self.table(ids))


def learnt(rep: Replayed, src: session.Source, spec: model.Spec = SPEC, folds: int = session.FOLDS,
           cache: Path | None = None) -> Learnt:
    """The local judge over ``src`` (:func:`evalkit.autojudge.session.load`) for the replay ``rep``."""
    ids = {q for q, _ in rep.queries}
    return Learnt(rep, src.frame[src.frame["query"].isin(ids)].reset_index(drop=True), src.settings, spec, folds,
                  cache)


# ---- what the draws say ------------------------------------------------------------------------------

def outcome(truth: str, verdict: str) -> str:
    if verdict == truth:
        return "equal"
    return "undecided" if verdict == "undecided" else ("false" if truth == "undecided" else "opposite")


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Per judge, budget and measure: coverage, widths, r, n_eff, and the outcomes' mean counts per draw."""
    out = []
    for (judge, budget, m), g in rows.groupby(["judge", "budget", "measure"], sort=False):
        draws = g["draw"].nunique()
        row = {"judge": judge, "pages/query": budget, "measure": m, "draws": draws,
               "queries graded": g["graded_queries"].iloc[0], "pages graded": g["pages"].mean(),
               "coverage": g["covered"].mean(), "coverage person-only": g["covered_person"].mean(),
               "width": g["width"].mean(), "width person-only": g["width_person"].mean(),
               "judge-person r": g["r"].mean(), "n_eff": g["n_eff"].replace(np.inf, np.nan).mean()}
        for who, col in (("", "verdict"), (" person-only", "verdict_person")):
            o = np.array([outcome(t, v) for t, v in zip(g["truth"], g[col], strict=True)])
            for k in OUTCOMES:
                row[f"{k}{who}"] = (o == k).sum() / draws
            row[f"kept{who}"] = ((g["truth"] != "undecided").to_numpy() & (o == "equal")).sum() / draws
        out.append(row)
    return pd.DataFrame(out)


def needed(summary: pd.DataFrame, significant: Mapping[str, int], share: float = 0.8,
           opposite: float = 0.05) -> pd.DataFrame:
    """Per judge and measure, the smallest budget whose draws keep at least ``share`` of the full judgments'
    significant ordered pairs on average with at most ``opposite`` of them reversed: what a decision costs.
    NaN where no budget replayed does."""
    rows = []
    for (judge, m), g in summary.groupby(["judge", "measure"], sort=False):
        n = significant[m]
        ok = g[(g["kept"] >= share * n) & (g["opposite"] <= opposite * n)] if n else g.iloc[:0]
        first = ok.iloc[0] if len(ok) else None
        rows.append({"judge": judge, "measure": m, "significant": n,
                     "pages/query": first["pages/query"] if first is not None else np.nan,
                     "queries graded": first["queries graded"] if first is not None else np.nan,
                     "pages graded": first["pages graded"] if first is not None else np.nan})
    return pd.DataFrame(rows)


def simulate(src: session.Source, draws: int, seed: int = 0, budgets: Sequence[float] = BUDGETS,
             cache: Path | None = None) -> tuple[Replayed, pd.DataFrame]:
    """`evalkit qrels simulate --judge`: the replay of ``src``'s query file and results directory with the
    local judge at every budget, ``draws`` draws each; the :func:`summarise` table."""
    rep = of_run(src.qs, src.answers)
    judge = learnt(rep, src, cache=cache)
    rows = [{"judge": "local", **r} for b in budgets for r in replay(rep, judge, b, draws, seed)]
    return rep, summarise(pd.DataFrame(rows))


def render(rep: Replayed, summary: pd.DataFrame) -> str:
    """The replay's table for a terminal, under a line saying what was replayed against what."""
    pairs = len(rep.arms) * (len(rep.arms) - 1)
    cols = ["pages/query", "measure", "queries graded", "pages graded", "coverage", "width", "width person-only",
            "judge-person r", "n_eff", *OUTCOMES, "kept", "kept person-only"]
    sig = ", ".join(f"{m} {sum(v != 'undecided' for (mm, _, _), (_, v) in rep.truths.items() if mm == m)}"
                    for m in estimates.MEASURES)
    head = (f"{rep.name}: {len(rep.queries)} answerable queries, depth-10 pool {int(rep.cost.sum())} pages; "
            f"{pairs} ordered pairs of {len(rep.arms)} arms, significant under the full judgments: {sig}. "
            "Per budget, queries graded whole at random; the local judge refitted in each draw on the graded "
            "queries only; outcomes are ordered pairs per draw (mean) against the full judgments' verdicts")
    return head + "\n" + summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}")


def to_grade(pools: Mapping[str, int], pages_per_query: float, seed: int = 0) -> list[str]:
    """The queries a person grades whole, from ``pools`` (query id -> pages in its pool): uniformly at random
    (never chosen by what a judge or an arm says: that is what keeps the correction unbiased), as many as
    ``pages_per_query`` on average pays for (:func:`graded_count`), in id order."""
    ids = sorted(pools)
    if not ids:
        return []
    n = graded_count(np.array([max(pools[i], 1) for i in ids]), pages_per_query)
    return sorted(np.random.default_rng(seed).choice(ids, size=n, replace=False).tolist())

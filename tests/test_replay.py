"""The replay of deciding with few grades: a judge that learns in a draw learns from that draw's graded
queries only, never from a query it estimates; and the intervals the replay reads hold with a judge that
is wrong, while a judge that has seen the grades it estimates would make them fail."""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

from evalkit import estimates, replay

QUERIES = [f"q{i}" for i in range(10)]


def _frame() -> pd.DataFrame:
    """Three pages per query: two pooled (one of them never judged) and one judged outside the pool."""
    rows = []
    for i, q in enumerate(QUERIES):
        rows += [(q, "a.pdf", 1, float(i % 4), True), (q, "a.pdf", 2, math.nan, True), (q, "b.pdf", 1, 2.0, False)]
    frame = pd.DataFrame(rows, columns=["query", "doc", "page", "gain", "pooled"])
    return frame.assign(x=np.arange(len(frame), dtype=float))


def test_the_person_grades_a_graded_query_whole_and_no_other():
    graded = ["q1", "q4"]
    p = replay.person_frame(_frame(), graded)
    mine = p[p["query"].isin(graded)].set_index(["query", "doc", "page"])["gain"]
    assert mine.to_dict() == {("q1", "a.pdf", 1): 1.0, ("q1", "a.pdf", 2): 0.0, ("q1", "b.pdf", 1): 2.0,
                              ("q4", "a.pdf", 1): 0.0, ("q4", "a.pdf", 2): 0.0, ("q4", "b.pdf", 1): 2.0}
    assert p[~p["query"].isin(graded)]["gain"].isna().all()


@pytest.mark.parametrize("graded", [QUERIES[:4], QUERIES[2:9], QUERIES[::3]])
def test_a_draw_never_trains_on_a_query_it_estimates(graded):
    """Every judge the draw fits is recorded with the queries it learnt from and those it predicted: no query
    is in both, nothing is learnt from an ungraded query, every graded query is predicted by exactly one judge
    and every ungraded one by the mean of all of them."""
    fitted, predicted = [], []

    def fit(rows: pd.DataFrame) -> int:
        learnt = rows[rows["gain"].notna()]
        fitted.append(set(learnt["query"]))
        return len(fitted) - 1

    def predict(judge: int, rows: pd.DataFrame) -> np.ndarray:
        predicted.append((judge, set(rows["query"])))
        return np.full((len(rows), 3), [0.5, 0.3, 0.1]) * (judge + 1) / 10

    table = replay.cross_predict(_frame(), graded, fit, predict, folds=3, seed=1)
    assert len(fitted) == min(3, len(graded))
    for judge, queries in predicted:
        assert not fitted[judge] & queries, f"judge {judge} predicted queries it learnt from"
        assert fitted[judge] <= set(graded)
    by_graded = [q for judge, qs in predicted for q in qs if q in graded]
    assert sorted(by_graded) == sorted(graded)
    ungraded = table[~table["query"].isin(graded)]
    mean = np.mean([(j + 1) / 10 for j in range(len(fitted))])
    assert np.allclose(ungraded["p_ge1"], 0.5 * mean) and len(ungraded) == 3 * (len(QUERIES) - len(graded))


def _simulated(rng: np.random.Generator, big: int = 120) -> replay.Replayed:
    """A query set of ``big`` queries, two classes, three arms: arm c better than b by 0.05 on average."""
    base = rng.uniform(0.1, 0.8, big)
    full = np.stack([np.clip(base[:, None] + rng.normal([0, 0.03, 0.08], 0.15, (big, 3)), 0, 1)] * 3, axis=1)
    arms = ("a", "b", "c")
    truths = {(m, x, y): (float((full[:, k, arms.index(y)] - full[:, k, arms.index(x)]).mean()), "undecided")
              for k, m in enumerate(estimates.MEASURES) for x in arms for y in arms if x != y}
    queries = tuple((f"q{i}", "needle" if i % 2 else "spread") for i in range(big))
    return replay.Replayed("sim", queries, arms, full, np.full(big, 30), {}, truths)


def _coverage(judge, rep: replay.Replayed, draws: int = 300) -> float:
    rows = pd.DataFrame([{"judge": "j", **r} for r in replay.replay(rep, judge, 3.0, draws, seed=5)])
    return float(replay.summarise(rows)["coverage"].min())


@pytest.mark.slow
def test_coverage_holds_with_a_biased_judge_that_learns_from_the_draw():
    """A judge fitted in each draw on the graded queries only (cross-fitted among them) that favours arm a by
    0.2 and shrinks the rest: the replay's intervals still cover the true differences."""
    rng = np.random.default_rng(3)
    rep = _simulated(rng)
    noise = rng.normal(0, 0.05, rep.full.shape)

    def judge(graded: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(graded)
        folds = np.array_split(idx, 3)
        pred = np.empty_like(rep.full)
        fits = []
        for f in folds:
            train = np.setdiff1d(idx, f)
            scale = rep.full[train].mean() / 0.5  # learnt from the other folds' grades only
            fits.append(scale)
            pred[f] = 0.5 * scale * rep.full[f] + noise[f]
        pred[~graded] = 0.5 * np.mean(fits) * rep.full[~graded] + noise[~graded]
        pred[:, :, 0] += 0.2  # it favours arm a
        return pred

    assert _coverage(judge, rep) >= 0.93


@pytest.mark.slow
def test_a_judge_that_saw_the_grades_it_estimates_breaks_coverage():
    """The same biased judge, but on the graded queries it repeats their grades (trained on them): the
    correction sees no error and the bias goes through. This is what the cross-fitting above prevents."""
    rng = np.random.default_rng(3)
    rep = _simulated(rng)

    def judge(graded: np.ndarray) -> np.ndarray:
        pred = 0.5 * rep.full + rng.normal(0, 0.05, rep.full.shape)
        pred[:, :, 0] += 0.2
        pred[graded] = rep.full[graded]
        return pred

    assert _coverage(judge, rep, draws=100) < 0.8


def test_a_budget_grades_whole_queries_at_random_and_draws_are_shared_by_every_judge():
    cost = np.full(100, 25)
    assert replay.graded_count(cost, 3.0) == 12 and replay.graded_count(cost, 0.1) == 4
    a, b = replay.draw(cost, 3.0, 0, 7), replay.draw(cost, 3.0, 0, 7)
    assert (a == b).all() and a.sum() == 12
    assert not (replay.draw(cost, 3.0, 0, 8) == a).all()


def test_the_cost_of_a_decision_is_the_first_budget_keeping_most_significant_pairs():
    summary = pd.DataFrame({"judge": ["local"] * 3, "measure": ["nDCG@10"] * 3, "pages/query": [1.0, 3.0, 5.0],
                            "queries graded": [4, 12, 20], "pages graded": [100.0, 300.0, 500.0],
                            "kept": [2.0, 8.5, 9.0], "opposite": [0.0, 0.2, 0.0]})
    row = replay.needed(summary, {"nDCG@10": 10}).iloc[0]
    assert (row["pages/query"], row["pages graded"]) == (3.0, 300.0)
    assert math.isnan(replay.needed(summary, {"nDCG@10": 20}).iloc[0]["pages graded"])


@pytest.mark.slow
def test_qrels_simulate_judge_replays_with_the_local_judge(tmp_path, monkeypatch, capsys):
    """The command reaches the library's replay: one row per budget and measure, coverage in [0, 1]."""
    from evalkit import api
    from evalkit.autojudge import session
    from evalkit.cli import main

    from .test_autojudge import write_case

    qs, res, sig = write_case(tmp_path, n=12, kinds=("needle", "trap"))
    monkeypatch.setattr(api, "judge_source", lambda file, results: (session.load(qs, res, sig), None))
    budgets = replay.BUDGETS[:2]  # two of them show the wiring: every budget refits the judge per fold, 4 CPU-s
    monkeypatch.setattr(replay, "simulate", partial(replay.simulate, budgets=budgets))
    assert main(["qrels", "simulate", str(qs.path), "--results", str(res.path), "--judge", "--draws", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("syn: 12 answerable queries") and "2 ordered pairs of 2 arms" in out[0]
    rows = [line.split() for line in out[2:]]
    assert len(rows) == len(budgets) * len(estimates.MEASURES)
    assert all(0 <= float(r[4]) <= 1 for r in rows)


def test_the_queries_to_grade_are_drawn_at_random_as_many_as_the_budget_pays_for():
    pools = {f"q{i:02d}": 30 for i in range(40)}
    mine = replay.to_grade(pools, 3, seed=0)
    assert len(mine) == 4 and mine == sorted(mine) and set(mine) <= set(pools)
    assert replay.to_grade(pools, 3, seed=0) == mine and replay.to_grade(pools, 3, seed=1) != mine
    assert len(replay.to_grade(pools, 15, seed=0)) == 20 and replay.to_grade({}, 3) == []
    assert len(replay.to_grade({"a": 2, "b": 2}, 3)) == 2  # never more than there are

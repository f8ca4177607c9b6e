import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from evalkit import planning, recorded, stats
from evalkit.cli import main
from tests.conftest import SMALL_QUERIES, query, query_file


def test_queries_needed_inverts_power_and_agrees_with_a_simulated_t_test():
    n = stats.queries_needed(0.1, 0.25)
    assert stats.power(0.1, 0.25, n) >= 0.8 > stats.power(0.1, 0.25, n - 1)
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 0.25, size=(20_000, n))
    rejected = st.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05
    assert rejected.mean() == pytest.approx(0.8, abs=0.02)
    assert stats.queries_needed(0.1, 0.0) == 6 and stats.queries_needed(0.0, 0.3, most=50) == 51


def frame(values: dict[str, list[float]], classes: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"query": f"q{i}", "class": c, "arm": arm, "nDCG@10(doc)": v[i]}
                         for arm, v in values.items() for i, c in enumerate(classes)])


def test_small_classes_are_told_honestly():
    classes = ["needle"] * 6 + ["trap"] * 2 + ["spread"] + ["abstain"]
    rng = np.random.default_rng(1)
    values = {a: list(rng.uniform(0, 1, len(classes))) for a in ("a", "b", "c")}
    table = planning.plan(frame(values, classes))
    assert table.loc["all", "pairs"] == 3 and table.loc["all", "queries"] == 9  # abstain left out
    assert math.isnan(table.loc["spread", "mdd"]) and math.isnan(table.loc["trap", "mdd"])  # n < 2; MDD > 1
    assert 0 < table.loc["all", "mdd"] <= 1 and table.loc["all", "needed"] > 9
    out = planning.text(table, "nDCG@10(doc)", 0.05)
    assert "trap" in out and "n too small" in out and "MDD 4." not in out


def test_a_class_where_the_arms_agree_everywhere_has_no_variance_and_no_count():
    classes = ["needle"] * 6 + ["trap"] * 4  # six: enough for the sign-flip test to decide at all
    same = [0.2, 0.5, 0.9, 0.3, 0.7, 0.4]
    values = {"a": same + [0.1, 0.4, 0.8, 0.3], "b": same + [0.6, 0.1, 0.2, 0.9]}
    table = planning.plan(frame(values, classes))
    assert table.loc["needle", "sd"] == 0 and math.isnan(table.loc["needle", "needed"])
    line = next(x for x in planning.text(table, "nDCG@10(doc)", 0.05).splitlines() if "needle" in x)
    assert "no variance" in line and "0.000" not in line and "needs n/a" in line


def test_the_plan_is_priced_in_person_hours_at_the_pages_judged_per_query(tmp_path):
    from evalkit import qrels
    from evalkit.effort import ReadingModel

    q = tmp_path / "q.toml"
    q.write_text(SMALL_QUERIES)
    qs = qrels.load(q)
    table = pd.DataFrame({"needed": [40.0, math.nan]}, index=pd.Index(["all", "needle"], name="class"))
    model = ReadingModel(80, 250, 16.8, "measured")  # 36 s a page: 100 pages an hour
    lines = planning.hours_text(table, qs, model).splitlines()
    judged = [len(x.judgments) for x in qs.queries if x.answerable]
    per = sum(judged) / len(judged)
    assert lines[0] == model.statement
    assert lines[1].split() == ["all", "40", "queries", "x", f"{per:.1f}", "pages", "=", f"{40 * per:.0f}",
                                "pages:", f"{40 * per / 100:.2f}", "h"]
    assert lines[2].split() == ["needle", "n/a"]


def test_a_set_graded_in_part_is_priced_by_its_whole_queries(tmp_path):
    """Priced over every answerable query, judged or not, 4 graded queries of 21 pooled pages among 18 read
    as 4.8 pages a query (newcomer trial): a query is read on its pool, and one with no pool yet is not priced."""
    from evalkit import qrels
    from evalkit.effort import ReadingModel

    pool = [f"a.pdf#{i}" for i in range(1, 21)]
    qs = qrels.load(query_file(tmp_path / "q.toml",
                               query("g1", "needle", "walrus routes", ("a.pdf", 1, 3), ("b.pdf", 2, 1), pooled=pool),
                               query("u1", "needle", "seal colonies", pooled=pool[:10]),
                               *(query(f"w{i}", "needle", f"penguin question {i}") for i in range(6))))
    table = pd.DataFrame({"needed": [10.0]}, index=pd.Index(["all"], name="class"))
    line = planning.hours_text(table, qs, ReadingModel(80, 250, 16.8, "measured")).splitlines()[1]
    assert line.split()[:6] == ["all", "10", "queries", "x", "15.5", "pages"]  # (21 + 10) / 2: b.pdf#2 was found


def test_qrels_plan_rescores_recorded_answers_with_the_current_judgments(small_results, tmp_path, capsys):
    q = tmp_path / "q.toml"
    q.write_text(SMALL_QUERIES.replace('{ doc = "ctable.pdf", page = 5, gain = 1 }',
                                       '{ doc = "ctable.pdf", page = 5, gain = 3 }'))
    assert main(["qrels", "plan", str(q), "--results", str(small_results), "--delta", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "median over 3 arm pair(s)" in out and "needle" in out and "n too small" in out
    assert "person-hours: 80 words shown per page at 250 words/min (reading alone; no time log yet" in out
    assert main(["qrels", "plan", str(q), "--results", str(small_results), "--measure", "nope"]) == 2


def test_qrels_plan_with_a_judge_says_how_many_queries_to_grade(small_results, tmp_path, capsys):
    import pandas as pd

    from evalkit import qrels
    from evalkit.results import Results

    q = tmp_path / "q.toml"
    q.write_text(SMALL_QUERIES)
    qs, ans = qrels.load(q), recorded.answers(Results.load(small_results))
    known = {q_.id: recorded.gains(q_) for q_ in qs.queries}
    rows = [(qid, d, p, float(g >= 1), float(g >= 2), float(g == 3))  # a judge that knows every gain
            for qid in known for d, p in {*known[qid], *(p for a in ans for p in recorded.rankings(ans, qid)[a][:10])}
            for g in [known[qid].get((d, p), 0)]]
    pred = tmp_path / "pred.csv"
    pd.DataFrame(rows, columns=["query", "doc", "page", "p_ge1", "p_ge2", "p_eq3"]).to_csv(pred, index=False)
    assert main(["qrels", "plan", str(q), "--results", str(small_results), "--delta", "0.1", "--judge", str(pred)]) == 0
    out = capsys.readouterr().out
    assert "with the judge predicting" in out and "all        r 1.00  grade" in out
    pd.DataFrame(rows, columns=["query", "doc", "page", "p_ge1", "p_ge2", "p_gt2"]).to_csv(pred, index=False)
    assert main(["qrels", "plan", str(q), "--results", str(small_results), "--judge", str(pred)]) == 2
    assert "lack the column(s) p_eq3" in capsys.readouterr().err
    assert main(["qrels", "plan", str(q), "--results", str(small_results), "--judge", str(pred), "--measure",
                 "RR"]) == 2

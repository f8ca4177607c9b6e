import math

import numpy as np
import pandas as pd
import pytest

from evalkit import comparison, stats
from evalkit.comparison import CompareError

from .conftest import ENVIRONMENT, write_results

CLASSES = ["needle"] * 4 + ["trap"] * 4 + ["abstain"] * 2


@pytest.fixture
def two_arms(tmp_path):
    base = [0.2, 0.5, 0.9, 0.4, 0.1, 0.3, 0.6, 0.8, 0, 0]
    cand = [0.3, 0.5, 0.7, 0.6, 0.1, 0.5, 0.6, 0.9, 0, 0]
    return write_results(tmp_path / "run", {"a": {"nDCG@10": base}, "b": {"nDCG@10": cand}}, CLASSES)


def test_sides_are_dir_arm_or_a_single_arm_dir(two_arms, tmp_path):
    s = comparison.side(f"{two_arms}:b")
    assert s.arm == "b" and s.label == f"{two_arms}:b"
    assert comparison.side(two_arms, "a").arm == "a"
    single = write_results(tmp_path / "one", {"only": {"nDCG@10": [0.1] * 10}}, CLASSES)
    assert comparison.side(single).arm == "only"
    with pytest.raises(CompareError, match=r"holds 2 arms \(a, b\): name one as .*:ARM"):
        comparison.side(two_arms)
    with pytest.raises(CompareError, match=r"has no arm 'c'; it has a, b"):
        comparison.side(f"{two_arms}:c")
    with pytest.raises(CompareError, match="no such results directory"):
        comparison.side(tmp_path / "nowhere:a")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CompareError, match="not a results directory"):
        comparison.side(tmp_path / "empty")


def test_an_arm_is_found_by_the_spec_it_ran_with(tmp_path):
    d = write_results(tmp_path / "r", {"semantic(model=x)": {"nDCG@10": [0.1] * 10}}, CLASSES)
    m = (d / "manifest.json")
    m.write_text(m.read_text().replace('"spec": "semantic(model=x)"', '"spec": "semantic"'))
    assert comparison.side(f"{d}:semantic").arm == "semantic(model=x)"


def test_pairing_by_query_id_and_the_statistics_of_each_slice(two_arms):
    p = comparison.pair(comparison.side(f"{two_arms}:a"), comparison.side(f"{two_arms}:b"))
    assert p.classes == ["needle", "trap"] and not p.missing and not p.unshared and not p.environment
    a, b = p.values("nDCG@10")
    assert a.tolist() == [0.2, 0.5, 0.9, 0.4, 0.1, 0.3, 0.6, 0.8]  # abstain queries left out
    t = comparison.table(p, ("nDCG@10", "RR"))
    assert list(t["class"]) == ["all", "needle", "trap"] * 2
    row = t[(t["measure"] == "nDCG@10") & (t["class"] == "trap")].iloc[0]
    ref = stats.paired_compare([0.1, 0.3, 0.6, 0.8], [0.1, 0.5, 0.6, 0.9])
    assert (row["n"], row["wins"], row["ties"], row["losses"]) == (4, 2, 2, 0)
    assert (row["delta"], row["low"], row["high"], row["p"], row["mdd"]) == pytest.approx(
        (ref.mean_delta, ref.low, ref.high, ref.p_value, ref.mdd), nan_ok=True)  # MDD: n too small at 4
    h = comparison.with_holm(t)
    for m in ("nDCG@10", "RR"):  # the family: every row of one measure
        assert h[h["measure"] == m]["p_holm"].tolist() == pytest.approx(stats.holm(t[t["measure"] == m]["p"]).tolist())


def test_another_corpus_is_always_refused(two_arms, tmp_path):
    other = write_results(tmp_path / "other", {"a": {"nDCG@10": [0.1] * 10}}, CLASSES, corpus="deadbeef")
    for allow in (False, True):
        with pytest.raises(CompareError, match="different corpora"):
            comparison.pair(comparison.side(f"{two_arms}:a"), comparison.side(other), allow)


def test_another_query_set_is_refused_unless_allowed_then_only_shared_queries_count(two_arms, tmp_path):
    ids = [f"q{i:03d}" for i in range(2, 12)]  # q000, q001 only in the base; q010, q011 only in the other
    other = write_results(tmp_path / "other", {"a": {"nDCG@10": [0.5] * 10}}, CLASSES, queries="feed", ids=ids)
    base, cand = comparison.side(f"{two_arms}:a"), comparison.side(other)
    with pytest.raises(CompareError, match="different query sets.*--allow-different-queries"):
        comparison.pair(base, cand)
    p = comparison.pair(base, cand, allow_different_queries=True)
    assert p.unshared == ("q000", "q001", "q010", "q011")
    assert list(p.base_rows.index) == list(p.cand_rows.index) == [f"q{i:03d}" for i in range(2, 10)] and not p.missing
    assert any("q010" in n and "left out" in n for n in comparison.notes(p))


def test_a_query_missing_from_one_run_scores_zero_and_is_listed(two_arms):
    pq = pd.read_parquet(two_arms / "per_query.parquet")
    pq = pq[~((pq["arm"] == "b") & pq["query"].isin(["q002", "q009"]))]
    pq.to_parquet(two_arms / "per_query.parquet", index=False)
    p = comparison.pair(comparison.side(f"{two_arms}:a"), comparison.side(f"{two_arms}:b"))
    assert p.missing == ((f"{two_arms}:b", "q002"), (f"{two_arms}:b", "q009"))
    c = p.cand_rows
    assert c.loc["q002", "nDCG@10"] == 0.0 and c.loc["q002", "outcome"] == "wrongful_refusal"
    assert math.isnan(c.loc["q009", "nDCG@10"])  # abstain: no ranking score
    assert c.loc["q009", "outcome"] == "correct_refusal"  # answering nothing is a refusal
    assert list(c.index) == list(p.base_rows.index) and c.loc["q002", "class"] == "needle"
    assert len(p.values("nDCG@10")[1]) == 8
    assert any("no answer for 2 query(ies), scored 0: q002, q009" in n for n in comparison.notes(p))


def test_different_environments_make_latencies_incomparable(two_arms, tmp_path):
    env = {**ENVIRONMENT, "python": "3.12.1", "packages": {**ENVIRONMENT["packages"], "numpy": "2.0.0"}}
    other = write_results(tmp_path / "other", {"a": {"nDCG@10": [0.1] * 10}}, CLASSES, environment=env)
    p = comparison.pair(comparison.side(f"{two_arms}:a"), comparison.side(other))
    assert p.environment == ("packages.numpy 2.4.6 vs 2.0.0", "python 3.11.7 vs 3.12.1")
    assert comparison.latency(p)["comparable"] is False
    assert any("latencies are not comparable" in n and "python" in n for n in comparison.notes(p))
    m = other / "manifest.json"
    m.write_text(m.read_text().replace('"depth": 100', '"depth": 10'))
    p = comparison.pair(comparison.side(f"{two_arms}:a"), comparison.side(other))
    assert p.depths == (100, 10) and any("kept 100 and 10 hits per query" in n for n in comparison.notes(p))


def test_refusal_changes_are_paired_counts_with_an_exact_test(tmp_path):
    classes = ["needle"] * 8 + ["abstain"] * 4
    outcomes = {"a": ["answered"] * 8 + ["correct_refusal"] * 2 + ["answered_abstain"] * 2,
                "b": ["wrongful_refusal"] * 6 + ["answered"] * 2 + ["answered_abstain"] * 2 + ["correct_refusal"] * 2}
    d = write_results(tmp_path / "r", {"a": {"nDCG@10": [0.5] * 12}, "b": {"nDCG@10": [0.5] * 12}}, classes,
                      outcomes=outcomes)
    r = comparison.refusal_changes(comparison.pair(comparison.side(f"{d}:a"),
                                                   comparison.side(f"{d}:b"))).set_index("rate")
    w = r.loc["wrongful refusal"]
    assert (w["n"], w["base"], w["cand"], w["worse"], w["better"]) == (8, 0.0, 0.75, 6, 0)
    assert w["p_worse"] == pytest.approx(1 / 64)
    c = r.loc["correct refusal"]
    assert (c["n"], c["base"], c["cand"], c["worse"], c["better"]) == (4, 0.5, 0.5, 2, 2)
    assert c["p_worse"] == pytest.approx(stats.mcnemar_p(2, 2))
    assert [comparison.refusal_text(row) for row in r.reset_index().itertuples()] == [
        "wrongful refusal: 0.000 -> 0.750 over 8 queries; 6 worse, 0 better (exact McNemar, one-sided p 0.0156)",
        "correct refusal: 0.500 -> 0.500 over 4 queries; 2 worse, 2 better (exact McNemar, one-sided p 0.6875)"]


def test_a_refusal_rate_over_no_queries_says_the_set_has_none(tmp_path):
    d = write_results(tmp_path / "r", {"a": {"nDCG@10": [0.5] * 4}, "b": {"nDCG@10": [0.5] * 4}}, ["needle"] * 4)
    text = comparison.render([comparison.pair(comparison.side(f"{d}:a"), comparison.side(f"{d}:b"))], ("nDCG@10",))
    assert "correct refusal: the query set has no abstain queries" in text and "nan" not in text


def test_latency_is_the_ratio_of_medians(tmp_path):
    d = write_results(tmp_path / "r", {"a": {"nDCG@10": [0.5] * 10}, "b": {"nDCG@10": [0.5] * 10}}, CLASSES,
                      latency={"a": 0.010, "b": 0.015})
    lat = comparison.latency(comparison.pair(comparison.side(f"{d}:a"), comparison.side(f"{d}:b")))
    assert lat["ratio"] == pytest.approx(1.5) and lat["comparable"] and lat["n"] == 10


def test_render_names_the_family_and_every_candidate(two_arms):
    base = comparison.side(f"{two_arms}:a")
    text = comparison.render([comparison.pair(base, comparison.side(f"{two_arms}:b"))], ("nDCG@10",))
    assert "p(Holm): Holm over the 3 rows of each measure" in text and "candidate " + str(two_arms) + ":b" in text
    assert "W/T/L" in text and "MDD" in text and "wrongful refusal" in text and "latency" in text
    assert np.isfinite(comparison.latency(comparison.pair(base, base))["ratio"])


def test_identical_arms_in_a_class_say_no_variance_not_an_mdd_of_zero(tmp_path):
    same = [0.2, 0.5, 0.5, 0.3, 0.7, 0.4]  # six queries: enough for the sign-flip test to decide at all
    scores = {"base": {"nDCG@10": same + [0.5, 0.1, 0.9]}, "cand": {"nDCG@10": same + [0.1, 0.9, 0.2]}}
    res = write_results(tmp_path / "r", scores, ["needle"] * 6 + ["trap"] * 3)
    text = comparison.render([comparison.pair(comparison.side(f"{res}:base"), comparison.side(f"{res}:cand"))],
                             ("nDCG@10",))
    needle = next(line for line in text.splitlines() if " needle " in line)
    assert needle.rstrip().endswith("no variance") and "0.000" not in needle.split("]")[-1]


def test_the_table_says_n_too_small_where_the_mdd_would_exceed_the_range(two_per_class):
    pair = comparison.pair(comparison.side(f"{two_per_class}:base"), comparison.side(f"{two_per_class}:cand"))
    t = comparison.table(pair, ("nDCG@10",)).set_index("class")
    assert t.loc[["needle", "trap", "all"], "mdd"].isna().all()  # MDD 4.084, 2.478 (n 2) and 0.705 (n 4) unguarded
    text = comparison.render([pair], ("nDCG@10",))
    assert text.count("n too small") == 4 and "0.705" not in text and "4.084" not in text and "2.478" not in text

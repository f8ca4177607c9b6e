import shutil

import pandas as pd
import pytest

from evalkit import completeness
from evalkit.results import Results


def test_judged_table_averages_per_arm_and_class(small_pair):
    t = completeness.judged_table(small_pair)
    assert list(t.index) == small_pair.arms
    assert list(t.columns) == ["needle", "spread", "described", completeness.ALL, "abstain"]
    pq = small_pair.per_query
    for arm in small_pair.arms:
        a = pq[pq["arm"] == arm]
        assert t.loc[arm, "spread"] == pytest.approx(a.loc[a["query"] == "q2", "Judged@10"].item())
        answered = a[(a["class"] != "abstain") & ~a["refused"]]
        assert t.loc[arm, completeness.ALL] == pytest.approx(answered["Judged@10"].mean())
        assert pd.isna(t.loc[arm, "described"])  # q4 is answered with nothing: no page to judge
        assert t.loc[arm, "abstain"] == 0.0  # q3 has no judged page


def test_the_warning_names_the_arms_under_the_threshold(small_pair):
    overall = completeness.judged_table(small_pair)[completeness.ALL]
    assert 0 < overall.min() < 1
    text = completeness.judged_warning(small_pair, threshold=overall.max() + 0.01)
    assert text.startswith("**Warning: judgments too shallow for 2 arm(s).**")
    assert f"- `keyword`: Judged@10 = {overall['keyword']:.2f}" in text and "`global-index`" in text
    assert overall["keyword"] < overall["global-index"]  # on this run; the mean threshold splits them
    one = completeness.judged_warning(small_pair, threshold=overall.mean())
    assert "for 1 arm(s)" in one and "`keyword`" in one and "`global-index`" not in one
    ok = completeness.judged_warning(small_pair, threshold=overall.min())
    assert ok.startswith(f"Every arm has Judged@10 ≥ {overall.min():.2f}") and ok._repr_markdown_() == ok


def test_a_run_from_before_judged_at_10_gets_a_note(small_pair, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(small_pair.path, old)
    pq = pd.read_parquet(old / "per_query.parquet").drop(columns="Judged@10")
    pq.to_parquet(old / "per_query.parquet", index=False)
    assert "no Judged@10 column" in completeness.judged_warning(Results.load(old))
    assert "Judged@10" not in Results.load(old).table().columns  # and the summary table still prints

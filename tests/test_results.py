import pandas as pd
import pytest

from evalkit.results import HEADLINE, Results


def test_the_comparison_table_has_one_row_per_arm(small_pair):
    t = small_pair.table()
    assert list(t.index) == ["keyword", "global-index"] == small_pair.arms
    assert list(t.columns) == [h for h in HEADLINE.values() if h != "Evidence@10"]  # no arm returned chunks
    by_class = small_pair.table(by_class=True)
    assert set(by_class.index.get_level_values("class")) == {"all", "needle", "spread", "abstain", "described"}
    assert pd.isna(by_class.loc[("keyword", "abstain"), "nDCG@10 page"])  # abstain never enters ranking means
    assert by_class.loc[("keyword", "abstain"), "correct refusal"] == 0


def test_scores_and_paired_comparison(small_pair):
    s = small_pair.scores("nDCG@10", "global-index")
    assert sorted(s.index) == ["q1", "q2", "q4"]  # abstain left out
    c = small_pair.compare("keyword", "global-index")
    assert c.n == 3 and c.verdict in ("better", "worse", "not distinguishable")
    assert c.mean_delta == pytest.approx((s - small_pair.scores("nDCG@10", "keyword")).mean())


def test_results_render_as_a_table_in_jupyter(small_pair):
    html = small_pair._repr_html_()
    assert "<table" in html and "nDCG@10 page" in html and "global-index" in html
    assert "n/a" not in html.split("<table")[0]
    assert "keyword" in repr(small_pair)


def test_a_folder_without_a_manifest_is_not_results(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a results directory"):
        Results.load(tmp_path)


def test_rankings_are_the_pages_each_arm_recorded_in_its_order(small_pair):
    import json

    for arm in small_pair.manifest["arms"]:
        recorded = [json.loads(line) for line in (small_pair.path / "runs" / f"{arm['file']}.jsonl").open()]
        assert small_pair.rankings(arm["label"]) == {r["query"]: [(d, p) for d, p, _ in r["hits"]]
                                                     for r in recorded if r["hits"]}
    assert small_pair.rankings("keyword") != small_pair.rankings("global-index")

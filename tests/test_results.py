import pandas as pd
import pytest

from evalkit import qrels
from evalkit import run as runner
from evalkit.results import HEADLINE, Results

from .test_run import QUERIES


@pytest.fixture(scope="module")
def res(small, tmp_path_factory):
    c, store = small
    folder = tmp_path_factory.mktemp("res")
    (folder / "q.toml").write_text(QUERIES)
    out = runner.run(c, store, qrels.load(folder / "q.toml"), ["keyword", "global-index"], folder / "r", progress=False)
    return Results.load(out)


def test_the_comparison_table_has_one_row_per_arm(res):
    t = res.table()
    assert list(t.index) == ["keyword", "global-index"] == res.arms
    assert list(t.columns) == list(HEADLINE.values())
    by_class = res.table(by_class=True)
    assert set(by_class.index.get_level_values("class")) == {"all", "needle", "spread", "abstain", "described"}
    assert pd.isna(by_class.loc[("keyword", "abstain"), "nDCG@10 page"])  # abstain never enters ranking means
    assert by_class.loc[("keyword", "abstain"), "correct refusal"] == 0


def test_scores_and_paired_comparison(res):
    s = res.scores("nDCG@10", "global-index")
    assert sorted(s.index) == ["q1", "q2", "q4"]  # abstain left out
    c = res.compare("keyword", "global-index")
    assert c.n == 3 and c.verdict in ("better", "worse", "not distinguishable")
    assert c.mean_delta == pytest.approx((s - res.scores("nDCG@10", "keyword")).mean())


def test_results_render_as_a_table_in_jupyter(res):
    html = res._repr_html_()
    assert "<table" in html and "nDCG@10 page" in html and "global-index" in html and "n/a" not in html.split("<table")[0]
    assert "keyword" in repr(res)


def test_a_folder_without_a_manifest_is_not_results(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a results directory"):
        Results.load(tmp_path)

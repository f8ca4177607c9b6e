"""The report's tables: per-query deltas, the headline's highlighting, the class intervals and the
biggest changes, as the page shows them."""
from __future__ import annotations

import json

import numpy as np
import pytest

from evalkit import qrels
from evalkit.reports import figures, tables
from evalkit.results import Results

from .conftest import _known


@pytest.mark.slow
def test_deltas_are_second_minus_first_over_answerable_queries(res):
    d = tables.deltas(res, ("keyword", "global-index"), "nDCG@10")
    assert len(d) == 7 and "abstain" not in set(d["class"])
    assert np.allclose(d["delta"], d["global-index"] - d["keyword"])
    assert list(d["delta"]) == sorted(d["delta"], reverse=True)
    assert d.loc["n2", "text"].startswith("Which preamble command")  # texts from the unchanged query file
    ax = figures.plot_deltas(res, ("keyword", "global-index"))
    assert len(ax.patches) == 7
    assert "global-index  −  keyword" in ax.get_title(loc="left")
    changes = tables.biggest_changes(res, ("keyword", "global-index"), n=2)
    assert len(changes) <= 4 and set(changes.index.get_level_values("change")) <= {"better", "worse"}
    for change, row in changes.iterrows():
        assert (row["delta"] > 0) == (change[0] == "better")


def test_an_old_results_directory_without_calibration_still_loads_and_says_so(tmp_path):
    from ..conftest import ENVIRONMENT, write_results

    d = write_results(tmp_path / "old", {"a": {"nDCG@10": [0.5] * 4}}, ["trap"] * 4, environment=dict(ENVIRONMENT))
    assert "calibration" not in json.loads((d / "manifest.json").read_text())["environment"]
    prov = tables.provenance(Results.load(d))
    assert prov["environment"].loc["calibration", "value"].startswith("no calibration recorded")
    assert prov["environment"].loc["sqlite", "value"] == ENVIRONMENT["sqlite"]


def test_bold_only_where_a_column_separates_arms(tmp_path):
    res = _known(tmp_path)
    st = tables.headline(res)
    st._compute()
    bold = {res.table().columns[c] for (_, c), props in st.ctx.items() if ("font-weight", "bold") in props}
    assert bold == {"nDCG@10 page", "nDCG@10 doc", "GoldDoc@3", "correct refusal", "errors"}
    # every arm answered every query in the same time and refused nothing wrongly: nothing to bold there
    assert not {"wrongful refusal", "s/query (median)"} & bold
    assert tables.separating(res.table()) == [c for c in res.table().columns if c in bold | {"Judged@10"}]


def test_the_class_table_keeps_intervals_on_one_line(res):
    st = tables.class_ci_styled(res)
    assert list(st.data.index.names) == ["measure", "arm"] and len(st.data) == 2 * len(res.arms)
    assert "white-space: nowrap" in st.to_html()


def test_the_biggest_changes_table_uses_short_labels_signed_deltas_and_the_query_texts(tmp_path, monkeypatch):
    from ..conftest import write_results

    d = write_results(tmp_path / "r", {"keyword": {"nDCG@10": [0.2, 0.9, 0.5]},
                                       "semantic(model=sentence-transformers/all-MiniLM-L6-v2)": {"nDCG@10": [0.7, 0.1,
                                                                                                              0.5]}},
                      ["needle"] * 3)
    manifest = json.loads((d / "manifest.json").read_text())
    (tmp_path / "work" / "qrels").mkdir(parents=True)
    q = tmp_path / "work" / "qrels" / "fixture.toml"
    q.write_text('[set]\nname = "fixture-set"\n' + "".join(
        f'[[query]]\nid = "q{i:03d}"\nclass = "needle"\ntext = "query <b>{i}</b>"\njudgments = []\n' for i in range(3)))
    manifest["qrels"]["digest"] = qrels.load(q).digest
    (d / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("EVALKIT_WORKDIR", str(tmp_path / "work"))  # as `evalkit report` tells its kernel
    res = Results.load(d)
    html = tables.biggest_changes_styled(res, list(res.arms)).to_html()
    assert "semantic</th>" in html and "sentence-transformers" not in html  # the short label
    assert "+0.500" in html and "-0.800" in html and "query &lt;b&gt;1&lt;/b&gt;" in html and "<b>1" not in html

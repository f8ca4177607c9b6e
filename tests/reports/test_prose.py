"""The report's paragraphs: legends and provenance from the run, and a conclusion that says what the
numbers show."""
from __future__ import annotations

import json

import pytest

from evalkit import qrels
from evalkit.reports import prose, queryfile, tables
from evalkit.results import Results

from .conftest import _copy, _known


@pytest.mark.slow
def test_legends_and_provenance_come_from_the_run(res, results_dir, tmp_path):
    text = prose.legend(res)
    assert "**3**: answers it" in text and "**abstain** (2)" in text and "nDCG@10 page" in text
    prov = tables.provenance(res)
    assert list(prov["arms"].index) == res.arms and "build s" in prov["arms"].columns
    assert prov["run"].loc["corpus digest", "value"] == res.manifest["corpus"]["digest"]
    assert prov["environment"].loc["sqlite", "value"] == res.manifest["environment"]["sqlite"]
    assert "reference workload" in prov["environment"].loc["calibration", "value"]
    # without its query file, the run's recorded gain legend still shows, and the report says what is missing
    copy = _copy(results_dir, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["qrels"]["path"] = str(tmp_path / "gone.toml")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    moved = Results.load(copy)
    assert queryfile.gains(moved) == queryfile.gains(res) != qrels.DEFAULT_GAINS
    assert "was not found" in prose.legend(moved) and queryfile.query_set(moved) is None
    # a manifest without a gain legend (and no query file) falls back to the default one
    del manifest["qrels"]["gains"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert queryfile.gains(Results.load(copy)) == qrels.DEFAULT_GAINS
    assert "text" not in tables.deltas(moved, ("keyword", "global-index")).columns
    # a model's weights digest is shown short (as git shortens a commit): whole, it ran off the page
    digest = "sha256:" + "8199be6f699a" + "0" * 52
    manifest["arms"][0]["models"] = [{"name": "m", "weights": digest, "max_tokens": 256, "window": 1}]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    model = tables.provenance(Results.load(copy))["arms"].loc["keyword", "model"]
    assert model == "m (sha256:8199be6f699a, 256 tokens, window 1)"


def test_the_conclusion_says_what_the_numbers_show(tmp_path):
    res = _known(tmp_path)
    text = prose.conclusion(res, "base", n_resamples=2000)
    lines = {line.split("**")[1]: line for line in text.splitlines() if line.startswith("- **")}
    assert lines["Ranking"] == "- **Ranking**: `close` 0.805 > `good` 0.800 > `same` 0.505 > `base` 0.500"
    ahead = lines["ahead of `base`"]
    assert ahead.startswith("- **ahead of `base`**: `close` +0.305 [+0.2") and ahead.endswith(
        "; `good` +0.300 [+0.300, +0.300]")
    assert lines["cannot be told from `base`"].startswith("- **cannot be told from `base`**: `same` +0.005 [")
    assert "below the" in lines["cannot be told from `base`"]  # the MDD says why
    assert "behind `base`" not in lines
    assert lines["Lead"].startswith("- **Lead**: `close` over `good` by +0.005 [")
    assert lines["Lead"].endswith("the set cannot tell them apart")
    assert lines["Refusal"] == ("- **Refusal**: `same` refused 1 of 2 abstain and 0 of 30 answerable queries. "
                                "Errors: `same` 1.")
    assert "no verdict" in lines["Gate"]
    assert "Holm-adjusted over the 4 comparisons" in text  # 3 arms against base, and the lead
    # without a baseline every arm is set against the leader
    alone = prose.conclusion(res, n_resamples=2000)
    assert "- **behind `close`**: `same` -0.300 [-0.300, -0.300]; `base` -0.305 [" in alone
    assert "- **cannot be told from `close`**: `good` -0.005 [" in alone and "**Lead**" not in alone


def test_an_interval_that_excludes_zero_is_not_called_indistinguishable(tmp_path):
    """Eight arms each a little above ``base`` on all 8 queries: every unadjusted CI excludes 0, while Holm
    over the 8 comparisons leaves no sign-flip p below 0.05 (the smallest possible p is about 2/256, times 8).
    The prose says that, instead of "cannot be told from" beside an interval that excludes 0 (issue 33)."""
    from ..conftest import write_results

    steps = [0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09]
    scores = {"base": [0.5] * 8, **{f"c{i}": [0.5 + s + i / 1000 for s in steps] for i in range(8)}}
    res = Results.load(write_results(tmp_path / "r", {a: {"nDCG@10": v} for a, v in scores.items()}, ["needle"] * 8))
    found = prose.findings(res, "base", n_resamples=2000)
    assert all(f.result.low > 0 and f.p_holm >= 0.05 for f in found)
    text = prose.conclusion(res, "base", n_resamples=2000)
    assert "cannot be told from" not in text and "ahead of" not in text
    head = "- **CI excludes 0 against `base`, the adjusted test does not**: "
    line = next(x for x in text.splitlines() if x.startswith(head))
    assert line.count("p(Holm) = ") == 8 and "`c7` +0.062 [+0.0" in line


def test_the_conclusion_escapes_arm_labels(tmp_path):
    from ..conftest import write_results

    res = Results.load(write_results(tmp_path / "x", {"a": {"nDCG@10": [0.1, 0.2]},
                                                      "<b>*x*</b>": {"nDCG@10": [0.3, 0.4]}},
                                     ["needle", "needle"]))
    text = prose.conclusion(res, "a", n_resamples=200)
    assert text.count("<b>") == text.count("`<b>*x*</b>`") == 2  # only ever inside a code span: shown, not markup


def test_the_overview_says_which_queries_were_left_out_ungraded(tmp_path):
    """A run on a set graded in part: the report's first paragraph says how many queries its measures speak
    of and names the ungraded ones, which only a judge's gate measures."""
    from ..conftest import write_results

    path = write_results(tmp_path / "r", {"a": {"nDCG@10": [0.5, 0.2]}}, ["needle", "spread"])
    assert "ungraded" not in prose.overview(Results.load(path))
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["qrels"].update(queries=4, ungraded=["q_7", "q8"])
    (path / "manifest.json").write_text(json.dumps(manifest))
    text = prose.overview(Results.load(path))
    assert r"_2 of 4 queries measured; 2 ungraded, left out \(no judgment yet: q\_7, q8\): gate them with " \
        r"\-\-judge._" in text, text
    # the class counts are of the measured queries, and say so (they read '4: needle 1, spread 1')
    assert "(4, 2 measured: needle 1, spread 1)" in text
    assert "**Query classes** (queries measured in this run)" in prose.legend(Results.load(path))

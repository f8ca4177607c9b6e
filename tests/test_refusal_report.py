import json
import math

import pytest

from evalkit import qrels
from evalkit import runner
from evalkit import refusal_report as RR
from evalkit.cli import main
from evalkit.results import Results

from .conftest import query, query_file

QUERIES = (
    query("q1", "needle", "How do I put extra space between rows of a table?",
          ("booktabs.pdf", 6, 3),
          ("ctable.pdf", 5, 1)),
    query("q2", "spread", "define a new float type", ("float.pdf", 3, 3), ("newfloat.pdf", 2, 2)),
    query("q3", "described", "the distance between lines of the whole document should be larger",
          ("setspace-doc.pdf", 1, 2)),
    query("a1", "abstain", "How do I draw a gantt chart with pgfgantt?", kind="absent-name"),
    query("a2", "abstain", "How long should a smoked brisket rest before slicing?", kind="off-domain"),
)
INNER = "hybrid(keyword=global-index)"
RECORD = f"admit(arm={INNER},policy=semantic)"


@pytest.fixture(scope="module")
def results(small, tmp_path_factory):
    c, store = small
    tmp = tmp_path_factory.mktemp("refusal")
    query_file(tmp / "q.toml", *QUERIES, name="small-refusal")
    qs = qrels.load(tmp / "q.toml")
    # q3's confidence decides the threshold: refuse it (wrongly) and whatever is below it
    conf = {q.id: _confidence(c, store, q.text) for q in qs.queries}
    threshold = conf["q3"] + 1e-6
    specs = [INNER, RECORD, f"admit(arm={INNER},policy=semantic,threshold={threshold})"]
    out = runner.run(c, store, qs, specs, tmp / "res", progress=False)
    return Results.load(out), conf, threshold


def _confidence(c, store, text):
    """The record-only wrapper's confidence for one query, computed outside any run."""
    from evalkit import arms
    return arms.make(RECORD, c, store).search(text, 10).confidence


def test_confidence_is_recorded_for_answers_and_refusals(results):
    res, conf, threshold = results
    pq = res.per_query
    assert pq[pq["arm"] == INNER]["confidence"].isna().all()
    for arm in res.arms[1:]:
        rows = pq[pq["arm"] == arm].set_index("query")
        assert rows["confidence"].to_dict() == pytest.approx(conf)
        assert rows["kind"].to_dict()["a1"] == "absent-name"
    rec = [json.loads(line)
           for line in (res.path / "runs").glob("*threshold*.jsonl").__next__().read_text().splitlines()]
    refused = {r["query"]: r for r in rec if r["refused"]}
    assert "q3" in refused and "best semantic match" in refused["q3"]["reason"] and refused["q3"]["hits"] == []
    # the embedding model behind the wrapped hybrid and the policy is in the manifest, once
    models = [a["models"] for a in res.manifest["arms"]]
    assert all(len(m) == 1 and m[0]["window"] == 160 for m in models)


def test_a_refused_query_is_never_dropped_from_a_mean(results):
    res, conf, threshold = results
    label = res.arms[2]
    pq = res.per_query[res.per_query["arm"] == label].set_index("query")
    assert pq.loc["q3", "outcome"] == "wrongful_refusal" and pq.loc["q3", "nDCG@10"] == 0.0
    table = res.table().loc[label]
    answerable = pq[pq["class"] != "abstain"]["nDCG@10"]
    assert len(answerable) == 3 and table["nDCG@10 page"] == pytest.approx(answerable.sum() / 3)
    # when it answers, the thresholded arm's answers are the unwrapped arm's
    inner = res.per_query[res.per_query["arm"] == INNER].set_index("query")
    for q in ("q1", "q2"):
        if pq.loc[q, "outcome"] == "answered":
            assert pq.loc[q, "nDCG@10"] == inner.loc[q, "nDCG@10"]


def test_measures_from_a_results_directory(results):
    res, conf, threshold = results
    d = RR.confidences(res, res.arms[2])
    assert d.threshold == threshold and d.metric is not None  # quality from the record-only sibling
    m = RR.measures(d)
    assert m["wrongful_refusal"].k == sum(conf[q] < threshold for q in ("q1", "q2", "q3"))
    assert m["correct_refusal"].k == sum(conf[q] < threshold for q in ("a1", "a2"))
    assert set(k for k in m if k.startswith("correct_refusal[")) == {"correct_refusal[absent-name]",
                                                                      "correct_refusal[off-domain]"}
    assert 0 <= m["AUROC"] <= 1 and 0 <= m["AURC"] <= 1 and not math.isnan(m["nAUC"])
    # the same measures from the record-only arm at the same threshold
    same = RR.measures(RR.confidences(res, RECORD), threshold)
    assert same["correct_refusal"] == m["correct_refusal"] and same["wrongful_refusal"] == m["wrongful_refusal"]
    assert list(RR.table(res).index) == res.arms[1:]
    assert RR.fig_tradeoff(res) is not None


def test_cli_show_calibrate_and_an_arm_without_confidence(results, capsys):
    res, conf, threshold = results
    assert main(["refusal", str(res.path), "--arm", RECORD, "--curve"]) == 0
    out = capsys.readouterr().out
    assert "correct refusal" in out and "wrongful refusal" in out and "AUROC" in out and "absent-name" in out
    assert main(["refusal", "calibrate", str(res.path), "--arm", RECORD, "--max-wrongful", "0"]) == 0
    spec = capsys.readouterr().out.strip().splitlines()[-1]
    assert spec.startswith(f"admit(arm={INNER},policy=semantic,threshold=")
    t = float(spec.rsplit("=", 1)[1].rstrip(")"))
    assert all(conf[q] >= t for q in ("q1", "q2", "q3"))  # no answerable query refused
    assert main(["refusal", str(res.path), "--arm", INNER]) == 2
    assert "records no confidence" in capsys.readouterr().err
    assert main(["refusal", str(res.path), "--arm", "nope"]) == 2


@pytest.mark.slow
def test_the_report_notebook_plots_the_trade_off(results, tmp_path):
    import shutil

    from evalkit.reports import rendering

    res, _, _ = results
    copy = tmp_path / "res"
    shutil.copytree(res.path, copy)
    html = rendering.render(copy)
    png = copy / "figures" / "refusal_tradeoff.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Refusal trade-off" in html.read_text() and "AUROC" in html.read_text()


def test_cli_fit_prints_an_evidence_policy_that_runs(small, tmp_path, capsys):
    from evalkit import arms

    c, store = small
    query_file(tmp_path / "q.toml", *QUERIES, name="small-refusal")
    cache = ["--cache", str(store.path)]
    assert main(["refusal", "fit", "--qrels", str(tmp_path / "q.toml"), "--docs", str(c.root), *cache]) == 0
    policy = capsys.readouterr().out.strip().splitlines()[-1]
    assert policy.startswith("evidence(weights=") and policy.count(":") == 4
    arm = arms.make(f"admit(arm=global-index,policy={policy})", c, store)
    assert 0 < arm.search("define a new float type", 5).confidence < 1
    assert main(["refusal", "fit", "--qrels", str(tmp_path / "q.toml"), "--docs", str(c.root), "--policy",
                 "semantic", *cache]) == 2
    assert "no weights to fit" in capsys.readouterr().err

import json
import math

import pandas as pd
import pytest
import pytrec_eval

from evalkit import arms, qrels, recorded
from evalkit import runner
from evalkit.cli import main
from evalkit.records import Answer, Hit, Query
from evalkit.results import Results

from .conftest import SMALL_QUERIES


@pytest.fixture
def qset(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SMALL_QUERIES)
    return qrels.load(p)


class Flaky(arms.Arm):
    """Answers from global-index, but dies after ``fail_after`` searches: an interrupted run."""
    name = "flaky"
    defaults = {"fail_after": -1}
    calls: list = []

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.inner = arms.make("global-index", corpus, store)

    def search(self, query, k):
        Flaky.calls.append(query)
        if 0 <= self.params["fail_after"] < len(Flaky.calls):
            raise KeyboardInterrupt
        return self.inner.search(query, k)


@pytest.fixture
def with_flaky(monkeypatch):
    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "flaky": Flaky})
    Flaky.calls = []


def test_run_writes_a_self_describing_results_directory(small, qset, tmp_path):
    c, store = small
    out = runner.run(c, store, qset, ["keyword", "global-index"], tmp_path / "res", progress=False)
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "complete" and [a["label"] for a in m["arms"]] == ["keyword", "global-index"]
    assert m["corpus"]["digest"] == c.digest() and m["qrels"]["digest"] == qset.digest
    assert m["environment"]["sqlite"] and m["environment"]["packages"]["pymupdf"]
    cal = m["environment"]["calibration"]  # how fast the machine was at the start and the end of the run
    assert cal["cpu_model"] and cal["cores"] >= 1 and cal["start"]["time"] <= cal["end"]["time"]
    assert cal["start"]["reference_ms"] > 0 and cal["reference_ms"] > 0 and len(cal["end"]["load_average"]) == 3
    frame = pd.read_parquet(out / "per_query.parquet")
    assert len(frame) == 8 and set(frame.columns) >= {"nDCG@10", "nDCG@10(doc)", "GoldDoc@3", "outcome", "latency_s",
                                                      "ties@10"}
    abstain = frame[frame["class"] == "abstain"]
    assert abstain["nDCG@10"].isna().all() and (abstain["outcome"] == "answered_abstain").all()
    # q4 matches nothing: an empty answer scores 0 and counts as a (wrongful) refusal, it is not dropped
    q4 = frame[frame["query"] == "q4"]
    assert (q4["nDCG@10"] == 0).all() and (q4["outcome"] == "wrongful_refusal").all()
    summary = pd.read_csv(out / "summary.csv")
    alls = summary[summary["class"] == "all"].set_index("arm")
    answerable = frame[(frame["class"] != "abstain")].groupby("arm")["nDCG@10"].mean()
    assert alls.loc["keyword", "nDCG@10"] == pytest.approx(answerable["keyword"])
    assert alls.loc["keyword", "wrongful_refusal_rate"] == pytest.approx(1 / 3)
    assert alls.loc["keyword", "correct_refusal_rate"] == 0
    # Judged@10: over answered answerable queries in "all" (q4's empty answer has none), abstain in its own row
    assert q4["Judged@10"].isna().all() and (abstain["Judged@10"] == 0).all()  # q3 judged nothing it was shown
    judged = frame[frame["class"] != "abstain"].groupby("arm")["Judged@10"].mean()
    assert alls.loc["keyword", "Judged@10"] == pytest.approx(judged["keyword"]) and 0 < judged["keyword"] < 1
    assert summary.set_index(["arm", "class"]).loc[("keyword", "abstain"), "Judged@10"] == 0


def test_trec_files_score_identically_in_pytrec_eval(small, qset, tmp_path):
    c, store = small
    out = runner.run(c, store, qset, ["keyword", "hybrid"], tmp_path / "res", progress=False)
    qd: dict = {}
    for line in qrels.to_trec(qset, "page").splitlines():
        qid, _, pid, gain = line.split()
        qd.setdefault(qid, {})[pid] = int(gain)
    frame = pd.read_parquet(out / "per_query.parquet")
    hybrid = json.loads((out / "manifest.json").read_text())["arms"][1]
    assert hybrid["models"][0]["weights"].startswith("sha256:8199be6f") and hybrid["models"][0]["window"] == 160
    for label, fname in [(a["label"], a["file"]) for a in json.loads((out / "manifest.json").read_text())["arms"]]:
        run: dict = {}
        prev: dict = {}
        for line in (out / "runs" / f"{fname}.trec").read_text().splitlines():
            qid, _, pid, rank, score, tag = line.split()
            assert float(score) < prev.get(qid, math.inf)  # strictly decreasing
            prev[qid] = float(score)
            run.setdefault(qid, {})[pid] = float(score)
        trec = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10", "recip_rank", "recall_10"}).evaluate(run)
        # Judged@10 = P_10 with every judged page relevant, over the pages shown (at most 10)
        judged = pytrec_eval.RelevanceEvaluator({q: {p: 1 for p in d} for q, d in qd.items()}, {"P_10"}).evaluate(run)
        ours = frame[frame["arm"] == label].set_index("query")
        for qid, m in trec.items():
            assert m["ndcg_cut_10"] == pytest.approx(ours.loc[qid, "nDCG@10"], abs=1e-9)
            assert m["recip_rank"] == pytest.approx(ours.loc[qid, "RR"], abs=1e-9)
            assert m["recall_10"] == pytest.approx(ours.loc[qid, "Recall@10"], abs=1e-9)
            shown = min(10, len(run[qid]))
            assert judged[qid]["P_10"] * 10 / shown == pytest.approx(ours.loc[qid, "Judged@10"], abs=1e-9)


def test_a_misspelt_arm_stops_the_run_before_anything_is_written(small, qset, tmp_path):
    c, store = small
    with pytest.raises(arms.ArmError, match="no parameter 'idf'"):
        runner.run(c, store, qset, ["global-index", "keyword(idf=doc)"], tmp_path / "res", progress=False)
    assert not (tmp_path / "res").exists()


def test_trec_lines_keep_the_arms_order_through_trec_eval():
    hits = (Hit("a.pdf", 1, 0.5), Hit("b.pdf", 1, 0.5), Hit("c.pdf", 2, 0.5 - 1e-9))
    lines = runner.trec_lines("q", hits, "t")
    assert [line.split()[2:5] for line in lines] == [["a.pdf#1", "1", "3"], ["b.pdf#1", "2", "2"],
                                                     ["c.pdf#2", "3", "1"]]
    run = {"q": {ln.split()[2]: float(ln.split()[4]) for ln in lines}}
    # trec_eval would put b before a on the raw tie (id descending), and c's tiny gap collapses at its precision
    assert pytrec_eval.RelevanceEvaluator({"q": {"a.pdf#1": 1}}, {"recip_rank"}).evaluate(run)["q"]["recip_rank"] == 1.0


@pytest.mark.parametrize("result", [
    Answer((Hit("a.pdf", 3, 1.25), Hit("b#1.pdf", 1, -0.5)), confidence=0.75),
    Answer(refused=True, reason="no evidence", confidence=0.0),
    Answer(error="TimeoutError: no answer in 5 s"),
])
def test_a_jsonl_record_reads_back_as_the_same_answer(result):
    q = Query("q1", "needle", "extra space between rows", ())
    rec = json.loads(json.dumps(runner._record(q, result, 0.012)))  # through the file's own encoding
    assert (rec["query"], rec["text"], rec["latency"]) == ("q1", q.text, 0.012)
    assert recorded.answer(rec) == result


def test_an_interrupted_run_resumes_without_recomputing_or_losing(small, qset, tmp_path, with_flaky):
    c, store = small
    out = tmp_path / "res"
    with pytest.raises(KeyboardInterrupt):
        runner.run(c, store, qset, ["keyword", "flaky(fail_after=2)"], out, progress=False)
    assert (out / "runs" / "keyword.jsonl").read_text().count("\n") == 4
    partial = out / "runs" / "flaky(fail_after=2).jsonl"
    assert partial.read_text().count("\n") == 2
    with open(partial, "a") as f:
        f.write('{"query": "q3", "hits": [["x')  # a line cut short by the interruption
    with pytest.raises(runner.RunError, match="--resume"):
        runner.run(c, store, qset, ["keyword", "flaky(fail_after=2)"], out, progress=False)
    with pytest.raises(runner.RunError, match="its depth differs"):
        runner.run(c, store, qset, ["keyword"], out, resume=True, progress=False, k=5)
    with pytest.raises(runner.RunError, match="its corpus differs"):
        runner.run(c.__class__(c.name, c.root, c.documents[:-1]), store, qset, ["keyword"], out, resume=True,
                   progress=False)
    Flaky.calls = []
    # same specs; the arm no longer fails because only the 2 missing queries are asked
    runner.run(c, store, qset, ["keyword", "flaky(fail_after=2)"], out, resume=True, progress=False)
    assert Flaky.calls == ["How do I draw a gantt chart with pgfgantt?", "zzzqx qqqzzv"]
    res = Results.load(out)
    assert res.manifest["status"] == "complete" and len(res.per_query) == 8
    assert partial.read_text().count("\n") == 4
    # resuming with an arm added runs only that arm; one left out leaves the tables
    Flaky.calls = []
    runner.run(c, store, qset, ["flaky(fail_after=2)", "global-index"], out, resume=True, progress=False)
    assert Flaky.calls == [] and Results.load(out).arms == ["flaky(fail_after=2)", "global-index"]
    assert len(Results.load(out).per_query) == 8 and (out / "runs" / "keyword.trec").exists()


def test_cli_run_on_any_folder_with_a_headerless_query_file(small, tmp_path, capsys):
    c, _ = small
    q = tmp_path / "plain.toml"
    q.write_text("[[query]]" + SMALL_QUERIES.split("[[query]]", 1)[1])  # no [set] header
    out = tmp_path / "res"
    cache = small[1].path
    assert main(["run", "--docs", str(c.root), "--cache", str(cache), "--qrels", str(q), "--arms",
                 "keyword,global-index", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "nDCG@10 page" in printed and "global-index" in printed
    assert main(["summary", str(out), "--by", "class"]) == 0
    table = capsys.readouterr().out
    assert "needle" in table and "abstain" in table and "n/a" in table
    assert main(["summary", str(tmp_path / "nothing")]) == 2


def test_cli_run_rejects_qrels_that_do_not_fit(small, tmp_path, capsys):
    c, store = small
    q = tmp_path / "bad.toml"
    q.write_text('[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\njudgments = [{ doc = "nope.pdf", page = 1, gain = '
                 '1 }]\n')
    assert main(["run", "--docs", str(c.root), "--cache", str(store.path), "--qrels", str(q), "--arms", "keyword",
                 "--out", str(tmp_path / "r")]) == 2
    assert "'nope.pdf' is not in the corpus" in capsys.readouterr().err


def test_resume_after_the_query_set_changed_asks_only_what_changed(small, qset, tmp_path, with_flaky):
    c, store = small
    out = runner.run(c, store, qset, ["flaky"], tmp_path / "res", progress=False)
    assert len(Flaky.calls) == 4
    Flaky.calls = []
    changed = tmp_path / "changed.toml"
    changed.write_text(SMALL_QUERIES.replace('gain = 1 }]', 'gain = 2 }]').replace("define a new float type",
                                                                               "how do I define a new float type"))
    qs2 = qrels.load(changed)
    # what the grades' new reader is told: by the judge, which reads the run's answers, and by a run again
    with pytest.raises(recorded.ResultsError, match=r"not this one \(.*\): run it again with --resume \(resume=True"):
        recorded.check_run(qs2, Results.load(out))
    with pytest.raises(runner.RunError, match=r"already holds a run: pass --resume \(resume=True in Python\)"):
        runner.run(c, store, qs2, ["flaky"], out, progress=False)
    runner.run(c, store, qs2, ["flaky"], out, resume=True, progress=False)
    assert Flaky.calls == ["how do I define a new float type"]  # judgments changed: nothing re-asked
    res = Results.load(out)
    assert res.manifest["qrels"]["digest"] == qs2.digest
    q1 = qrels.load(changed)["q1"]
    assert [j.gain for j in q1.judgments] == [3, 2] and len(res.per_query) == 4

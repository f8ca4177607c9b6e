import pandas as pd
import pytest

from evalkit import dirs, qrels
from evalkit.cli import main
from evalkit.tune import QuerySetOn, TuneError, check_held_out, choose, grid, means, tune

from .conftest import SMALL_QUERIES, one_line_error, query, query_file

# Three other questions about the same ten manuals: the held-out set
OTHER_QUERIES = (
    query("o1", "needle", "set the line spacing to double", ("setspace-doc.pdf", 1, 3)),
    query("o2", "needle", "include pages of an external PDF document", ("pdfpages.pdf", 1, 2)),
    query("o3", "spread", "captions of subfigures", ("subcaption.pdf", 1, 2)),
)


@pytest.fixture(scope="module")
def sets(small, tmp_path_factory):
    c, store = small
    d = tmp_path_factory.mktemp("tune-sets")
    (d / "a.toml").write_text(SMALL_QUERIES)
    query_file(d / "b.toml", *OTHER_QUERIES, name="small-other")
    return (QuerySetOn(c, store, qrels.load(d / "a.toml")), QuerySetOn(c, store, qrels.load(d / "b.toml")), d)


def test_grid_spells_every_combination_in_order():
    assert grid("hybrid(keyword=global-index,weight=0.1)", {"weight": ["0.3", "0.7"],
                                                            "norm": ["minmax", "zscore"]}) == [
        "hybrid(keyword=global-index,weight=0.3,norm=minmax)", "hybrid(keyword=global-index,weight=0.3,norm=zscore)",
        "hybrid(keyword=global-index,weight=0.7,norm=minmax)", "hybrid(keyword=global-index,weight=0.7,norm=zscore)"]
    assert grid("global-index", {}) == ["global-index"]


def test_a_held_out_set_that_is_the_tuning_set_or_shares_a_query_is_refused(sets, tmp_path):
    a, b, _ = sets
    with pytest.raises(TuneError, match="is the tuning set: its figures would be in-sample"):
        check_held_out(a, a)
    leaky = tmp_path / "leaky.toml"  # b plus one of a's questions, reworded only in case
    query_file(leaky, *OTHER_QUERIES, query("o4", "spread", "DEFINE A NEW FLOAT TYPE", ("float.pdf", 3, 3)),
               name="small-other")
    with pytest.raises(TuneError, match="shares 1 query text"):
        check_held_out(a, QuerySetOn(b.corpus, b.store, qrels.load(leaky)))
    check_held_out(a, b)  # disjoint: fine


def test_tune_chooses_on_one_set_and_gates_on_the_other(sets, tmp_path):
    a, b, _ = sets
    t = tune(["keyword", "global-index"], a, b, tmp_path / "t", measure="nDCG@10", baseline="keyword",
             rules=dirs.shipped("gate.toml"), progress=False)
    # the choice is the sweep's best on the tuning set, and its figures are those of the tuning run
    assert list(t.sweep.index) == ["keyword", "global-index"] and list(t.sweep.columns) == ["nDCG@10"]
    assert t.chosen == t.sweep["nDCG@10"].idxmax()
    assert t.sweep["nDCG@10"].equals(means(__import__("evalkit").results.Results.load(t.sweep_dir), "nDCG@10"))
    text = t.text()
    assert "tuned on small × small-set: nDCG@10, IN-SAMPLE" in text and "held out on small × small-other" in text
    if t.chosen == "keyword":
        assert t.verdict is None and "nothing to gate" in text
    else:  # the verdict is on the held-out set's queries only
        assert t.verdict.query_set.startswith("small-other") and t.verdict.queries == 3
        assert (t.held_out_dir / "gate.json").exists()


def test_cli_tune_refuses_gating_on_the_tuning_set(sets, capsys, monkeypatch):
    a, _, d = sets
    monkeypatch.setenv("EVALKIT_CACHE", str(a.store.path.parent))
    where = f"{a.corpus.root}={d / 'a.toml'}"
    assert main(["tune", "--arm", "global-index", "--tune-on", where, "--held-out", where,
                 "--out", str(d / "x")]) == 2
    one_line_error(capsys, "in-sample, not held out")
    assert main(["tune", "--arm", "global-index", "--grid", "weight", "--tune-on", where, "--held-out", where]) == 2
    one_line_error(capsys, "--grid wants NAME=V1,V2")


def test_cli_tune_checks_its_candidates_once(sets, tmp_path, monkeypatch, capsys):
    from evalkit import runner

    a, b, d = sets
    monkeypatch.setenv("EVALKIT_CACHE", str(a.store.path.parent))
    calls = []
    real = runner.check_arms

    def counted(specs, k):
        calls.append(tuple(specs))
        return real(specs, k)

    monkeypatch.setattr(runner, "check_arms", counted)  # the CLI's check and any of runner.run's
    query_file(tmp_path / "held.toml", *OTHER_QUERIES[:2], name="small-held")  # needles: `run` accepts them
    main(["tune", "--arm", "global-index,score-merge", "--tune-on", f"{a.corpus.root}={d / 'a.toml'}",
          "--held-out", f"{b.corpus.root}={tmp_path / 'held.toml'}", "--baseline-arm", "keyword",
          "--out", str(tmp_path / "t")])
    assert "evalkit gate: " in capsys.readouterr().out  # both runs were made: the chosen arm was gated held out
    assert calls.count(("global-index", "score-merge")) == 1, calls  # by the CLI, before a corpus opens


def test_choose_keeps_a_measure_within_the_margin_of_the_baselines():
    table = pd.DataFrame({"doc": [0.70, 0.80, 0.78, 0.75], "page": [0.50, 0.40, 0.485, 0.49]},
                         index=["base", "greedy", "kept", "also"])
    assert choose(table, "doc", {}, "base") == "greedy"  # nothing kept: the best by the measure (not the baseline)
    assert choose(table, "doc", {"page": 0.02}, "base") == "kept"  # greedy gives up 0.10 of page
    assert choose(table, "doc", {"page": 0.01}, "base") == "also"  # 0.485 < 0.49: kept is out
    assert choose(table, "doc", {"page": 0.0}, "base") == "base"  # none keeps it: the baseline stays


def test_tune_with_keep_sweeps_the_baseline_too_and_chooses_within_the_margin(sets, tmp_path):
    a, b, _ = sets
    t = tune(["global-index", "score-merge"], a, b, tmp_path / "t", measure="nDCG@10(doc)", baseline="keyword",
             rules=dirs.shipped("gate.toml"), progress=False, keep={"nDCG@10": 0.02})
    assert list(t.sweep.index) == ["global-index", "score-merge", "keyword"]
    assert list(t.sweep.columns) == ["nDCG@10(doc)", "nDCG@10"]
    assert t.chosen == choose(t.sweep, "nDCG@10(doc)", {"nDCG@10": 0.02}, "keyword")
    assert "keeping nDCG@10 within 0.02 of the baseline's" in t.text() and "(baseline)" in t.text()
    with pytest.raises(TuneError, match="cannot choose by or keep 'Judged@10'"):
        tune(["global-index"], a, b, tmp_path / "u", baseline="keyword", keep={"Judged@10": 0.02}, progress=False)


def test_tune_re_times_both_arms_side_by_side_for_the_latency_rule(sets, tmp_path):
    a, b, _ = sets
    t = tune(["global-index"], a, b, tmp_path / "t", baseline="keyword", rules=dirs.shipped("gate.toml"),
             progress=False)
    latency = next(o for o in t.verdict.outcomes if o.type == "latency")
    assert latency.status != "skipped", latency.summary
    assert latency.numbers  # the paired timing it decided on


def test_tune_with_keep_does_not_sweep_the_baseline_twice_when_a_candidate_is_it(sets, tmp_path):
    a, b, _ = sets
    # keyword(tiebreak=doc) is keyword with its default written out: the same arm, run once
    t = tune(["keyword(tiebreak=doc)", "global-index"], a, b, tmp_path / "t", measure="nDCG@10(doc)",
             baseline="keyword", rules=dirs.shipped("gate.toml"), progress=False, keep={"nDCG@10": 0.02})
    assert list(t.sweep.index) == ["keyword", "global-index"]

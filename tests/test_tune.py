import pytest

from evalkit import dirs, qrels
from evalkit.cli import main
from evalkit.tune import QuerySetOn, TuneError, check_held_out, grid, means, tune

from .conftest import SMALL_QUERIES, one_line_error

# Three other questions about the same ten manuals: the held-out set
OTHER_QUERIES = '''
[set]
name = "small-other"
[[query]]
id = "o1"
class = "needle"
text = "set the line spacing to double"
judgments = [{ doc = "setspace-doc.pdf", page = 1, gain = 3 }]
[[query]]
id = "o2"
class = "needle"
text = "include pages of an external PDF document"
judgments = [{ doc = "pdfpages.pdf", page = 1, gain = 2 }]
[[query]]
id = "o3"
class = "spread"
text = "captions of subfigures"
judgments = [{ doc = "subcaption.pdf", page = 1, gain = 2 }]
'''


@pytest.fixture(scope="module")
def sets(small, tmp_path_factory):
    c, store = small
    d = tmp_path_factory.mktemp("tune-sets")
    (d / "a.toml").write_text(SMALL_QUERIES)
    (d / "b.toml").write_text(OTHER_QUERIES)
    return (QuerySetOn(c, store, qrels.load(d / "a.toml")), QuerySetOn(c, store, qrels.load(d / "b.toml")), d)


def test_grid_spells_every_combination_in_order():
    assert grid("hybrid(keyword=global-index,weight=0.1)", {"weight": ["0.3", "0.7"], "norm": ["minmax", "zscore"]}) == [
        "hybrid(keyword=global-index,weight=0.3,norm=minmax)", "hybrid(keyword=global-index,weight=0.3,norm=zscore)",
        "hybrid(keyword=global-index,weight=0.7,norm=minmax)", "hybrid(keyword=global-index,weight=0.7,norm=zscore)"]
    assert grid("global-index", {}) == ["global-index"]


def test_a_held_out_set_that_is_the_tuning_set_or_shares_a_query_is_refused(sets, tmp_path):
    a, b, _ = sets
    with pytest.raises(TuneError, match="is the tuning set: its figures would be in-sample"):
        check_held_out(a, a)
    leaky = tmp_path / "leaky.toml"  # b plus one of a's questions, reworded only in case
    leaky.write_text(OTHER_QUERIES + '''
[[query]]
id = "o4"
class = "spread"
text = "DEFINE A NEW FLOAT TYPE"
judgments = [{ doc = "float.pdf", page = 3, gain = 3 }]
''')
    with pytest.raises(TuneError, match="shares 1 query text"):
        check_held_out(a, QuerySetOn(b.corpus, b.store, qrels.load(leaky)))
    check_held_out(a, b)  # disjoint: fine


def test_tune_chooses_on_one_set_and_gates_on_the_other(sets, tmp_path):
    a, b, _ = sets
    t = tune(["keyword", "global-index"], a, b, tmp_path / "t", measure="nDCG@10", baseline="keyword",
             rules=dirs.shipped("gate.toml"), progress=False)
    # the choice is the sweep's best on the tuning set, and its figures are those of the tuning run
    assert list(t.sweep.index) == ["keyword", "global-index"]
    assert t.chosen == t.sweep.idxmax() and t.sweep.equals(means(__import__("evalkit").results.Results.load(t.sweep_dir), "nDCG@10"))
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

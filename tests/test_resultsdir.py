import json

import pytest

from evalkit import arms, resultsdir
from evalkit.cli import main
from evalkit.records import Answer

from .conftest import SMALL_QUERIES, one_line_error, write_results

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def test_a_foreign_folder_is_refused_and_left_alone(tiny, capsys):
    home, argv = tiny
    (home / "res").mkdir()
    (home / "res" / "summary.csv").write_text("mine\n")
    assert main(argv) == 2
    one_line_error(capsys, "is not empty and is not an evalkit results directory", "summary.csv")
    assert (home / "res" / "summary.csv").read_text() == "mine\n" and not (home / "res" / "runs").exists()


def test_a_second_run_in_the_same_directory_names_the_holder(tiny, capsys):
    home, argv = tiny
    with resultsdir.owned(home / "res", "the test"):
        assert main(argv) == 2
        one_line_error(capsys, "is in use by another run (pid", "the test")
        assert resultsdir.held(home / "res")
    assert not resultsdir.held(home / "res")
    assert main(argv) == 0


def test_answers_no_manifest_describes_are_never_trusted(tiny, capsys):
    home, argv = tiny
    assert main(argv) == 0
    runs = home / "res" / "runs"
    fake = json.dumps({"query": "q1", "text": "walrus migration", "hits": [["ghost.pdf", 1, 9.0]],
                       "refused": False, "reason": "", "latency": 0.0})
    (runs / "global-index.jsonl").write_text(fake + "\n")
    argv[argv.index("keyword")] = "keyword,global-index"
    assert main(argv + ["--resume"]) == 0
    assert "moved aside to global-index.jsonl.untrusted" in capsys.readouterr().err
    assert "ghost.pdf" not in (runs / "global-index.trec").read_text()
    assert (runs / "global-index.jsonl.untrusted").read_text() == fake + "\n"


class Broken(arms.Arm):
    """An arm that cannot go on (a server that died twice): the run stops. An exception of one query is
    that query's error instead (tests/test_api.py)."""
    name = "broken"

    def search(self, query, k) -> Answer:
        raise arms.ArmFailure("the arm fell over")


def test_a_failed_run_is_marked_failed(tiny, capsys, monkeypatch):
    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "broken": Broken})
    home, argv = tiny
    argv[argv.index("keyword")] = "keyword,broken"
    assert main(argv) == 2
    one_line_error(capsys, "the arm fell over")
    m = json.loads((home / "res" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["error"] == "ArmFailure: the arm fell over"
    assert not resultsdir.held(home / "res")


SLOW_RUN = """
import os, sys, time
from evalkit import arms
from evalkit.cli import main

class Slow(arms.Arm):
    '''global-index that never answers the query named by $STALL_ON: a run that stops in the middle, to
    be killed there, whatever the machine's speed.'''
    name = "slow"

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.inner = arms.make("global-index", corpus, store)

    def search(self, query, k):
        if query == os.environ.get("STALL_ON"):
            time.sleep(3600)
        return self.inner.search(query, k)

real = arms.registry
arms.registry = lambda: {**real(), "slow": Slow}
sys.exit(main(sys.argv[1:]))
"""


def test_kill_9_then_resume_gives_byte_identical_trec_files(small, tmp_path, capsys):
    import os
    import subprocess
    import sys
    import time


    c, store = small
    q = tmp_path / "small.toml"
    q.write_text(SMALL_QUERIES + "".join(f'\n[[query]]\nid = "x{i}"\nclass = "abstain"\ntext = "gantt chart number '
                                         f'{i}"\n'
                                   for i in range(8)))
    def run(out, *extra, stall=""):
        return subprocess.Popen([sys.executable, "-c", SLOW_RUN, "run", "--docs", str(c.root), "--cache",
                                 str(store.path), "--qrels", str(q), "--arms", "keyword,slow", "--out", str(out),
                                 *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "STALL_ON": stall})

    whole = run(tmp_path / "whole")
    assert whole.wait(timeout=300) == 0, whole.stderr.read()[-2000:]
    victim = run(tmp_path / "killed", stall="gantt chart number 3")  # the 8th of 12 queries
    answers = tmp_path / "killed" / "runs" / "slow.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (answers.exists() and answers.read_text().count("\n") >= 3):
        time.sleep(0.02)
    victim.kill()  # SIGKILL: no handler runs
    victim.wait()
    done = answers.read_text().count("\n")
    assert 3 <= done < 12, "the run was not killed in the middle"
    assert main(["summary", str(tmp_path / "killed")]) == 2  # no tables were written yet
    manifest = json.loads((tmp_path / "killed" / "manifest.json").read_text())
    assert resultsdir.status(tmp_path / "killed", manifest).startswith("interrupted (killed")
    resumed = run(tmp_path / "killed", "--resume")
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()[-2000:]
    for f in ("keyword.trec", "slow.trec"):
        assert (tmp_path / "killed" / "runs" / f).read_bytes() == (tmp_path / "whole" / "runs" / f).read_bytes()
    assert json.loads((tmp_path / "killed" / "manifest.json").read_text())["status"] == "complete"


def test_resume_refuses_to_mix_all_text_and_visible_text(tiny, capsys):
    home, argv = tiny
    assert main(argv) == 0
    assert main(argv + ["--resume", "--hidden-text", "drop"]) == 2
    one_line_error(capsys, "its extractor differs")


class CtrlC(arms.Arm):
    name = "ctrl-c"

    def search(self, query, k) -> Answer:
        raise KeyboardInterrupt


def test_ctrl_c_marks_the_run_interrupted_and_exits_130(tiny, capsys, monkeypatch):
    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "ctrl-c": CtrlC})
    home, argv = tiny
    argv[argv.index("keyword")] = "keyword,ctrl-c"
    assert main(argv) == 130
    one_line_error(capsys, "interrupted", "--resume")
    m = json.loads((home / "res" / "manifest.json").read_text())
    assert m["status"] == "interrupted" and (home / "res" / "runs" / "keyword.trec").exists()


def test_a_report_waits_for_no_run_it_names_the_holder(tiny, capsys):
    home, argv = tiny
    assert main(argv) == 0
    with resultsdir.owned(home / "res", "evalkit run"):
        assert main(["report", str(home / "res")]) == 2
        one_line_error(capsys, "is in use by another run", "evalkit run")


FIELDS = ["corpus", "corpus.name", "corpus.digest", "corpus.documents", "qrels", "qrels.name", "qrels.digest",
          "qrels.queries", "qrels.path", "qrels.gains", "arms", "arms.0", "arms.0.label", "arms.0.spec",
          "arms.0.params", "status", "depth", "environment", "environment.machine", "specs"]


@pytest.mark.slow
def test_any_manifest_field_of_the_wrong_type_is_bad_input_never_a_crash(tmp_path_factory, capsys):
    """Every field a reader uses, replaced by every JSON type or removed: summary, compare and gate give
    exit 0 (the value fits) or exit 2 with one line; never exit 1 (for gate: "a rule failed")."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from .conftest import write_results

    values = st.sampled_from([None, 0, 2.5, True, "x", [], ["x"], {}, {"x": 1}, "<delete>"])

    @given(field=st.sampled_from(FIELDS), value=values)
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    def check(field, value):
        d = write_results(tmp_path_factory.mktemp("m") / "r", {"a": {"nDCG@10": [0.5, 0.2]}}, ["needle", "needle"])
        m = json.loads((d / "manifest.json").read_text())
        *parents, last = field.split(".")
        holder = m
        for key in parents:
            holder = holder[int(key)] if isinstance(holder, list) else holder[key]
        key = int(last) if isinstance(holder, list) else last
        if value == "<delete>":
            holder.pop(key) if isinstance(holder, list) else holder.pop(key, None)
        else:
            holder[key] = value
        (d / "manifest.json").write_text(json.dumps(m))
        for argv in (["summary", str(d)], ["compare", str(d), str(d), "--resamples", "10"],
                     ["gate", "--baseline", str(d), "--candidate", str(d), "--rules", str(ROOT / "gate.toml")]):
            capsys.readouterr()
            code = main(argv)
            err = capsys.readouterr().err
            assert code == 0 or (code == 2 and err.count("\n") == 1 and "unexpected" not in err), (field,
                                                                                                   value, argv, err)

    check()


@pytest.mark.parametrize("command", [["summary", "R"], ["best", "R"], ["compare", "R:base", "R:cand"],
                                     ["gate", "--baseline", "R:base", "--candidate", "R:cand"], ["report", "R"]])
def test_duplicate_per_query_rows_are_one_line_naming_the_pair_for_every_reader(tmp_path, capsys, command):
    """A (query, arm) with two rows: summary averaged them and the gate failed pairing 5 scores with 4."""
    import pandas as pd

    res = write_results(tmp_path / "r", {"base": {"nDCG@10": [0.2, 0.5, 0.5]}, "cand": {"nDCG@10": [0.3, 0.6, 0.9]}},
                        ["needle"] * 3)
    frame = pd.read_parquet(res / "per_query.parquet")
    pd.concat([frame, frame.iloc[[4]]]).to_parquet(res / "per_query.parquet", index=False)
    assert main([str(res) if a == "R" else a.replace("R:", f"{res}:") for a in command]) == 2
    one_line_error(capsys, str(res / "per_query.parquet"), "query 'q001' of arm 'cand' has more than one row")
    assert sorted(p.name for p in res.iterdir() if p.name != resultsdir.LOCK) == ["manifest.json", "per_query.parquet"]


def test_a_per_query_file_without_a_column_readers_use_is_named(tmp_path, capsys):
    import pandas as pd

    res = write_results(tmp_path / "r", {"base": {"nDCG@10": [0.2]}}, ["needle"])
    pd.read_parquet(res / "per_query.parquet").drop(columns="arm").to_parquet(res / "per_query.parquet")
    assert main(["summary", str(res)]) == 2
    one_line_error(capsys, str(res / "per_query.parquet"), "column 'arm' is missing")


@pytest.mark.parametrize("command", [["summary", "R"], ["gate", "--baseline", "R:base", "--candidate", "R:cand"],
                                     ["report", "R"]])
def test_a_measure_column_of_strings_is_named_for_every_reader(tmp_path, capsys, command):
    """Results from elsewhere with a measure written as text: a mean would fail far from the file, or add
    strings end to end."""
    import pandas as pd

    res = write_results(tmp_path / "r", {"base": {"nDCG@10": [0.2, 0.5]}, "cand": {"nDCG@10": [0.3, 0.6]}},
                        ["needle"] * 2)
    frame = pd.read_parquet(res / "per_query.parquet")
    frame["GoldDoc@3"] = frame["GoldDoc@3"].map(lambda v: f"{v:.1f}")
    frame.to_parquet(res / "per_query.parquet", index=False)
    assert main([str(res) if a == "R" else a.replace("R:", f"{res}:") for a in command]) == 2
    one_line_error(capsys, str(res / "per_query.parquet"), "column 'GoldDoc@3' holds", "not numbers")


@pytest.mark.parametrize("field, value, says", [
    ("specs", [1], "'specs[0]' is not a string"),
    ("environment.machine.memory_bytes", "lots", "'environment.machine.memory_bytes' is not a whole number"),
    ("environment.calibration", "fast", "'environment.calibration' is not a table"),
    ("environment.calibration.start", 1, "'environment.calibration.start' is not a table"),
    ("environment.calibration.start.load_average", ["high"],
     "'environment.calibration.start.load_average[0]' is not a number"),
    ("arms.0.models", ["m"], "'arms[0].models[0]' is not a table"),
    ("arms.0.file", 3, "'arms[0].file' is not a string"),
    ("arms.0.describe.server", "x", "'arms[0].describe.server' is not a table"),
    ("arms.0.describe.workers", {"tcp://w": {"restarts": "x"}},
     "\"arms[0].describe.workers['tcp://w'].restarts\" is not a whole number"),
])
def test_a_manifest_field_the_report_reads_of_the_wrong_type_is_one_line(tmp_path, capsys, field, value, says):
    """Fields only the report reads (provenance, servers, calibration) are checked where the manifest is read,
    like every other: a report used to fail in its notebook with a TypeError or AttributeError (exit 1)."""
    res = write_results(tmp_path / "r", {"a": {"nDCG@10": [0.5]}}, ["needle"])
    m = json.loads((res / "manifest.json").read_text())
    *parents, last = field.split(".")
    holder = m
    for key in parents:
        holder = holder[int(key)] if isinstance(holder, list) else holder.setdefault(key, {})
    holder[last] = value
    (res / "manifest.json").write_text(json.dumps(m))
    assert main(["report", str(res)]) == 2
    one_line_error(capsys, str(res / "manifest.json"), f"field {says}")

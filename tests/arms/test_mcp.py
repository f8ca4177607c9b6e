"""The mcp arm against a real MCP server over stdio: a tiny one written here with the SDK's server API
(tests/arms/mcp_server.py), and pdf-mcp itself on a few real manuals."""
import json
import math
import os
import re
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from evalkit import arms, corpora, executor, qrels, report_servers
from evalkit import runner
from evalkit.arms import ArmError, ArmFailure
from evalkit.arms.mcp import Mapping, fill, load_definition
from evalkit.cli import main
from evalkit.pages import PageStore
from evalkit.results import Results
from tests.conftest import make_pdf, query, query_file

SERVER = Path(__file__).with_name("mcp_server.py")
SLOW_FIXTURES = {"setup", "shared"}  # each starts the test server: these tests are slow (tests/conftest.py)
REPO = Path(__file__).resolve().parents[2]

CONFIG = '''
[arm.test]
command = "{python}"
args = ["@SERVER@"]
env = { MCP_TEST_STATE = "@STATE@" }
timeout = 600

[arm.test.warmup]
tool = "warm"
arguments = { folder = "{corpus_dir}" }
until = "done"

[arm.test.search]
tool = "search"
arguments = { query = "{query}", k = "{k}", folder = "{corpus_dir}" }

[arm.test.result]
hits = "results.items"
document = "file"
names = "uri"
page = "n"
score = "s"
error = "problem"
refuse_field = "verdict"
refuse_value = "no evidence"

[arm.text]
command = "{python}"
args = ["@SERVER@"]
env = { MCP_TEST_STATE = "@STATE@" }

[arm.text.search]
tool = "search_text"
arguments = { query = "{query}" }

[arm.text.result]
hits = "results.items"
document = "file"
names = "stem"
page = "n"
'''


def _setup(tmp_path):
    """A folder of two tiny PDFs (one name with a space), its corpus, and a config naming the test server."""
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "a.pdf", ["alpha", "beta"])
    make_pdf(docs / "b doc.pdf", ["gamma", "delta"])
    state = tmp_path / "state"
    state.mkdir()
    config = tmp_path / "arms.toml"
    config.write_text(CONFIG.replace("@SERVER@", str(SERVER)).replace("@STATE@", str(state)))
    c = corpora.from_dir(docs, "tiny")  # page counts as the page store gives them: answers are checked against them
    return replace(c, documents=tuple(replace(d, pages=2) for d in c.documents)), config, state


@pytest.fixture
def setup(tmp_path):
    return _setup(tmp_path)


@pytest.fixture
def arm(setup):
    """An arm of its own, for tests that restart, kill or close its server."""
    c, config, _ = setup
    a = arms.make(f"mcp(config={config},name=test)", c, None)
    a.prepare()
    yield a
    a.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One arm (and its state folder) shared by the tests that only ask queries: a server start is slow."""
    c, config, state = _setup(tmp_path_factory.mktemp("mcp"))
    a = arms.make(f"mcp(config={config},name=test)", c, None)
    a.prepare()
    yield a, state
    a.close()


def test_hits_are_mapped_in_the_tool_order_after_the_warm_up(shared):
    arm, state = shared
    assert (state / "warm-calls").read_text() == "2"  # called until it reported done
    r = arm.search("anything", 10)
    assert [(h.doc, h.page, h.score) for h in r.hits] == [("b doc.pdf", 2, 0.9), ("a.pdf", 1, 0.5),
                                                          ("b doc.pdf", 1, 0.5)]
    assert not r.refused and not r.error
    assert [h.page for h in arm.search("anything", 2).hits] == [2, 1]  # {k} reaches the tool as an integer
    assert arm.label == "mcp(name=test)"  # the definition names the arm; where the file lives does not


def test_building_an_arm_starts_nothing_and_prepare_starts_it_once(setup):
    c, config, state = setup
    a = arms.make(f"mcp(config={config},name=test)", c, None)  # what a run builds only to read the label
    try:
        assert a.server is None and not (state / "warm-calls").exists()
        a.prepare()
        a.prepare()
        assert a.server is not None and (state / "warm-calls").read_text() == "2" and len(a.warmup_seconds) == 1
    finally:
        a.close()


def test_refusal_errors_and_unreadable_answers_are_told_apart(shared):
    arm, _ = shared
    refused = arm.search("refuse", 10)
    assert refused.refused and not refused.error and refused.reason == "verdict = 'no evidence'"
    for text, message in (("tool error", "returned an error: .*the index is locked"),
                          ("inline error", "answered with an error: index missing"),
                          ("stranger", "elsewhere.pdf.* is not a document of the corpus")):
        r = arm.search(text, 10)
        assert not r.refused and not r.hits
        assert r.error and re.search(message, r.error), r.error


def test_text_content_is_read_as_json_and_prose_is_an_error(setup):
    c, config, _ = setup
    a = arms.make(f"mcp(config={config},name=text)", c, None)
    try:
        r = a.search("json", 10)
        assert [(h.doc, h.page, h.score) for h in r.hits] == [("a.pdf", 3, 1.0)]  # no score: the tool's order
        assert "not JSON: I found nothing useful" in a.search("prose", 10).error
    finally:
        a.close()


def test_a_timeout_is_an_error_and_the_next_query_is_answered(arm):
    """The server never answers "slow" (it sleeps for an hour), so only the arm's timeout can end that call,
    however loaded the machine; a timeout of 1 s keeps the test short, and the next query has the config's
    600 s (a bound on a hang: on a busy machine a fresh server's first answer can take a minute)."""
    arm.definition = replace(arm.definition, timeout=1)
    busy = arm.server
    r = arm.search("slow", 10)
    assert r.error == "timeout: no answer within 1 s", r.error
    assert busy.dead and arm.server is not busy  # ended, and a fresh server started in its place
    arm.definition = replace(arm.definition, timeout=600)
    assert len(arm.search("anything", 10).hits) == 3


def test_a_dead_server_is_restarted_once_then_the_arm_fails(arm):
    assert len(arm.search("crash once", 10).hits) == 3  # died, restarted (and warmed), query asked again
    assert arm.restarts == 1 and arm.describe()["restarts"] == 1
    with pytest.raises(ArmFailure, match="died again after one restart"):
        arm.search("crash", 10)


def test_a_server_that_died_twice_is_named_with_a_log_that_outlives_the_arm(arm, tmp_path, monkeypatch):
    """The failure named the server log in the arm's temporary folder, which closing the arm removes."""
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    arm.search("crash once", 10)
    with pytest.raises(ArmFailure, match="died again after one restart") as e:
        arm.search("crash", 10)
    arm.close()
    named = re.search(r"server log (\S+): ", str(e.value))
    assert named and Path(named[1]).parent == tmp_path / "cache" / "mcp" / "logs", str(e.value)
    assert "test server starting" in Path(named[1]).read_text() and not arm.tmp.exists()


def test_junk_on_the_servers_stdout_goes_to_its_log_not_the_terminal(arm, capfd):
    """A server that prints to stdout (the protocol's channel): the SDK's parse error and its traceback
    are one line in the server's log, and the query is answered."""
    assert len(arm.search("junk", 10).hits) == 3
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Failed to parse" not in err, err
    logged = [line for line in (arm.tmp / "server.log").read_text().splitlines() if line.startswith("[MCP client")]
    assert len(logged) == 1 and "Failed to parse JSONRPC message" in logged[0] and "loading index... done" in logged[0]


def test_describe_records_the_server_schema_and_transport(shared):
    arm, _ = shared
    d = arm.describe()
    assert d["server"]["name"] == "evalkit-test-server" and {"warm", "search"} <= set(d["server"]["tools"])
    assert len(d["server"]["tools_sha256"]) == 64 and len(d["definition_sha256"]) == 64
    assert d["transport"]["samples"] == 20 and 0 < d["transport"]["ping_median_s"] < math.inf


def test_close_ends_the_process(arm):
    process_dir = arm.tmp
    arm.close()
    assert not process_dir.exists() and arm.server is None
    arm.close()  # idempotent (it also runs at exit)


def _running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` and that have not exited (a zombie has)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (marker.encode() in (proc / "cmdline").read_bytes()
                    and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_server_that_never_answers_is_given_up_and_ended(setup, tmp_path):
    """It never answers (it would sleep for an hour), so only the arm's startup timeout can end the wait, and
    the arm must end the process: no clock is compared, and a slow start on a busy machine changes nothing."""
    c, _, _ = setup
    marker = str(tmp_path / "mute-server")  # in its command line: how the test finds the process
    config = tmp_path / "mute.toml"
    config.write_text(f'''
[arm.mute]
command = "{{python}}"
args = ["-c", "import time; time.sleep(3600)", "{marker}"]
startup_timeout = 3
search = {{ tool = "search" }}
''')
    with pytest.raises(ArmFailure, match="did not start within 3 s"):
        arms.make(f"mcp(config={config},name=mute)", c, None).prepare()
    deadline = time.monotonic() + 600  # a bound on the wait, reached only if the process is left running
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _running(marker), "the server process is still running"


@pytest.mark.parametrize("body, message", [
    ("", "defines no arm 'test'"),
    ("[arm.test]\ncommand = 'x'\n", "needs 'search'"),
    ("[arm.test]\ncommand = 'x'\nsearch = { tool = 't' }\ncolour = 'red'\n", "unknown key.*colour"),
    ("[arm.test]\ncommand = 'x'\nsearch = { tool = 't' }\nresult = { names = 'url' }\n",
     "one of name, stem, path, uri"),
    ("[arm.test]\ncommand = 'x'\nsearch = { tool = 't' }\nresult = { hitz = 'a' }\n", "hitz"),
    ("not toml [", "cannot read"),
])
def test_bad_definitions_name_the_file_and_key(tmp_path, body, message):
    p = tmp_path / "arms.toml"
    p.write_text(body)
    with pytest.raises(ArmError, match=message):
        load_definition(p, "test")


def test_a_run_refuses_a_wrong_definition_before_any_arm_runs(setup, tmp_path):
    c, config, _ = setup
    with pytest.raises(ArmError, match="defines no arm 'tset'"):
        runner.run(c, None, None, ["global-index", f"mcp(config={config},name=tset)"], tmp_path / "res")
    assert not (tmp_path / "res").exists()
    with pytest.raises(ArmError, match="needs config=FILE and name=DEFINITION"):
        arms.validate("mcp(name=x)")


def test_fill_keeps_types_and_refuses_unknown_placeholders():
    assert fill({"k": "{k}", "q": "find {query}!", "xs": ["{k}"], "n": 3}, {"k": 5, "query": "x"}) == \
        {"k": 5, "q": "find x!", "xs": [5], "n": 3}
    with pytest.raises(ArmError, match=r"unknown placeholder \{qury\}"):
        fill("{qury}", {"query": "x"})


def test_mapping_rejects_what_would_corrupt_a_ranking():
    m = Mapping(hits="h", document="d", page="p", score="s", names="name")
    docs = {"a.pdf"}
    assert "repeats a.pdf#1" in m.result({"h": [{"d": "a.pdf", "p": 1, "s": 1}] * 2}, docs).error
    assert "is not a page number" in m.result({"h": [{"d": "a.pdf", "p": "one", "s": 1}]}, docs).error
    assert "is not a number" in m.result({"h": [{"d": "a.pdf", "p": 1, "s": None}]}, docs).error
    assert "no list of hits" in m.result({"x": 1}, docs).error
    assert Mapping(hits="h", document="d", page="p", page_base=0).result(
        {"h": [{"d": "a.pdf", "p": 0}]}, docs).hits[0].page == 1


def test_a_run_records_errors_apart_from_refusals(setup, tmp_path):
    """End to end: errors land in the jsonl with their message, as outcome ``error`` and in ``errors``."""
    c, config, _ = setup
    qfile = tmp_path / "q.toml"
    query_file(qfile, query("ok", "needle", "anything", ("a.pdf", 1, 3)),
               query("err", "needle", "tool error", ("a.pdf", 1, 3)), query("no", "abstain", "refuse"),
               query("err-abstain", "abstain", "inline error"), name="tiny")
    qs = qrels.load(qfile)
    with PageStore(tmp_path / "cache.sqlite") as store:  # the mcp arm reads no page; the run records the extractor
        out = runner.run(c, store, qs, [f"mcp(config={config},name=test)"], tmp_path / "res", progress=False)
    recs = {json.loads(line)["query"]: json.loads(line) for line in (out / "runs" / "mcp(name=test).jsonl").open()}
    assert "the index is locked" in recs["err"]["error"] and recs["ok"]["error"] == ""
    pq = pd.read_parquet(out / "per_query.parquet").set_index("query")
    assert pq.loc["err", "outcome"] == "error" and pq.loc["err", "nDCG@10"] == 0.0 and not pq.loc["err", "refused"]
    assert pq.loc["no", "outcome"] == "correct_refusal" and pq.loc["err-abstain", "outcome"] == "error"
    s = pd.read_csv(out / "summary.csv").set_index(["arm", "class"]).loc[("mcp(name=test)", "all")]
    assert s["errors"] == 2
    assert s["correct_refusal_rate"] == 0.5 and s["wrongful_refusal_rate"] == 0.0  # errors stay in denominators
    assert math.isclose(s["nDCG@10"], pq.loc["ok", "nDCG@10"] / 2)  # the errored query scores 0, not dropped
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["arms"][0]["describe"]["server"]["name"] == "evalkit-test-server"


def test_on_an_executor_the_manifest_describes_the_servers_that_answered(setup, cluster, tmp_path):
    """On a Dask cluster each worker starts its own server and answers the queries; the manifest records
    what those servers report (a restart on a worker shows), not this process's instance, which asked none."""
    c, config, state = setup
    qfile = tmp_path / "q.toml"
    qfile.write_text("".join(f'[[query]]\nid = "q{i}"\nclass = "needle"\ntext = "{text}"\n'
                             'judgments = [{ doc = "a.pdf", page = 1, gain = 3 }]\n'
                             for i, text in enumerate(["anything", "crash once", "anything else", "more"])))
    spec = f"mcp(config={config},name=test)"
    with PageStore(tmp_path / "cache.sqlite") as store, executor.use(cluster):
        out = runner.run(c, store, qrels.load(qfile), [spec], tmp_path / "res", progress=False)
        again = runner.run(c, store, qrels.load(qfile), [spec], tmp_path / "again", progress=False)
    recs = [json.loads(line) for line in (out / "runs" / "mcp(name=test).jsonl").open()]
    assert [r["error"] for r in recs] == [""] * 4 and recs[1]["hits"]  # the crashed server was restarted
    described = json.loads((out / "manifest.json").read_text())["arms"][0]["describe"]
    workers = described["workers"]
    assert list(described) == ["workers"] and 1 <= len(workers) <= 2
    assert all(w.startswith("tcp://") and d["server"]["name"] == "evalkit-test-server" for w, d in workers.items())
    assert sum(d["restarts"] for d in workers.values()) == 1
    row = report_servers.servers(Results.load(out)).loc["mcp(name=test)"]
    assert row["restarts"] == 1 and row["server"].startswith("evalkit-test-server") and " / " not in row["server"]
    # only the workers' servers warmed up (the first needed two calls): this process's instance started none
    later = json.loads((again / "manifest.json").read_text())["arms"][0]["describe"]["workers"]
    warmups = sum(len(d["warmup_seconds"]) for run in (workers, later) for d in run.values())
    assert int((state / "warm-calls").read_text()) == warmups + 1
    # each run's worker instances are its own: the second starts afresh, with nothing of the first's restart
    assert sum(d["restarts"] for d in later.values()) == 0 and all(len(d["warmup_seconds"]) == 1
                                                                   for d in later.values())


def test_the_cli_exits_2_with_one_line_when_the_server_cannot_start(setup, tmp_path, capsys):
    c, config, _ = setup
    bad = tmp_path / "bad.toml"
    bad.write_text(config.read_text().replace('command = "{python}"', 'command = "/nonexistent/server"', 1))
    code = main(["search", "x", "--docs", str(c.root), "--cache", str(tmp_path / "cache.sqlite"),
                 "--arm", f"mcp(config={bad},name=test)"])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err
    assert last.startswith("evalkit: arm mcp(name=test): the server did not start") and "/nonexistent/server" in last


@pytest.mark.parametrize("query, shown", [("far page", "error: invalid answer: hit 1: page 9999 of 'a.pdf' is outside "
                                                       "1..2"),
                                          ("inline error", "error: the tool answered with an error: index missing"),
                                          ("anything", "  1  b doc.pdf#2  0.9000")])
def test_search_shows_what_a_run_would_record(setup, tmp_path, capsys, query, shown):
    """One query checked as the runner checks it: a page the document lacks or a server's error is an error
    (exit 1), never 'no hits' nor 'unexpected KeyError'."""
    c, config, _ = setup
    code = main(["search", query, "--docs", str(c.root), "--cache", str(tmp_path / "cache.sqlite"),
                 "--arm", f"mcp(config={config},name=test)"])
    out, err = capsys.readouterr()
    assert code == (0 if query == "anything" else 1) and "no hits" not in out and "unexpected" not in err, (out, err)
    assert shown in out.splitlines(), out


@pytest.mark.slow
def test_pdf_mcp_on_real_manuals(small, tmp_path):
    """pdf-mcp itself, keyword mode, on three of the small real manuals (it reads every page of the folder
    as it warms: 38 s for all ten): hits map to the corpus's names, a query no page matches is a refusal,
    and its index lands in evalkit's cache folder (the test cache), not the user's."""
    import shutil

    ten, store = small
    for name in ("booktabs.pdf", "parskip.pdf", "cite.pdf"):
        shutil.copy(ten.path(name), tmp_path / name)
    c = store.ingest(corpora.from_dir(tmp_path, "small"), progress=False).corpus
    a = arms.make(f"mcp(config={REPO / 'examples' / 'arms.toml'},name=pdf-mcp-keyword)", c, store)
    try:
        r = a.search("booktabs midrule", 10)
        assert not r.error and "booktabs.pdf" in [h.doc for h in r.hits[:3]]
        assert {h.doc for h in r.hits} <= {d.name for d in c.documents}
        assert a.search("xyzzyq plughq", 10).refused
        d = a.describe()
        assert d["server"]["name"] == "pdf-mcp" and "pdf_corpus_search" in d["server"]["tools"]
        where = Path(os.environ["EVALKIT_CACHE"]) / "mcp" / "pdf-mcp" / f"small-{c.digest()[:16]}"
        assert (where / "cache.db").exists()  # its own cache, where the definition says
    finally:
        a.close()


@pytest.mark.parametrize("name, files, message", [
    ("../../x", {}, "definition name '../../x' holds a path separator"),
    ("test", {"../../escaped.py": "print(1)"}, "files key '../../escaped.py' is not a relative path"),
    ("test", {"/tmp/escaped.py": "print(1)"}, "files key '/tmp/escaped.py' is not a relative path"),
])
def test_a_definition_writes_only_inside_the_servers_folder(tmp_path, name, files, message):
    """The name labels the server's temporary folder and ``files`` are written into it: neither may lead out."""
    import tomli_w

    p = tmp_path / "arms.toml"
    p.write_text(tomli_w.dumps({"arm": {name: {"command": "x", "search": {"tool": "t"}, "files": files}}}))
    with pytest.raises(ArmError, match=message):
        load_definition(p, name)

import json
import math
import shutil

import pytest

from evalkit import arms, corpora, qrels, report_servers
from evalkit import runner
from evalkit.pages import PageStore
from evalkit.records import Answer, Hit
from evalkit.results import Results
from tests.conftest import make_pdf


class Served(arms.Arm):
    """An in-process stand-in for a server-backed arm: fails one query, describes a server."""
    name = "served"

    def search(self, query, k):
        if query == "fail":
            return Answer(error="timeout: no answer within 1 s")
        return Answer((Hit("a.pdf", 1, 1.0),))

    def describe(self):
        return {"definition": "x", "definition_sha256": "d" * 64, "restarts": 1, "warmup_seconds": [2.0, 0.5],
                "server": {"name": "srv", "version": "1.2", "tools_sha256": "f" * 64},
                "transport": {"ping_median_s": 0.001, "samples": 20}}


@pytest.fixture
def results(tmp_path, monkeypatch):
    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "served": Served})
    (tmp_path / "docs").mkdir()
    make_pdf(tmp_path / "docs" / "a.pdf", ["alpha"])
    q = tmp_path / "q.toml"
    q.write_text('[set]\nname = "t"\n'
                 '[[query]]\nid = "ok"\nclass = "needle"\ntext = "alpha"\njudgments = [{ doc = "a.pdf", page = 1, gain '
                 '= 3 }]\n'
                 '[[query]]\nid = "bad"\nclass = "needle"\ntext = "fail"\njudgments = [{ doc = "a.pdf", page = 1, gain '
                 '= 3 }]\n')
    with PageStore(tmp_path / "cache.sqlite") as store:  # pages counted: every answer is checked against them
        c = store.ingest(corpora.from_dir(tmp_path / "docs"), progress=False).corpus
        return Results.load(runner.run(c, store, qrels.load(q), ["served"], tmp_path / "res", progress=False))


def test_errors_lists_each_failed_query_with_its_message(results):
    e = report_servers.errors(results)
    assert e.to_dict("records") == [{"arm": "served", "query": "bad", "class": "needle",
                                     "error": "timeout: no answer within 1 s"}]
    assert results.table().loc["served", "errors"] == 1


def test_servers_reports_version_digests_and_transport_share(results):
    s = report_servers.servers(results).loc["served"]
    assert s["server"] == "srv 1.2" and s["tool schema sha256"] == "f" * 12 and s["restarts"] == 1
    assert s["warm-up s"] == 2.5
    median = results.per_query["latency_s"].median()
    assert math.isclose(s["transport share"], 0.001 / median)


def test_servers_on_an_executor_name_every_workers_server_and_add_up(results, tmp_path):
    """A run on an executor records each worker's instance: a worker on another server version shows, its
    restarts and warm-ups count, and the ping is the median over workers."""
    path = shutil.copytree(results.path, tmp_path / "copy")
    manifest = json.loads((path / "manifest.json").read_text())
    one = manifest["arms"][0]["describe"]
    other = {**one, "restarts": 0, "warmup_seconds": [1.0], "server": {**one["server"], "version": "1.3"},
             "transport": {"ping_median_s": 0.003, "samples": 20}}
    manifest["arms"][0]["describe"] = {"workers": {"tcp://10.0.0.1:4001": one, "tcp://10.0.0.2:4001": other}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    s = report_servers.servers(Results.load(path)).loc["served"]
    assert s["server"] == "srv 1.2 / srv 1.3" and s["tool schema sha256"] == "f" * 12
    assert s["restarts"] == 1 and s["warm-up s"] == 3.5 and s["ping s (median)"] == pytest.approx(0.002)

import json

import pytest

from evalkit import arms, resultsdir
from evalkit.cli import main
from evalkit.records import Result

from .test_cli import one_line_error, tiny  # noqa: F401 - the fixture


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
    name = "broken"

    def search(self, query, k) -> Result:
        raise RuntimeError("the arm fell over")


def test_a_failed_run_is_marked_failed(tiny, capsys, monkeypatch):
    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "broken": Broken})
    home, argv = tiny
    argv[argv.index("keyword")] = "keyword,broken"
    assert main(argv) == 1
    one_line_error(capsys, "RuntimeError: the arm fell over", "--debug")
    m = json.loads((home / "res" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["error"] == "RuntimeError: the arm fell over"
    assert not resultsdir.held(home / "res")

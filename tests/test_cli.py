import json
import shlex
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalkit import comparison, corpora, qrels
from evalkit.cli import main, parser
from evalkit.runner import run

from .conftest import SMALL_QUERIES, TINY_QUERIES, make_pdf, one_line_error

ROOT = Path(__file__).resolve().parent.parent
GATE = str(ROOT / "evalkit" / "data" / "gate.toml")


def test_stats_on_any_folder_reports_errors(isolated, capsys):
    d = isolated / "pdfs"
    d.mkdir()
    make_pdf(d / "a.pdf", ["hello", ""])
    (d / "bad.pdf").write_bytes(b"junk")
    assert main(["corpus", "stats", "--docs", str(d)]) == 0
    out, err = capsys.readouterr()
    assert "documents   1" in out and "pages       2" in out and "empty pages 1" in out and "errors      1" in out
    assert "skipped bad.pdf" in err


def test_lock_then_verify_exit_codes(isolated, capsys):
    d = isolated / "pdfs"
    d.mkdir()
    make_pdf(d / "a.pdf", ["hello"])
    assert main(["corpus", "lock", "mine", str(d)]) == 0
    assert capsys.readouterr().out == f"locked mine in {isolated / 'corpora.lock'}: 1 documents, 1 pages\n"
    assert main(["corpus", "verify", "mine", "--root", str(d)]) == 0
    make_pdf(d / "a.pdf", ["changed"])
    assert main(["corpus", "verify", "mine", "--root", str(d)]) == 1
    assert "changed: a.pdf" in capsys.readouterr().out
    assert main(["corpus", "verify", "unknown"]) == 2


# A cloned repository's lock (issue 35, case 1): it may not choose where a fetch writes, nor read files that
# are not beside it. Each row: the entry's root, its document's name and source, and the field refused.
OUTSIDE = [
    ("{home}/.ssh", "authorized_keys", "file:payload.txt", "root"),  # overwrote ~/.ssh/authorized_keys
    ("../../../X", "a.pdf", "file:payload.txt", "root"),  # created folders outside the clone
    ("{home}/.ssh", "a.pdf", "file:payload.txt", "root"),
    (None, "authorized_keys", "file:payload.txt", "document #1 name"),  # a corpus is a folder of PDFs
    (None, "a.pdf", "file:../../../home/outside.pdf", "document #1 source"),
    (None, "a.pdf", "file:{home}/outside.pdf", "document #1 source"),
    (None, "a.pdf", "file:link.pdf", "document #1 source"),  # a link in the clone to a file outside it
]


@pytest.mark.parametrize("root, doc, source, field", OUTSIDE)
def test_a_cloned_lock_writes_nothing_and_reads_nothing_outside_its_folder_and_the_data_folder(
        isolated, monkeypatch, capsys, root, doc, source, field):
    import tomli_w

    home = isolated / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 mine\n")
    make_pdf(home / "outside.pdf", ["a private page"])
    clone = isolated / "src" / "clones" / "clone"
    clone.mkdir(parents=True)
    (clone / "payload.txt").write_text("ssh-ed25519 someone else\n")
    (clone / "link.pdf").symlink_to(home / "outside.pdf")
    pinned = home / "outside.pdf" if source.endswith(".pdf") else clone / "payload.txt"
    entry = {"document": [{"name": doc, "sha256": corpora.sha256_file(pinned), "pages": 1,
                           "source": source.format(home=home)}]}
    if root:
        entry["root"] = root.format(home=home)
    lock = clone / "corpora.lock"
    lock.write_text(tomli_w.dumps({"corpus": {"theirs": entry}}))
    monkeypatch.setenv("EVALKIT_LOCK", str(lock))
    before = {p: p.read_bytes() if p.is_file() else None for p in isolated.rglob("*")}
    assert main(["corpus", "fetch", "theirs"]) == 2
    one_line_error(capsys, f"evalkit: {lock}: corpus 'theirs': {field} ")
    assert {p: p.read_bytes() if p.is_file() else None for p in isolated.rglob("*")} == before
    assert main(["corpus", "verify", "theirs"]) == 2  # refused wherever the lock is read


def test_a_folder_the_user_names_is_theirs_whatever_the_lock_says(isolated, monkeypatch, capsys):
    """--dest names where a fetch writes; a folder pinned with `corpus add` outside the lock's folder is
    read from there by that lock (recorded in the data folder), and by no other lock."""
    import tomli_w

    papers = isolated / "papers"
    papers.mkdir()
    make_pdf(papers / "a.pdf", ["walrus"])
    project = isolated / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("EVALKIT_LOCK", str(project / "corpora.lock"))
    assert main(["corpus", "add", "mine", "../papers"]) == 0
    assert corpora.read_lock(project / "corpora.lock")["mine"]["root"] == "../papers"
    assert main(["corpus", "verify", "mine"]) == 0
    assert main(["corpus", "fetch", "mine", "--dest", str(isolated / "elsewhere")]) == 0
    assert (isolated / "elsewhere" / "a.pdf").read_bytes() == (papers / "a.pdf").read_bytes()
    clone = isolated / "clone"
    clone.mkdir()
    mine = corpora.read_lock(project / "corpora.lock")["mine"]
    (clone / "corpora.lock").write_text(tomli_w.dumps({"corpus": {"mine": mine}}))
    monkeypatch.setenv("EVALKIT_LOCK", str(clone / "corpora.lock"))
    capsys.readouterr()
    assert main(["corpus", "verify", "mine"]) == 2
    one_line_error(capsys, f"{clone / 'corpora.lock'}: corpus 'mine': root '../papers' leads outside")


def test_lock_names_identical_copies_as_copies_and_locks_nothing(isolated, capsys):
    d = isolated / "pdfs"
    d.mkdir()
    shutil.copy(make_pdf(d / "manual.pdf", ["hello", "world"]), d / "manual_copy.pdf")
    make_pdf(d / "other.pdf", ["another"])
    assert main(["corpus", "lock", "mine", str(d)]) == 2
    err = capsys.readouterr().err
    assert "not locked manual_copy.pdf: an identical copy of manual.pdf (the same bytes)" in err
    assert "cannot be read" not in err and "Traceback" not in err
    assert err.endswith(f"evalkit: nothing locked from {d}: manual_copy.pdf and manual.pdf are identical copies "
                        "(a lock pins each document once): remove one of the two and lock again\n")
    assert not (isolated / "corpora.lock").exists()
    (d / "junk.pdf").write_bytes(b"junk")
    shutil.copy(d / "other.pdf", d / "other2.pdf")
    assert main(["corpus", "lock", "mine", str(d)]) == 2
    err = capsys.readouterr().err
    assert "not locked junk.pdf: " in err and "not locked other2.pdf: an identical copy of other.pdf" in err
    assert err.endswith("1 file(s) cannot be read; 2 files are identical copies of others (a lock pins each document "
                        "once): remove the unreadable files and the copies and lock again\n")
    for name in ("manual_copy.pdf", "junk.pdf", "other2.pdf"):
        (d / name).unlink()
    assert main(["corpus", "lock", "mine", str(d)]) == 0
    assert main(["corpus", "verify", "mine", "--root", str(d)]) == 0


def test_arms_lists_every_arm_with_its_parameters(capsys):
    assert main(["arms"]) == 0
    out = capsys.readouterr().out
    for name in ("keyword", "global-index", "score-merge", "semantic", "hybrid"):
        assert f"\n{name} " in "\n" + out
    assert "idf_scope='doc'" in out and "built-in" in out


@pytest.mark.parametrize("hit, shown", [(("a.pdf", 2, float("nan")), "has score nan, not a finite number"),
                                        (("a.pdf", 7, 1.0), "page 7 of 'a.pdf' is outside 1..2"),
                                        (("z.pdf", 1, 1.0), "names document 'z.pdf', which is not in the corpus")])
def test_search_shows_an_invalid_answer_as_the_error_a_run_records(tiny, capsys, monkeypatch, hit, shown):
    from evalkit import arms
    from evalkit.records import Answer, Hit

    class Odd(arms.Arm):
        """Answers every query with one given hit."""
        name = "odd"

        def search(self, query, k):
            return Answer((Hit(*hit),))

    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "odd": Odd})
    home, _ = tiny
    assert main(["search", "walrus", "--docs", str(home / "docs"), "--arm", "odd"]) == 1
    header, error = capsys.readouterr().out.splitlines()  # no ranked line, no "no hits"
    assert header == "odd on docs: 'walrus'" and error.startswith("error: invalid answer: hit 1") and shown in error


# ---- compare and gate ------------------------------------------------------------------------------------

@pytest.fixture
def results(small_results, tmp_path):
    """A private copy of the small real run (the gate writes gate.json into the candidate's directory)."""
    return shutil.copytree(small_results, tmp_path / "results")


@pytest.fixture
def other_queries(small, tmp_path):
    """A real run of keyword over another query set: the first three queries of the small set only."""
    c, store = small
    path = tmp_path / "fewer.toml"
    path.write_text(SMALL_QUERIES.split('[[query]]\nid = "q4"')[0])
    return run(c, store, qrels.load(path), ["keyword"], tmp_path / "fewer", progress=False)


def test_compare_prints_every_measure_and_class_with_the_family(results, capsys):
    assert main(["compare", f"{results}:keyword", f"{results}:global-index"]) == 0
    out = capsys.readouterr().out
    for m in ("nDCG@10 ", "nDCG@10(doc)", "GoldDoc@3", "RR"):
        assert m in out
    assert "needle" in out and "described" in out and "W/T/L" in out and "MDD" in out
    assert "p(Holm): Holm over the 4 rows of each measure" in out  # all + needle, spread, described


def test_compare_every_arm_against_a_baseline(results, capsys):
    assert main(["compare", str(results), "--baseline-arm", "keyword", "--measures", "nDCG@10"]) == 0
    out = capsys.readouterr().out
    assert f"candidate {results}:global-index" in out and f"candidate {results}:score-merge" in out
    assert "Holm over the 8 rows of each measure (2 candidate(s) x slices)" in out


@pytest.mark.parametrize("argv, message", [
    (["{r}:keyword", "{r}:nope"], "has no arm 'nope'; it has keyword, global-index, score-merge"),
    (["{r}", "{r}:keyword"], "holds 3 arms"),
    (["{r}:keyword"], "give BASE and CAND"),
    (["{r}", "{r}", "--baseline", "keyword"], "with --baseline-arm ARM give one results directory"),
])


def test_compare_bad_sides_exit_2(results, capsys, argv, message):
    assert main(["compare", *(a.format(r=results) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_compare_refuses_another_query_set_unless_allowed(results, other_queries, capsys):
    assert main(["compare", f"{results}:keyword", str(other_queries)]) == 2
    assert "different query sets" in capsys.readouterr().err
    assert main(["compare", f"{results}:keyword", str(other_queries), "--allow-different-queries"]) == 0
    captured = capsys.readouterr()
    assert "1 query(ies) not in both left out: q4" in captured.err


def test_gate_exit_0_writes_every_output(results, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    argv = ["gate", "--baseline", f"{results}:keyword", "--candidate", f"{results}:keyword", "--rules", GATE,
            "--json", str(out / "v.json"), "--junit", str(out / "v.xml"), "--markdown", str(out / "v.md")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "evalkit gate: PASS (exit 0)" in text
    verdict = json.loads((out / "v.json").read_text())
    assert verdict["exit_code"] == 0 and verdict["rules_file"] == GATE
    assert json.loads((results / "gate.json").read_text()) == verdict  # for the report
    cases = ET.parse(out / "v.xml").getroot().iter("testcase")
    assert len(list(cases)) == len(verdict["outcomes"]) == 6
    assert (out / "v.md").read_text().startswith("### evalkit gate: PASS")


def test_gate_exit_1_when_a_rule_fails(results, tmp_path, capsys):
    rules = tmp_path / "floor.toml"
    rules.write_text("[[rule]]\ntype = 'floor'\nmeasure = 'GoldDoc@3'\nmin = 1.0\nname = 'every gold doc'\n")
    assert main(["gate", "--baseline", f"{results}:keyword", "--candidate", f"{results}:score-merge",
                 "--rules", str(rules)]) == 1
    assert "Failed: every gold doc" in capsys.readouterr().out


@pytest.mark.parametrize("case, message", [
    ("malformed", "not valid TOML"),
    ("unknown type", "rule 1 (speed): unknown type 'speed'"),
    ("missing field", "rule 1 (floor): missing field 'min'"),
    ("missing rules", "rules file"),
    ("missing arm", "has no arm 'hybrid'"),
    ("missing results", "no such results directory"),
    ("different queries", "different query sets"),
    ("no robustness report", "robustness.json not found: run `evalkit robustness"),
    ("unwritable output", "cannot write"),
])


def test_gate_exit_2_names_what_could_not_be_evaluated(results, other_queries, tmp_path, capsys, case, message):
    bad = tmp_path / "bad.toml"
    bad.write_text({"malformed": "[[rule]\ntype = 'latency'", "unknown type": "[[rule]]\ntype = 'speed'",
                    "missing field": "[[rule]]\ntype = 'floor'",
                    "no robustness report": "[[rule]]\ntype = 'robustness'\nmax_shift = 0.01"}.get(case, ""))
    rules = str(bad) if bad.read_text() else GATE
    base, cand = f"{results}:keyword", f"{results}:global-index"
    extra = []
    if case == "missing rules":
        rules = str(tmp_path / "absent.toml")
    elif case == "missing arm":
        cand = f"{results}:hybrid"
    elif case == "missing results":
        cand = f"{tmp_path / 'nowhere'}:keyword"
    elif case == "different queries":
        cand = str(other_queries)
    elif case == "unwritable output":
        extra = ["--junit", str(tmp_path / "no" / "such" / "dir" / "j.xml")]
    assert main(["gate", "--baseline", base, "--candidate", cand, "--rules", rules, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("evalkit: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("a bug")])
def test_gate_exit_2_on_any_failure_that_is_not_a_verdict(results, monkeypatch, capsys, error):
    """Exit 1 is a verdict (FAIL): out of memory or a bug while evaluating is not one."""
    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(comparison, "table", failing)
    assert main(["gate", "--baseline", f"{results}:keyword", "--candidate", f"{results}:global-index",
                 "--rules", GATE]) == 2
    one_line_error(capsys, f"unexpected {type(error).__name__}")


@pytest.mark.slow
def test_gate_on_latex_fails_score_merge_against_keyword_and_passes_keyword_against_itself(latex_results, capsys):
    r = latex_results
    assert main(["gate", "--baseline", f"{r}:keyword", "--candidate", f"{r}:score-merge", "--rules", GATE]) == 1
    out = capsys.readouterr().out
    headline = out.strip().splitlines()[-1]
    assert headline.startswith("evalkit gate: FAIL (exit 1)")
    assert "non-inferiority nDCG@10(doc)" in headline and "class-drop nDCG@10(doc) per class >= -0.05 [" in headline
    assert "trap" in headline.split("class-drop")[1]  # the class that failed is named
    assert main(["gate", "--baseline", f"{r}:keyword", "--candidate", f"{r}:keyword", "--rules", GATE]) == 0
    assert "evalkit gate: PASS (exit 0)" in capsys.readouterr().out


def test_the_example_workflow_runs_real_evalkit_commands():
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load((ROOT / "examples" / "github-actions.yml").read_text())["jobs"]["gate"]
    env = {**job["env"], "GITHUB_STEP_SUMMARY": "summary.md"}
    commands = [line.strip().rstrip("\\") for step in job["steps"] if "run" in step
                for line in step["run"].replace("\\\n", " ").splitlines()
                if line.strip().startswith(".venv/bin/evalkit")]
    assert [c.split()[1] for c in commands] == ["corpus", "corpus", "qrels", "run", "gate"]
    for c in commands:
        args = parser().parse_args([_expand(a, env) for a in shlex.split(c)[1:]])  # every option exists
    assert args.func.__name__ == "cmd_gate" and args.rules == Path("evalkit/data/gate.toml")
    assert (ROOT / args.rules).exists()
    assert args.candidate == "results/pr:keyword" and args.markdown == Path("summary.md")


def _expand(arg: str, env: dict) -> str:
    for k, v in env.items():
        arg = arg.replace(f"${k}", v)
    return arg


@pytest.mark.parametrize("toml, needle", [
    ('[set]\ngains = { high = "x" }\n' + TINY_QUERIES.replace("[set]\n", ""), "[set.gains] wants integer keys"),
    ('query = "x"\n', "'query' must be [[query]] tables"),
    ('query = ["x"]\n', "query #1 is not a table"),
    (TINY_QUERIES.replace('judgments = [', 'judgments = "no"\nx = ['), "'judgments' is not a list"),
])


def test_malformed_query_files_name_the_file_and_field(tiny, capsys, toml, needle):
    home, argv = tiny
    (home / "tiny.toml").write_text(toml)
    assert main(argv) == 2
    one_line_error(capsys, str(home / "tiny.toml"), needle)


@pytest.mark.parametrize("change, needle", [
    (lambda a: a + ["-k", "0"], "argument -k: must be at least 1, not 0"),
    (lambda a: a + ["-k", "-3"], "argument -k: must be at least 1, not -3"),
])


def test_k_below_one_is_refused(tiny, capsys, change, needle):
    with pytest.raises(SystemExit) as e:
        main(change(tiny[1]))
    assert e.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("arms, needle", [
    ("keyword,keyword(tiebreak=doc)", "names one arm twice ('keyword' and 'keyword(tiebreak=doc)')"),
    (" , ", "no arm or an empty one"),
    ("keyword(rrf_k=-1)", "parameter 'rrf_k' must be at least 0, not -1"),
    ("hybrid(depth=0)", "parameter 'depth' must be at least 1, not 0"),
])


def test_arms_are_validated_before_anything_is_written(tiny, capsys, arms, needle):
    home, argv = tiny
    argv[argv.index("keyword")] = arms
    assert main(argv) == 2
    one_line_error(capsys, needle)
    assert not (home / "res").exists()


def test_qrels_that_is_a_folder(tiny, capsys):
    home, argv = tiny
    argv[argv.index(str(home / "tiny.toml"))] = str(home)
    assert main(argv) == 2
    one_line_error(capsys, str(home), "Is a directory")


def test_damaged_results_files_are_named(tiny, capsys):
    home, argv = tiny
    assert main(argv) == 0
    res = home / "res"
    (res / "per_query.parquet").write_bytes(b"PAR1 not really")
    capsys.readouterr()
    assert main(["summary", str(res)]) == 2
    one_line_error(capsys, str(res / "per_query.parquet"), "--resume")
    (res / "manifest.json").write_text('{"status": "compl')
    assert main(["summary", str(res)]) == 2
    one_line_error(capsys, str(res / "manifest.json"), "damaged")
    assert main(argv + ["--resume"]) == 2
    one_line_error(capsys, str(res / "manifest.json"))


def test_a_damaged_cache_is_named_with_the_command_that_rebuilds_it(tiny, capsys):
    home, argv = tiny
    assert main(argv) == 0
    db = home / "cache" / "evalkit.sqlite"
    with sqlite3.connect(db) as c:  # move every page out of the WAL, so wrecking the file wrecks data
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    assert len(data) // 4096 > 2
    for page in range(1, len(data) // 4096):  # wreck every page's b-tree header but the first's (the schema)
        data[page * 4096: page * 4096 + 12] = b"\xff" * 12
    db.write_bytes(bytes(data))
    for f in ("evalkit.sqlite-wal", "evalkit.sqlite-shm"):
        (home / "cache" / f).unlink(missing_ok=True)
    capsys.readouterr()
    assert main(argv[:-2] + ["--out", str(home / "res2")]) == 2
    one_line_error(capsys, f"the cache {db} is damaged", f"rm '{db}'")
    db.write_bytes(b"this is not a database at all" * 100)
    assert main(["corpus", "stats", "--docs", str(home / "docs")]) == 2
    one_line_error(capsys, f"the cache {db} is damaged")


def test_debug_shows_the_traceback(tiny):
    home, argv = tiny
    (home / "tiny.toml").write_text('query = "x"\n')
    with pytest.raises(Exception, match="must be"):
        main(["--debug", *argv])


# ---- trust boundaries: what data can and cannot do to a command ------------------------------------------

def test_terminal_escapes_in_file_names_and_queries_reach_the_terminal_inert(isolated, capsys):
    d = isolated / "docs"
    d.mkdir()
    make_pdf(d / "walrus\x1b[2J\x1b]0;owned\x07\u202e.pdf", ["walrus migration routes"])
    assert main(["search", "walrus\x1b[31m", "--docs", str(d)]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\u202e" not in out + err and "\x07" not in out + err
    assert "walrus\\x1b[2J\\x1b]0;owned\\x07\\u202e.pdf#1" in out


def test_symlinks_in_docs_are_read_only_with_the_flag(isolated, capsys):
    elsewhere, d = isolated / "elsewhere", isolated / "docs"
    elsewhere.mkdir()
    d.mkdir()
    make_pdf(elsewhere / "secret.pdf", ["private walrus notes"])
    make_pdf(d / "a.pdf", ["penguins"])
    (d / "link.pdf").symlink_to(elsewhere / "secret.pdf")
    assert main(["corpus", "stats", "--docs", str(d)]) == 0
    out, err = capsys.readouterr()
    assert "documents   1" in out and "skipped link.pdf: a symbolic link (pass --follow-symlinks" in err
    assert main(["corpus", "stats", "--docs", str(d), "--follow-symlinks"]) == 0
    assert "documents   2" in capsys.readouterr().out


def test_a_refused_out_gets_no_lock_file(tiny, capsys):
    home, argv = tiny
    (home / "res").mkdir()
    (home / "res" / "notes.txt").write_text("mine")
    assert main(argv) == 2
    one_line_error(capsys, "not an evalkit results directory")
    assert sorted(p.name for p in (home / "res").iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("command", ["summary", "compare", "gate", "report"])
@pytest.mark.parametrize("field, value, says", [("qrels", {"name": "x"}, "field 'qrels.digest' is missing"),
                                                ("arms", [{"label": 3, "spec": "k"}],
                                                 "field 'arms[0].label' is not a string"),
                                                ("corpus", "latex", "field 'corpus' is not a table")])


def test_bad_manifest_fields_are_bad_input_naming_the_field(tiny, capsys, command, field, value, says):
    home, argv = tiny
    assert main(argv) == 0
    manifest = home / "res" / "manifest.json"
    data = json.loads(manifest.read_text())
    data[field] = value
    manifest.write_text(json.dumps(data))
    capsys.readouterr()
    argv = {"summary": ["summary", str(home / "res")], "report": ["report", str(home / "res")],
            "compare": ["compare", str(home / "res"), str(home / "res")],
            "gate": ["gate", "--baseline", str(home / "res"), "--candidate", str(home / "res"), "--rules",
                     GATE]}[command]
    assert main(argv) == 2
    one_line_error(capsys, str(manifest), says)


def test_a_failed_resume_cannot_pass_a_gate_on_the_old_measures(tiny, capsys):
    """A --resume on a changed query set that fails leaves the new digest in the manifest and the old measures
    in per_query.parquet: the gate and compare refuse the run (exit 2) instead of passing it."""
    home, argv = tiny
    assert main(argv) == 0
    q = home / "tiny.toml"
    q.write_text(TINY_QUERIES.replace("page = 2, gain = 3", "page = 1, gain = 3"))
    failing = argv[:argv.index("--arms") + 1] + ["keyword,semantic(model=no/such-model)", "--out", str(home / "res")]
    assert main(failing + ["--resume"]) != 0
    assert json.loads((home / "res" / "manifest.json").read_text())["status"] == "failed"
    capsys.readouterr()
    assert main(["gate", "--baseline", str(home / "res"), "--candidate", str(home / "res"), "--rules", GATE]) == 2
    one_line_error(capsys, str(home / "res"), "the run is failed, not complete", "'status'")
    assert main(["compare", str(home / "res"), str(home / "res")]) == 2
    one_line_error(capsys, "not complete")


@pytest.mark.slow
def test_a_failed_resume_leaves_no_old_figures_in_summary_best_or_report(tiny, capsys):
    """After a --resume on a changed query set fails, the old set's measures are not shown as the new set's:
    summary, best and report refuse in one line naming the set whose run did not finish (exit 2)."""
    home, argv = tiny
    assert main(argv) == 0
    (home / "tiny.toml").write_text(TINY_QUERIES.replace("page = 2, gain = 3", "page = 1, gain = 3"))
    failing = argv[:argv.index("--arms") + 1] + ["keyword,semantic(model=no/such-model)", "--out", str(home / "res")]
    assert main(failing + ["--resume"]) != 0
    for command in (["summary"], ["best"], ["report"]):
        capsys.readouterr()
        assert main([*command, str(home / "res")]) == 2, command
        one_line_error(capsys, str(home / "res"), "did not finish for query set", "another qrels", "--resume")
    assert main(argv + ["--resume"]) == 0  # finished: its own measures again
    capsys.readouterr()
    assert main(["summary", str(home / "res")]) == 0


def test_measures_from_another_query_set_cannot_be_compared(tiny, capsys):
    home, argv = tiny
    assert main(argv) == 0
    saved = (home / "res" / "per_query.parquet").read_bytes()
    q = home / "tiny.toml"
    q.write_text(TINY_QUERIES.replace("page = 2, gain = 3", "page = 1, gain = 3"))
    assert main(argv + ["--resume"]) == 0
    (home / "res" / "per_query.parquet").write_bytes(saved)  # the old measures under the new manifest
    capsys.readouterr()
    assert main(["compare", str(home / "res"), str(home / "res")]) == 2
    one_line_error(capsys, "per_query.parquet was computed on another qrels than manifest.json names")


@pytest.mark.slow
def test_a_missing_distributed_extra_is_named(tiny):
    import subprocess
    import sys

    home, argv = tiny
    code = ("import sys; sys.modules['distributed'] = None; from evalkit.cli import main; "
            f"sys.exit(main({argv + ['--executor', 'dask://127.0.0.1:1']!r}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "needs the distributed package" in p.stderr and "pip install 'evalkit[distributed]'" in p.stderr


@pytest.mark.slow
def test_ctrl_c_during_the_imports_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C while the command's modules are still importing: a module on the path that is interrupted
    while it loads stands for the key pressed at that moment (a timer could not pick the moment)."""
    import os
    import subprocess
    import sys

    (tmp_path / "tqdm.py").write_text("raise KeyboardInterrupt\n")  # the CLI imports tqdm with the runner
    p = subprocess.run([sys.executable, "-m", "evalkit", "arms"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert p.returncode == 130 and p.stderr == "evalkit: interrupted\n", p.stderr


@pytest.mark.slow
@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path, debug):
    """`evalkit summary | head`: the output's pipe has no reader (closed before the command writes, so the
    moment does not depend on timing); the command stops without 'Broken pipe', as Unix tools do."""
    import os
    import subprocess
    import sys

    from .conftest import write_results

    res = write_results(tmp_path / "r", {"base": {"nDCG@10": [0.2, 0.5]}}, ["needle", "needle"])
    read, write = os.pipe()
    os.close(read)
    try:
        p = subprocess.run([sys.executable, "-m", "evalkit", *debug, "summary", str(res)], stdout=write,
                           stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert p.returncode == 141 and p.stderr == "", p.stderr


def test_the_command_loads_nothing_before_its_ctrl_c_guard():
    """Ctrl-C between Python's start and the guard in evalkit.__main__.main is a traceback of whatever module
    was loading (typing, for evalkit/__init__.py, took tens of ms): on the way to the guard the command loads
    its own two small files and nothing else, so that moment is too short to hit."""
    import subprocess
    import sys

    def loaded(code: str) -> set[str]:
        p = subprocess.run([sys.executable, "-c", f"{code}; import sys; print(*sys.modules)"], capture_output=True,
                           text=True, check=True)
        return set(p.stdout.split())

    assert loaded("import evalkit.__main__") - loaded("pass") == {"evalkit", "evalkit.__main__"}


@pytest.mark.slow
def test_the_command_skips_the_iri_grammars_and_the_library_leaves_them_alone():
    """``evalkit report`` imports nbformat and the mcp arm the MCP SDK, both through jsonschema, which loads
    rfc3987-syntax's 38 grammars (3 CPU-s) for a string format evalkit never checks: the command's process
    does without them; a user's process that imports evalkit still has them."""
    import subprocess
    import sys

    def after(code: str) -> list[str]:
        p = subprocess.run([sys.executable, "-c", f"{code}; import jsonschema, sys; print(sys.modules.get("
                            "'rfc3987_syntax', 'absent') is None, 'iri' in jsonschema.FormatChecker().checkers)"],
                           capture_output=True, text=True, check=True)
        return p.stdout.split()

    assert after("import evalkit.__main__ as m, sys; sys.argv[1:] = ['arms']; m.main()")[-2:] == ["True", "False"]
    assert after("import evalkit") == ["False", "True"]


def test_qrels_regrade_writes_a_blind_sample_and_refuses_one_line(tiny, capsys):
    home, argv = tiny
    docs, q, out = home / "docs", home / "tiny.toml", home / "second.toml"
    before = q.read_bytes()
    assert main(["qrels", "regrade", str(q), "--out", str(out), "--docs", str(docs), "-n", "5"]) == 0
    assert f"qrels agree {q} {out}" in capsys.readouterr().out
    second = qrels.load(out)
    assert second.pooled == {"q1": (("a.pdf", 2),)} and not second["q1"].judgments  # grades blank: blind
    assert q.read_bytes() == before and not (home / "tiny.toml.lock").exists()  # untouched, unlocked
    assert main(["qrels", "regrade", str(q), "--out", str(out), "--docs", str(docs)]) == 2
    one_line_error(capsys, str(out), "exists")
    assert main(["qrels", "regrade", str(home / "none.toml"), "--out", str(home / "x.toml"), "--docs", str(docs)]) == 2
    one_line_error(capsys, "none.toml")
    unjudged = home / "unjudged.toml"
    unjudged.write_text(TINY_QUERIES.replace('[{ doc = "a.pdf", page = 2, gain = 3 }]', "[]"))
    assert main(["qrels", "regrade", str(unjudged), "--out", str(home / "y.toml"), "--docs", str(docs)]) == 2
    one_line_error(capsys, "unjudged.toml", "no judged page")
    assert not (home / "x.toml").exists() and not (home / "y.toml").exists()
    with pytest.raises(SystemExit) as e:
        main(["qrels", "regrade", str(q), "--out", str(home / "z.toml"), "--docs", str(docs), "-n", "0"])
    assert e.value.code == 2


def _kernels_of(pid: int) -> list[int]:
    """The notebook kernels that process ``pid`` started (ipykernel marks them with its parent's pid)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd, env = (proc / "cmdline").read_bytes(), (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in cmd and f"\0JPY_PARENT_PID={pid}\0".encode() in b"\0" + env:
            found.append(int(proc.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["before the kernel", "while the kernel starts", "while a cell runs"])
def test_ctrl_c_during_report_is_one_line_exit_130_and_leaves_no_kernel(tiny, tmp_path, moment):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) at moments the test sees happen rather
    than after a delay: a module interrupted while it loads right before the kernel starts; the kernel's
    process appearing; the first figure written by a cell (later cells still to run)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    home, argv = tiny
    assert main(argv) == 0
    env = dict(os.environ)
    if moment == "before the kernel":  # the report imports nbclient just before it starts the kernel
        (tmp_path / "shadow" / "nbclient").mkdir(parents=True)
        (tmp_path / "shadow" / "nbclient" / "__init__.py").write_text("raise KeyboardInterrupt\n")
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "shadow"), env.get("PYTHONPATH", "")])
    # SIGINT as a terminal's process has it: a suite started in the background (`cmd &`) ignores it, and a
    # child inherits that
    p = subprocess.Popen([sys.executable, "-m", "evalkit", "report", str(home / "res")], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    reached = {"before the kernel": lambda: False, "while the kernel starts": lambda: _kernels_of(p.pid),
               "while a cell runs": lambda: any((home / "res" / "figures").glob("*.png"))}[moment]
    deadline = time.monotonic() + 300  # a loaded machine is slow to get there, never early
    while p.poll() is None and not reached() and time.monotonic() < deadline:
        time.sleep(0.02)
    if moment != "before the kernel":
        assert p.poll() is None and reached(), "the report ended before the moment"
        os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 130 and err.strip().splitlines() == ["evalkit: interrupted"], (p.returncode, err)
    deadline = time.monotonic() + 600  # a bound on the wait, reached only if a kernel is left: the load decides nothing
    while _kernels_of(p.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _kernels_of(p.pid), "a kernel was left running"
    assert not (home / "res" / "report.html").exists()


def test_corpus_add_then_run_by_name_says_which_cache_it_used_and_what_it_reused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EVALKIT_LOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pdfs").mkdir()
    make_pdf(tmp_path / "pdfs" / "a.pdf", ["seals", "walrus migration routes"])
    make_pdf(tmp_path / "pdfs" / "b.pdf", ["penguins and a walrus"])
    (tmp_path / "tiny.toml").write_text(TINY_QUERIES)
    assert main(["corpus", "add", "mine", "pdfs"]) == 0
    out, err = capsys.readouterr()
    assert out == "mine: 2 documents, 3 pages, ready as --corpus mine\n"
    assert f"pinned mine in {tmp_path / 'corpora.lock'}: 2 documents, 3 pages in pdfs" in err
    cache = tmp_path / "cache" / "evalkit.sqlite"
    assert main(["run", "--corpus", "mine", "--qrels", "tiny.toml", "--arms", "keyword", "--out", "res"]) == 0
    err = capsys.readouterr().err
    assert f"corpus mine: PDFs in {tmp_path / 'pdfs'}; cache {cache}: 2 of 2 documents reused, 0 extracted" in err
    assert f"cache {cache}: corpus-wide index: 0 pages reused, 3 built" in err
    # keyword and global-index both read the one corpus-wide index: its 3 pages, counted once
    assert main(["run", "--corpus", "mine", "--qrels", "tiny.toml", "--arms", "keyword,global-index", "--out",
                 "res2"]) == 0
    assert f"cache {cache}: corpus-wide index: 3 pages reused, 0 built" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "corpora.lock", "pdfs", "res", "res2", "tiny.toml"]
    other = tmp_path / "elsewhere.lock"
    assert main(["corpus", "add", "again", "pdfs", "--lock", str(other)]) == 0
    assert f"other commands read it with EVALKIT_LOCK={other}" in capsys.readouterr().err


def test_the_own_pdfs_workflow_runs_real_evalkit_commands():
    """The CI example for a team's own PDFs: its setup commands (in the comments) and its steps parse as
    evalkit commands; it verifies the corpus by name from the committed lock, with no fetch."""
    yaml = pytest.importorskip("yaml")
    text = (ROOT / "examples" / "github-actions-own-pdfs.yml").read_text()
    job = yaml.safe_load(text)["jobs"]["gate"]
    env = {**job["env"], "GITHUB_STEP_SUMMARY": "summary.md"}
    setup = [line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#   evalkit ")]
    steps = [line.strip().rstrip("\\") for step in job["steps"] if "run" in step
             for line in step["run"].replace("\\\n", " ").splitlines() if line.strip().startswith(".venv/bin/evalkit")]
    assert [c.split()[1:3] for c in setup] == [["corpus", "add"], ["run", "--corpus"]]
    assert [c.split()[1] for c in steps] == ["corpus", "qrels", "run", "gate"]
    parsed = [parser().parse_args([_expand(a, env) for a in shlex.split(c.split("#")[0])[1:]]) for c in setup + steps]
    assert [a.func.__name__ for a in parsed] == ["cmd_corpus_add", "cmd_run", "cmd_corpus_verify", "cmd_qrels_check",
                                                 "cmd_run", "cmd_gate"]
    assert parsed[0].dir == Path("pdfs") and parsed[2].name == "mine"
    assert parsed[-1].baseline == "baselines/mine:keyword"
    assert "corpus fetch" not in text.replace("#", "")


# ---- a partially graded set, end to end --------------------------------------------------------------------

ANIMALS = ("walrus", "seal", "orca", "puffin", "otter", "narwhal", "beluga", "gannet", "tern", "eider", "skua", "krill")
PARTIAL_RULES = '[[rule]]\ntype = "non-inferiority"\nmeasure = "nDCG@10"\nmargin = 0.05\n'


@pytest.mark.slow
def test_a_set_graded_in_part_runs_and_gates_with_the_judge(isolated, capsys, monkeypatch):
    """Write twelve needles, pool them (`qrels pool`), grade six whole: `qrels check` warns of the six others,
    `evalkit run` answers all twelve and measures six (the manifest lists the rest), the plain gate says so,
    and `qrels judge` then `gate --judge` decide on all twelve (docs/deciding.md: exit 1, undecided)."""
    from evalkit import judged, qrels
    from evalkit.results import Results

    from .conftest import make_pdf, query, query_file

    monkeypatch.delenv("EVALKIT_LOCK", raising=False)  # `corpus add` pins the folder in ./corpora.lock
    monkeypatch.chdir(isolated)
    docs = isolated / "docs"
    docs.mkdir()
    for i in range(0, len(ANIMALS), 2):
        make_pdf(docs / f"{ANIMALS[i]}.pdf", [f"The {a} lives by the sea. " * 3 for a in ANIMALS[i:i + 2]])
    written = [query(f"q{i:02d}", "needle", f"where does the {a} live") for i, a in enumerate(ANIMALS)]
    assert main(["corpus", "add", "mine", "docs"]) == 0
    q = query_file(isolated / "mine.toml", *written, query("a1", "abstain", "price of a bicycle"), corpus="mine")
    assert main(["qrels", "pool", str(q), "--corpus", "mine", "--arms", "keyword,global-index", "--depth", "3"]) == 0
    pooled: dict[str, list[tuple[str, int]]] = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("q"):
            qid = line.split()[0]
        elif line.startswith("    ") and "#" in line:
            doc, page = line.split()[0].split("#")
            pooled.setdefault(qid, []).append((doc, int(page)))

    def grade(i: int, a: str) -> tuple:  # the person reads each pooled page: 3 where the animal is, else 0
        return tuple((d, p, 3 if (d, p) == (f"{ANIMALS[i - i % 2]}.pdf", 1 + i % 2) else 0)
                     for d, p in pooled[f"q{i:02d}"])
    graded = [query(f"q{i:02d}", "needle", f"where does the {a} live", *(grade(i, a) if i % 2 == 0 else ()),
                    pooled=[f"{d}#{p}" for d, p in pooled[f"q{i:02d}"]]) for i, a in enumerate(ANIMALS)]
    q = query_file(q, *graded, query("a1", "abstain", "price of a bicycle"), corpus="mine")
    capsys.readouterr()
    assert main(["qrels", "check", str(q), "--corpus", "mine"]) == 0
    out = capsys.readouterr().out
    # one line for the six ungraded queries, naming them
    assert "q01, q03, q05, q07, q09, q11 (6 queries): judgments: warning: not graded yet" in out
    assert out.count("not graded yet") == 1
    assert main(["qrels", "check", str(q), "--corpus", "mine", "--strict"]) == 1
    res = isolated / "res"
    assert main(["run", "--corpus", "mine", "--qrels", str(q), "--arms", "keyword,global-index", "--out",
                 str(res)]) == 0
    assert "6 of 13 queries are ungraded (no judgment yet: q01, q03" in capsys.readouterr().err
    r = Results.load(res)
    assert r.ungraded == ("q01", "q03", "q05", "q07", "q09", "q11")
    assert set(r.per_query["query"]) == {f"q{i:02d}" for i in range(0, 12, 2)} | {"a1"}
    assert all(len((res / "runs" / f"{a}.jsonl").read_text().splitlines()) == 13 for a in ("keyword", "global-index"))
    rules = isolated / "gate.toml"
    rules.write_text(PARTIAL_RULES)
    assert main(["gate", "--baseline", f"{res}:keyword", "--candidate", f"{res}:global-index", "--rules",
                 str(rules)]) in (0, 1)
    assert "note: 7 of 13 queries measured; 6 ungraded, left out" in capsys.readouterr().out
    assert main(["qrels", "judge", str(q), "--results", str(res), "--no-vectors", "--model", "logistic",
                 "--folds", "2"]) == 0
    preds = res / "judge" / "predictions.parquet"
    capsys.readouterr()
    code = main(["gate", "--baseline", f"{res}:keyword", "--candidate", f"{res}:global-index", "--rules",
                 str(rules), "--judge", str(preds)])
    out = capsys.readouterr().out
    assert "queries measured" not in out and "6 of 12 queries graded" in out, out
    assert code == 1 and "UNDECIDED (exit 1" in out
    decider = judged.Decider(res, "keyword", "global-index", preds, rules)  # the workbench's "can I decide yet?"
    [rule], _ = decider.outcomes(qrels.load(q))
    assert (rule.status, rule.numbers["graded"], rule.numbers["n"]) == ("undecided", 6, 12)


@pytest.mark.slow
def test_qrels_judge_on_a_run_of_a_folder_takes_the_folder_from_the_user(isolated, capsys, monkeypatch):
    """`evalkit run --docs DIR` pins nothing in a lock: `qrels judge` then asks for --docs DIR (never taking a
    folder from the run's manifest, which is data) and refuses a folder holding other documents."""
    from .conftest import make_pdf, query, query_file

    monkeypatch.chdir(isolated)
    docs, other = isolated / "docs", isolated / "other"
    for folder in (docs, other):
        folder.mkdir()
    for i in range(0, len(ANIMALS), 2):
        make_pdf(docs / f"{ANIMALS[i]}.pdf", [f"The {a} lives by the sea. " * 3 for a in ANIMALS[i:i + 2]])
    make_pdf(other / "walrus.pdf", ["The walrus lives by the sea."])
    q = query_file(isolated / "mine.toml", *(
        query(f"q{i:02d}", "needle", f"where does the {a} live", (f"{ANIMALS[i - i % 2]}.pdf", 1 + i % 2, 3),
              (f"{ANIMALS[i - i % 2]}.pdf", 2 - i % 2, 0)) for i, a in enumerate(ANIMALS)))
    res = isolated / "res"
    assert main(["run", "--docs", str(docs), "--qrels", str(q), "--arms", "keyword,global-index", "--out",
                 str(res)]) == 0
    judge = ["qrels", "judge", str(q), "--results", str(res), "--no-vectors", "--model", "logistic", "--folds", "2"]
    capsys.readouterr()
    assert main(judge) == 2
    one_line_error(capsys, "pass that folder, --docs DIR", str(docs))
    assert main([*judge, "--docs", str(other)]) == 2
    one_line_error(capsys, f"{other}: not the documents the run in {res} read")
    assert main([*judge, "--docs", str(docs)]) == 0
    assert (res / "judge" / "predictions.parquet").exists()

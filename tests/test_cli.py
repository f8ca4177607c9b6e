import pytest

from evalkit.cli import main

from .conftest import make_pdf


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
    assert main(["corpus", "verify", "mine", "--root", str(d)]) == 0
    make_pdf(d / "a.pdf", ["changed"])
    assert main(["corpus", "verify", "mine", "--root", str(d)]) == 1
    assert "changed: a.pdf" in capsys.readouterr().out
    assert main(["corpus", "verify", "unknown"]) == 2


def test_arms_lists_every_arm_with_its_parameters(capsys):
    assert main(["arms"]) == 0
    out = capsys.readouterr().out
    for name in ("keyword", "global-index", "score-merge", "semantic", "hybrid"):
        assert f"\n{name} " in "\n" + out
    assert "idf_scope='doc'" in out and "built-in" in out


TINY_QUERIES = '''
[set]
name = "tiny"
[[query]]
id = "q1"
class = "needle"
text = "walrus migration"
judgments = [{ doc = "a.pdf", page = 2, gain = 3 }]
'''


@pytest.fixture
def tiny(isolated):
    """A two-document folder, its query file and the argv of a keyword run into ``res``."""
    docs = isolated / "docs"
    docs.mkdir()
    make_pdf(docs / "a.pdf", ["seals", "walrus migration routes"])
    make_pdf(docs / "b.pdf", ["penguins and a walrus"])
    q = isolated / "tiny.toml"
    q.write_text(TINY_QUERIES)
    return isolated, ["run", "--docs", str(docs), "--qrels", str(q), "--arms", "keyword", "--out", str(isolated / "res")]


def one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert "evalkit: " in err and "Traceback" not in err, err
    err = err[err.index("evalkit: "):]  # after any progress bars
    assert err.count("\n") == 1, err
    for n in needles:
        assert n in err, err
    return err


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
    data = bytearray(db.read_bytes())
    for page in range(1, len(data) // 4096):  # wreck every page but the first (the schema)
        data[page * 4096 + 100: page * 4096 + 1100] = b"\xff" * 1000
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

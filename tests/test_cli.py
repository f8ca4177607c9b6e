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

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from evalkit import cache, corpora
from evalkit.arms.lexical import ensure_global_index
from evalkit.pages import PageStore

from .conftest import make_pdf, query, query_file

QUERIES = (
    query("parskip", "needle", "space between paragraphs instead of indentation", ("parskip.pdf", 1, 3)),
    query("cite", "needle", "sort and compress numeric citations", ("cite.pdf", 1, 3)),
    query("gantt", "abstain", "draw a gantt chart"),
)


def test_check_names_a_damaged_database(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with pytest.raises(cache.CacheError, match=f"the cache {path} is damaged .*rm '{path}'"):
        PageStore(path)


def test_two_folders_with_one_base_name_keep_an_index_each(isolated):
    for parent, word in (("a", "walrus"), ("b", "penguin")):
        (isolated / parent / "docs").mkdir(parents=True)
        make_pdf(isolated / parent / "docs" / "x.pdf", [f"{word} page"])
    with PageStore() as store:
        a, b = (store.ingest(corpora.from_dir(isolated / p / "docs"), progress=False).corpus for p in "ab")
        assert a.name == b.name == "docs"
        ta, tb = ensure_global_index(store, a), ensure_global_index(store, b)
        tables = {n for (n,) in store.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert ta != tb and {ta, tb} <= tables  # building b's index did not drop a's


@pytest.mark.slow
def test_two_runs_embed_into_one_cold_vector_cache_at_once(latex, tmp_path):
    """Two processes, one fresh cache, a folder holding two byte-identical PDFs, semantic and hybrid arms:
    once `UNIQUE constraint failed: vector_docs` and a run left marked running."""
    c, _ = latex
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("parskip.pdf", "cite.pdf", "chapterbib.pdf"):  # short ones: both processes embed all of them
        shutil.copy(c.path(name), docs / name)
    shutil.copy(c.path("parskip.pdf"), docs / "the copy.pdf")
    q = tmp_path / "three.toml"
    query_file(q, *QUERIES, name="three")
    env = {**os.environ, "EVALKIT_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-m", "evalkit", "run", "--docs", str(docs), "--qrels", str(q),
                               "--arms", "semantic,hybrid", "--out", str(tmp_path / f"res{i}")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (1, 2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and "Traceback" not in err, err[-3000:]
        assert "skipped the copy.pdf: byte-identical to parskip.pdf" in err
    trec = sorted(f.name for f in (tmp_path / "res1" / "runs").glob("*.trec"))
    assert len(trec) == 2
    for f in trec:
        assert (tmp_path / "res1" / "runs" / f).read_bytes() == (tmp_path / "res2" / "runs" / f).read_bytes()
    db = sqlite3.connect(tmp_path / "cache" / "evalkit.sqlite")
    assert db.execute("SELECT count(*) FROM vector_docs").fetchone()[0] == 3


def _cache(tmp_path):
    path = tmp_path / "evalkit.sqlite"
    PageStore(path).close()
    return path


def _error(run) -> sqlite3.Error:
    try:
        run()
    except sqlite3.Error as e:
        return e
    raise AssertionError("no error")


def _not_damaged(message: str, *needles: str) -> None:
    assert "is damaged" not in message and "rm '" not in message and "delete" not in message, message
    for n in needles:
        assert n in message, message


def test_a_full_disk_is_named_as_such_and_never_called_damage(tmp_path):
    path = _cache(tmp_path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA max_page_count = 1")  # SQLite's own "disk is full" at the next page it needs
    e = _error(lambda: db.execute("CREATE TABLE big AS SELECT zeroblob(100000) AS b"))
    _not_damaged(str(cache.explain(path, e)), "not damaged", "the disk holding it is full")


def test_a_read_only_cache_is_named_as_such(tmp_path):
    path = _cache(tmp_path)
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    e = _error(lambda: db.execute("CREATE TABLE t (x)"))
    _not_damaged(str(cache.explain(path, e)), "not damaged", "cannot be written (a read-only file or folder)")


def test_a_busy_lock_is_named_as_such(tmp_path):
    path = _cache(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    e = _error(lambda: sqlite3.connect(path, timeout=0).execute("CREATE TABLE t (x)"))
    _not_damaged(str(cache.explain(path, e)), "another process holds its lock")
    holder.execute("ROLLBACK")


def test_any_other_error_on_a_healthy_cache_is_checked_before_it_is_called_damaged(tmp_path):
    path = _cache(tmp_path)
    e = _error(lambda: sqlite3.connect(path).execute("SELECT * FROM no_such_table"))
    _not_damaged(str(cache.explain(path, e)), "passes PRAGMA quick_check, so it is not damaged")
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)  # now it is damaged
    assert f"the cache {path} is damaged" in str(cache.explain(path, e))


@pytest.mark.slow
def test_a_file_size_limit_mid_ingest_is_not_called_damage(tmp_path):
    """A real write failure in the middle of extraction (the process may write at most 200 kB, as on a full
    disk): one line, exit 2, and no advice to delete the cache, which passes its check afterwards."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        make_pdf(docs / f"d{i}.pdf", [f"page {i} " + "text " * 2000] * 3)
    code = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            "resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000)); "
            f"from evalkit.cli import main; sys.exit(main(['corpus', 'stats', '--docs', {str(docs)!r}]))")
    env = {**os.environ, "EVALKIT_CACHE": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in p.stderr.splitlines() if "evalkit: " in line]  # progress bars aside
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    _not_damaged(lines[0], "not damaged", "free space")
    assert cache.quick_check(tmp_path / "cache" / "evalkit.sqlite") == (True, "ok")

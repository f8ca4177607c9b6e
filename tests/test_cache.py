import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from evalkit import cache, corpora
from evalkit.arms.lexical import ensure_global_index
from evalkit.pages import PageStore

from .conftest import make_pdf

QUERIES = '''
[set]
name = "four"
[[query]]
id = "parskip"
class = "needle"
text = "space between paragraphs instead of indentation"
judgments = [{ doc = "parskip.pdf", page = 1, gain = 3 }]
[[query]]
id = "spacing"
class = "needle"
text = "double line spacing for a thesis"
judgments = [{ doc = "setspace-doc.pdf", page = 1, gain = 3 }]
[[query]]
id = "cite"
class = "needle"
text = "sort and compress numeric citations"
judgments = [{ doc = "cite.pdf", page = 1, gain = 3 }]
[[query]]
id = "gantt"
class = "abstain"
text = "draw a gantt chart"
judgments = []
'''


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
    for name in ("parskip.pdf", "setspace-doc.pdf", "cite.pdf", "chapterbib.pdf"):
        shutil.copy(c.path(name), docs / name)
    shutil.copy(c.path("parskip.pdf"), docs / "the copy.pdf")
    q = tmp_path / "four.toml"
    q.write_text(QUERIES)
    env = {**os.environ, "EVALKIT_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-m", "evalkit", "run", "--docs", str(docs), "--qrels", str(q),
                               "--arms", "semantic,hybrid", "--out", str(tmp_path / f"res{i}")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (1, 2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and "Traceback" not in err, err[-3000:]
        assert "skipped the copy.pdf: byte-identical to parskip.pdf" in err
    trec = sorted(f.name for f in (tmp_path / "res1" / "runs").glob("*.trec"))
    assert len(trec) == 2
    for f in trec:
        assert (tmp_path / "res1" / "runs" / f).read_bytes() == (tmp_path / "res2" / "runs" / f).read_bytes()
    db = sqlite3.connect(tmp_path / "cache" / "evalkit.sqlite")
    assert db.execute("SELECT count(*) FROM vector_docs").fetchone()[0] == 4

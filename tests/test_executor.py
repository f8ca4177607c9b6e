"""The Dask executor against a real local cluster (worker processes started in the test): extraction,
embedding and arm runs spread over it give byte-identical cache rows and TREC files."""
import filecmp
import shutil
import tomllib

import pytest

from evalkit import corpora, executor, runner
from evalkit.cli import main
from evalkit.pages import PageStore

from .conftest import ROOT, SMALL_QUERIES, query_file


distributed = pytest.importorskip("distributed")


@pytest.mark.slow
def test_an_unknown_executor_or_an_unreachable_scheduler_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(executor, "CONNECT_TIMEOUT", "1s")  # refused at once; Dask retries until the timeout
    with pytest.raises(executor.ExecutorError, match="unknown executor 'ray://x:1'"):
        executor.connect("ray://x:1")
    assert main(["search", "tables", "--docs", str(tmp_path), "--executor", "dask://127.0.0.1:9"]) == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err


def test_map_returns_every_result_with_its_index(cluster):
    with executor.use(cluster) as ex:
        got = dict(ex.map(pow, [(i, 2) for i in range(40)]))
    assert got == {i: i * i for i in range(40)}


@pytest.mark.slow
def test_extraction_on_the_cluster_stores_the_same_pages(small, cluster, tmp_path):
    c, store = small
    with PageStore(tmp_path / "remote.sqlite") as remote, executor.use(cluster):
        ingest = remote.ingest(corpora.from_dir(c.root, c.name), progress=False)
        assert ingest.extracted and not ingest.errors
        assert remote.corpus_texts(ingest.corpus) == store.corpus_texts(c)


@pytest.mark.slow
def test_a_run_on_the_cluster_writes_the_same_trec_files(small, cluster, tmp_path, monkeypatch):
    """The same folder, cold caches: once in this process, once on the cluster (extraction, embedding and
    every arm there); the vectors and the TREC files must be the same bytes."""
    c, _ = small
    docs = tmp_path / "docs"
    docs.mkdir()
    names = {"float.pdf", "newfloat.pdf", "setspace-doc.pdf"}  # 22 pages: every step twice, from cold caches
    for name in names:
        shutil.copy(c.path(name), docs / name)
    # the small set's queries judged on these manuals only (and its abstain query)
    qfile = query_file(tmp_path / "q.toml", *(q for q in tomllib.loads(SMALL_QUERIES)["query"]
                                              if {j["doc"] for j in q["judgments"]} <= names))
    specs = "keyword,global-index,semantic,hybrid(keyword=global-index)"
    outs = {}
    for where in ("local", cluster):
        name = "local" if where == "local" else "cluster"
        monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / f"cache-{name}"))
        outs[name] = tmp_path / f"out-{name}"
        assert main(["run", "--docs", str(docs), "--qrels", str(qfile), "--arms", specs, "--out", str(outs[name]),
                     "--executor", where]) == 0
    trec = sorted(p.name for p in (outs["local"] / "runs").glob("*.trec"))
    assert len(trec) == 4
    _, mismatch, errors = filecmp.cmpfiles(outs["local"] / "runs", outs["cluster"] / "runs", trec, shallow=False)
    assert mismatch == [] and errors == []
    vectors = []
    for name in ("local", "cluster"):
        with PageStore(tmp_path / f"cache-{name}" / "evalkit.sqlite") as s:
            vectors.append(s.db.execute("SELECT sha256, page, chunk, vec FROM vectors ORDER BY 1, 2, 3").fetchall())
    assert vectors[0] == vectors[1] and len(vectors[0]) > 0


@pytest.mark.slow
def test_latex_arms_on_the_cluster_match_the_local_run(latex, cluster, tmp_path):
    """The latex benchmark's lexical arms over its whole query set, on the cluster and here."""
    from evalkit import qrels

    c, store = latex
    qs = qrels.load(ROOT / "qrels" / "latex.toml")
    specs = ["keyword", "keyword(tiebreak=page)", "global-index", "score-merge"]
    runner.run(c, store, qs, specs, tmp_path / "local", progress=False)
    with executor.use(cluster):
        runner.run(c, store, qs, specs, tmp_path / "cluster", progress=False)
    files = sorted(p.name for p in (tmp_path / "local" / "runs").glob("*.trec"))
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "local" / "runs", tmp_path / "cluster" / "runs", files,
                                           shallow=False)
    assert len(files) == 4 and mismatch == [] and errors == []

"""The front door as a notebook uses it: tiny real PDFs, real SQLite, no model."""
import json
from pathlib import Path

import pytest

import evalkit as ek
from evalkit import dirs, executor
from evalkit.corpora import CorpusError
from evalkit.qrels import QrelsError
from evalkit.runner import RunError
from tests.conftest import make_pdf, query, query_file

QUERIES = (
    query("q1", "needle", "walrus migration", ("a.pdf", 2, 3, "walrus migration routes")),
    query("q2", "spread", "walrus", ("a.pdf", 2, 2, "walrus migration"), ("b.pdf", 1, 2, "a walrus")),
    query("q3", "abstain", "narwhal tusks", kind="absent-name"),
)


@pytest.fixture
def docs(isolated):
    folder = isolated / "docs"
    folder.mkdir()
    make_pdf(folder / "a.pdf", ["seals on the ice", "walrus migration routes north"])
    make_pdf(folder / "b.pdf", ["penguins and a walrus"])
    query_file(isolated / "q.toml", *QUERIES, name="tiny", corpus="docs")
    return ek.corpus(docs=folder, progress=False)


def test_a_corpus_knows_its_store_and_texts(docs):
    assert docs.name == "docs" and docs.documents == ["a.pdf", "b.pdf"]
    first, second = docs.texts("a.pdf")
    assert "seals on the ice" in first and docs.text("a.pdf") == f"{first}\f{second}"
    assert docs.page("a.pdf", 2).text == second and "walrus migration" in second
    with pytest.raises(CorpusError, match=r"^a.pdf#3: page 3 is out of range for a.pdf \(1..2\)$"):
        docs.page("a.pdf", 3)
    with pytest.raises(KeyError, match="'c.pdf' is not a document of corpus 'docs'"):  # as the page store's
        docs.page("c.pdf", 1)
    assert docs.search("keyword", "walrus", 2).hits[0].doc in ("a.pdf", "b.pdf")
    with pytest.raises(CorpusError, match="not both"):
        ek.corpus("latex", docs=".")


def test_a_query_set_remembers_its_file_and_must_fit(docs, isolated):
    qs = ek.queries(isolated / "q.toml")
    assert qs.path == isolated / "q.toml"
    ek.check_fit(qs, docs)
    with pytest.warns(DeprecationWarning, match="ek.check_fit"):
        ek.fit(qs, docs)  # the old name, for one release
    query_file(isolated / "other.toml", *QUERIES, name="tiny", corpus="latex")
    with pytest.raises(QrelsError, match="is a query set for corpus 'latex', not 'rmanuals'"):
        ek.run("rmanuals", ek.queries(isolated / "other.toml"), ["keyword"], isolated / "never")  # before opening
    ek.check_fit(ek.queries(isolated / "other.toml"), docs)  # a folder's name says nothing of its documents
    query_file(isolated / "bad.toml", query("q1", "needle", "walrus migration", ("a.pdf", 7, 3)), *QUERIES[1:],
               name="tiny", corpus="docs")
    with pytest.raises(QrelsError, match="does not fit corpus 'docs'"):
        ek.run(docs, isolated / "bad.toml", ["keyword"], isolated / "never")
    with pytest.warns(DeprecationWarning, match="ek.run.corpus="), pytest.raises(QrelsError, match="does not fit"):
        ek.run(docs=docs, qs=isolated / "bad.toml", arms=["keyword"], out=isolated / "never")  # the old keyword
    assert not (isolated / "never").exists()


def by_page(query, k):
    """A retriever that answers in 0-based pages for q1's words: page 2 of a.pdf becomes page... 3."""
    if "migration" in query:
        return [("a.pdf", 3, 1.0)]
    return [("a.pdf", 2, 2.0), ("b.pdf", 1, 1.0)]


def chunks(query, k):
    return [ek.Chunk("a.pdf", "walrus migration routes", 0.9), ek.Chunk("b.pdf", "penguins and", 0.5),
            ek.Chunk("a.pdf", start=0, end=20, score=0.1)]


def test_a_bad_answer_is_its_querys_error_and_the_run_goes_on(docs, isolated, capsys):
    res = ek.run(docs, isolated / "q.toml", ["keyword", by_page], isolated / "res", progress=False)
    label = res.arm("by_page")
    assert label.startswith("by_page@") and res.arms == ["keyword", label]
    rows = res.per_query.set_index(["arm", "query"])
    assert rows.loc[(label, "q1"), "error"] == "invalid answer: hit 1: page 3 of 'a.pdf' is outside 1..2"
    assert rows.loc[(label, "q1"), "nDCG@10"] == 0.0 and rows.loc[(label, "q2"), "nDCG@10"] > 0.9
    assert res.manifest["status"] == "complete"
    err = capsys.readouterr().err
    assert f"arm {label!r}: 1 of 3 queries recorded as errors, first query 'q1': invalid answer: hit 1" in err
    assert res.table().loc[label, "errors"] == 1


def test_chunks_are_placed_recorded_and_scored_by_evidence(docs, isolated):
    res = ek.run(docs, isolated / "q.toml", [chunks, "keyword"], isolated / "res", progress=False)
    label = res.arm("chunks")
    info = next(a for a in res.manifest["arms"] if a["label"] == label)
    assert info["describe"]["adapter"] == "python" and "each page ranks at its best chunk" in info["describe"]["chunks"]
    rec = json.loads((res.path / "runs" / f"{info['file']}.jsonl").read_text().splitlines()[0])
    assert rec["hits"] == [["a.pdf", 2, 0.9], ["b.pdf", 1, 0.5], ["a.pdf", 1, 0.1]]
    assert [c[1] for c in rec["chunks"]] == [[2], [1], [1, 2]]
    rows = res.per_query.set_index(["arm", "query"])
    assert rows.loc[(label, "q1"), "Evidence@10"] == 1.0  # the first chunk holds q1's quote
    assert rows.loc[(label, "q2"), "Evidence@10"] == 1.0
    assert rows.loc[("keyword", "q1")].isna()["Evidence@10"]  # a page arm: not defined
    table = res.table()
    assert table.loc[label, "Evidence@10"] == 1.0


def test_compare_and_gate_take_short_names(docs, isolated, tmp_path):
    res = ek.run(docs, isolated / "q.toml", ["keyword", "global-index"], isolated / "res", progress=False)
    frame = ek.compare(res, "keyword")
    assert set(frame.index.get_level_values("candidate")) == {"global-index"} and "p_holm" in frame
    with pytest.warns(DeprecationWarning, match="baseline_arm="):  # the old keyword, for one release
        assert ek.compare(res, baseline="keyword").equals(ek.compare(res, baseline_arm="keyword"))
    assert res.compare("keyword", "global-index").n == 2
    rules = tmp_path / "gate.toml"
    rules.write_text('[[rule]]\ntype = "non-inferiority"\nmeasure = "nDCG@10"\nmargin = 0.5\n')
    verdict = ek.gate(res, res, rules, baseline_arm="keyword", candidate_arm="global-index")
    assert verdict.exit_code in (0, 1, 2) and (res.path / "gate.json").exists()
    with pytest.raises(Exception, match="has no arm 'nope'; it has keyword, global-index"):
        ek.compare(res, "nope")


def test_a_notebook_arm_cannot_travel_to_workers(docs, isolated, cluster):
    with executor.use(cluster), pytest.raises(RunError, match="defined in this process"):
        ek.run(docs, isolated / "q.toml", [chunks], isolated / "res", progress=False)


def test_a_folder_of_ones_own_is_a_pinned_corpus_in_one_step(tmp_path, monkeypatch, capsys):
    """ek.add_corpus writes ./corpora.lock (nothing else in the working directory, nothing in the
    installation), with the folder as root and sources relative to the lock, and the corpus is usable at once."""
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("EVALKIT_LOCK", raising=False)
    work = tmp_path / "work"
    (work / "pdfs").mkdir(parents=True)
    make_pdf(work / "pdfs" / "a.pdf", ["seals on the ice", "walrus migration routes north"])
    make_pdf(work / "pdfs" / "b.pdf", ["penguins and a walrus"])
    monkeypatch.chdir(work)
    shipped = dirs.shipped_lock()
    before = shipped.read_bytes()
    mine = ek.add_corpus("mine", "pdfs", progress=False)
    assert mine.documents == ["a.pdf", "b.pdf"] and mine.corpus.root == work / "pdfs"
    assert sorted(p.name for p in work.iterdir()) == ["corpora.lock", "pdfs"] and shipped.read_bytes() == before
    lock = (work / "corpora.lock").read_text()
    assert 'root = "pdfs"' in lock and 'source = "file:pdfs/a.pdf"' in lock and str(work) not in lock
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"pinned mine in {work / 'corpora.lock'}: 2 documents, 3 pages in pdfs "
                      "(paths relative to the lock)")
    assert err[1] == (f"corpus mine: PDFs in {work / 'pdfs'}; cache {tmp_path / 'cache' / 'evalkit.sqlite'}: "
                      "0 of 2 documents reused, 2 extracted")  # extracted as they were pinned
    assert ek.corpus("mine", progress=False).search("keyword", "walrus", 1).hits  # by name, no fetch
    make_pdf(work / "pdfs" / "a.pdf", ["changed"])
    with pytest.raises(CorpusError, match="1 changed"):
        ek.corpus("mine", progress=False)


def test_a_retriever_that_raises_on_one_query_errs_on_that_query_only(docs, isolated):
    def flaky(query, k):
        if "narwhal" in query:
            raise ValueError("no index for that")
        return [("a.pdf", 2, 1.0)]

    res = ek.run(docs, isolated / "q.toml", [flaky], isolated / "res", progress=False)
    errors = res.per_query.set_index("query")["error"]
    assert errors["q3"] == "ValueError: no index for that" and errors["q1"] == ""
    assert res.manifest["status"] == "complete"


def test_an_answer_longer_than_k_is_cut_to_k_where_it_is_recorded(docs, isolated, capsys):
    """k = 2: a retriever that answers 3 pages has its first 2 recorded (a reciprocal rank cannot come from
    rank 3), says so, and one whose generator never ends is read 3 items far, not until memory runs out."""
    def long(query, k):
        return [("b.pdf", 1, 3.0), ("a.pdf", 1, 2.0), ("a.pdf", 2, 1.0)]

    def endless(query, k):
        for i in __import__("itertools").count():
            assert i <= k, f"read item {i + 1} of an answer asked for {k}"
            yield ("a.pdf", i % 2 + 1, -float(i))

    res = ek.run(docs, isolated / "q.toml", [long, endless], isolated / "res", k=2, progress=False)
    rows = res.per_query.set_index(["arm", "query"])
    label = res.arm("long")
    assert rows.loc[(label, "q1"), "RR"] == 0.0 and rows.loc[(label, "q1"), "hits"] == 2  # a.pdf#2 was rank 3
    assert (rows["error"] == "").all() and (rows["hits"] == 2).all() and res.manifest["depth"] == 2
    info = next(a for a in res.manifest["arms"] if a["label"] == label)
    rec = json.loads((res.path / "runs" / f"{info['file']}.jsonl").read_text().splitlines()[0])
    assert rec["hits"] == [["b.pdf", 1, 3.0], ["a.pdf", 1, 2.0]] and rec["cut_to_k"] == 2
    err = capsys.readouterr().err
    assert f"arm {label!r}: 3 of 3 answers held more than k = 2 hits, first query 'q1': the first 2 were kept" in err


def test_a_run_in_a_long_lived_kernel_says_what_it_reused_itself(docs, isolated, capsys):
    docs.search("global-index", "walrus", 2)  # the workbench searching before the run, in the same kernel
    capsys.readouterr()
    ek.run(docs, isolated / "q.toml", ["global-index"], isolated / "res", progress=False)
    assert f"cache {docs.store.path}: corpus-wide index: 3 pages reused, 0 built" in capsys.readouterr().err


def test_no_name_of_the_front_door_is_also_a_module_of_the_package():
    """Importing a submodule sets it as an attribute of its package, so a module ``evalkit.report`` would
    replace ``ek.report``, the function, once anything imported it (the report package is ``reports``)."""
    import evalkit.reports  # noqa: F401  (imported first: ek.report must still be the function)
    from evalkit import api

    package = Path(ek.__file__).parent
    assert not [n for n in ek._EXPORTS if (package / n).is_dir() or (package / f"{n}.py").is_file()]
    assert ek.report is api.report


def test_the_old_names_work_for_one_release_and_say_what_replaces_them():
    from evalkit import records

    with pytest.warns(DeprecationWarning, match="Answer"):
        old = records.Result  # ek.Result too: it is read from here
    assert old is ek.Answer and "Result" not in ek.__all__ and "fit" not in ek.__all__

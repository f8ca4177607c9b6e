import json
import unicodedata

import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given
from hypothesis import strategies as st

from evalkit import ids
from evalkit.cli import main
from evalkit.records import page_id, split_page_id

from .conftest import make_pdf, query, query_file


@given(st.text())
def test_encoding_is_reversible_and_leaves_one_field(name):
    e = ids.encode(name)
    assert ids.decode(e) == name and split_page_id(page_id(name, 7)) == (name, 7)
    assert len(f"q Q0 {e}#7 1 1 t".split()) == 6 and "#" not in e


def test_non_ascii_is_written_as_is_and_nfc_nfd_clash_is_found():
    assert ids.encode("café.pdf") == "café.pdf"
    nfd = unicodedata.normalize("NFD", "café.pdf")
    assert ids.normalization_clashes(["café.pdf", nfd, "x.pdf"]) == [("café.pdf", nfd)]


QUERIES = (
    query("q 1", "needle", "walrus migration", ("my notes.pdf", 2, 3), ("a#b.pdf", 1, 1)),
    query("q#2", "needle", "penguin colony", ("café ø.pdf", 1, 3)),
)


def test_odd_names_score_the_same_in_trec_eval(isolated, capsys):
    docs = isolated / "docs"
    docs.mkdir()
    make_pdf(docs / "my notes.pdf", ["seals and walrus", "walrus migration walrus migration routes"])
    make_pdf(docs / "a#b.pdf", ["walrus migration in the arctic, and walrus food"])
    make_pdf(docs / "café ø.pdf", ["penguin colony penguin", "walrus"])
    make_pdf(docs / "plain.pdf", ["penguin colony size and walrus migration"])
    q = isolated / "odd.toml"
    query_file(q, *QUERIES, name="odd")
    out = isolated / "res"
    assert main(["run", "--docs", str(docs), "--qrels", str(q), "--arms", "keyword,global-index", "--out",
                 str(out)]) == 0
    assert main(["qrels", "export", str(q), "--out", str(isolated / "odd")]) == 0
    qd: dict = {}
    for line in (isolated / "odd.page.qrels").read_text().splitlines():
        qid, _, pid, gain = line.split()
        qd.setdefault(qid, {})[pid] = int(gain)
    assert set(qd) == {"q%201", "q%232"}
    frame = pd.read_parquet(out / "per_query.parquet")
    for arm in json.loads((out / "manifest.json").read_text())["arms"]:
        run: dict = {}
        for line in (out / "runs" / f"{arm['file']}.trec").read_text().splitlines():
            fields = line.split()
            assert len(fields) == 6, line
            run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
        trec = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10", "recip_rank"}).evaluate(run)
        ours = frame[frame["arm"] == arm["label"]].set_index("query")
        assert set(trec) == {"q%201", "q%232"}
        for qid, m in trec.items():
            assert m["ndcg_cut_10"] == pytest.approx(ours.loc[ids.decode(qid), "nDCG@10"], abs=1e-9)
            assert m["recip_rank"] == pytest.approx(ours.loc[ids.decode(qid), "RR"], abs=1e-9)


def test_a_folder_with_nfc_and_nfd_twins_is_refused(isolated, capsys):
    docs = isolated / "docs"
    docs.mkdir()
    make_pdf(docs / "café.pdf", ["a"])
    make_pdf(docs / unicodedata.normalize("NFD", "café.pdf"), ["b"])
    assert main(["corpus", "stats", "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert "Unicode forms" in err and err.count("\n") == 1


def test_a_judgment_naming_a_file_in_another_unicode_form_says_so():
    from evalkit import qrels
    from evalkit.records import Judgment, Query

    nfd = unicodedata.normalize("NFD", "café.pdf")
    qs = qrels.QuerySet("s", None, (Query("q", "needle", "coffee", (Judgment("café.pdf", 1, 3),)),))
    [problem] = qrels.check(qs, {nfd: ["coffee"]})
    assert "the same name in another Unicode form" in str(problem) and repr(nfd) in str(problem)

"""Rename and re-score on ten real manuals: name-independent arms move 0, a name tie-break is caught."""
from __future__ import annotations

import json
import os

import pytest

from evalkit import arms, qrels, robustness
from evalkit.arms.keyword import KeywordArm
from evalkit.arms.lexical import query_terms
from evalkit.cli import main
from evalkit.fusion import fuse
from evalkit.records import Answer, Hit
from tests.conftest import one_line_error, query, query_file

# Real questions about manuals of the `small` fixture; most words occur in several of the ten documents,
# so per-document fusion leaves the gold page inside a tied band.
QUERIES = (
    query("n1", "needle", "How do I put a little extra vertical space before the total row of a table?",
          ("booktabs.pdf", 5, 3),
          ("ctable.pdf", 5, 1)),
    query("n2", "needle", "Which preamble command sets double spacing for the whole document?",
          ("setspace-doc.pdf", 1, 3)),
    query("n3", "needle", "sort numeric citations into ascending order", ("cite.pdf", 1, 3)),
    query("s1", "spread", "define my own new floating environment type, like a Program float",
          ("float.pdf", 3, 3),
          ("newfloat.pdf", 2, 3)),
    query("a1", "abstain", "How do I draw a Gantt chart with pgfgantt?"),
)


class ByName(KeywordArm):
    """The retracted tool's arm: per-document fusion whose tied bands are ordered by file name."""

    name = "by-name"

    def search(self, query: str, k: int) -> Answer:
        ranked = self.per_document(query_terms(query), k)
        fused = fuse(([(doc, page) for page, _ in pages] for doc, pages in ranked.items()), tiebreak=lambda dp: dp)
        return Answer(tuple(Hit(doc, page, score) for (doc, page), score in fused[:k]))


class Remembered(arms.Arm):
    """An arm that answers with a file name it knew in advance, whatever corpus it was built on."""

    name = "remembered"

    def search(self, query: str, k: int) -> Answer:
        return Answer((Hit("booktabs.pdf", 5, 1.0),))


@pytest.fixture
def with_by_name(monkeypatch):
    real = arms.registry
    monkeypatch.setattr(arms, "registry", lambda: {**real(), "by-name": ByName, "remembered": Remembered})


@pytest.fixture(scope="module")
def qs_path(small, tmp_path_factory):
    path = tmp_path_factory.mktemp("robust") / "robust-test.toml"
    query_file(path, *QUERIES, name="robust-test", corpus="small")
    c, store = small
    assert qrels.check(qrels.load(path), store.corpus_texts(c)) == []
    return path


def test_random_names_are_seeded_distinct_and_keep_the_suffix(small):
    c, _ = small
    a = robustness.random_names(c, seed=0, permutation=1)
    assert a == robustness.random_names(c, seed=0, permutation=1)
    assert set(a) == {d.name for d in c.documents} and len(set(a.values())) == len(a)
    assert all(n.endswith(".pdf") and n[:-4] not in {d.name[:-4] for d in c.documents} for n in a.values())
    assert a != robustness.random_names(c, seed=0, permutation=2) != robustness.random_names(c, seed=1, permutation=2)
    # the renaming reorders the documents (what a name tie-break would follow)
    assert [a[d.name] for d in c.documents] != sorted(a.values())


def test_the_renamed_corpus_is_a_folder_of_links_removed_afterwards(small):
    c, store = small
    names = robustness.random_names(c, 0, 1)
    with robustness.renamed(c, names) as r:
        assert r.name == "small~renamed" and [d.name for d in r.documents] == sorted(names.values())
        assert {d.sha256 for d in r.documents} == {d.sha256 for d in c.documents}
        assert sorted(p.name for p in r.root.iterdir()) == sorted(names.values())
        first = c.documents[0]
        assert os.path.samefile(r.path(names[first.name]), c.path(first))
        assert store.texts(r.document(names[first.name])) == store.texts(first)  # nothing re-extracted
        root = r.root
    assert not root.exists()


@pytest.mark.parametrize("spec", ["keyword", "global-index", "hybrid"])
def test_name_independent_arms_move_zero(small, qs_path, spec):
    c, store = small
    r = robustness.check(c, store, qrels.load(qs_path), spec, permutations=2, progress=False)
    assert r.rankings_changed() == []
    for m, v in r.summary()["measures"].items():
        assert v["max_abs_shift"] == 0 and v["queries_changed"] == 0, m
        assert v["min"] == v["max"] == v["original"], m
    assert r.summary()["measures"]["RR"]["original"] > 0.3  # it found the gold pages: the zero is not vacuous


def test_a_file_name_tie_break_moves(small, qs_path, with_by_name):
    c, store = small
    r = robustness.check(c, store, qrels.load(qs_path), "by-name", permutations=3, progress=False)
    s = r.summary()
    assert s["arm"] == "by-name" and s["permutations"] == 3
    assert s["measures"]["RR"]["max_abs_shift"] > 0.05 and s["measures"]["nDCG@10"]["max_abs_shift"] > 0
    assert s["measures"]["RR"]["queries_changed"] >= 2
    assert len(r.rankings_changed()) >= 3
    moved = s["measures"]["RR"]["per_permutation"]
    assert min(moved) == s["measures"]["RR"]["min"] and max(moved) == s["measures"]["RR"]["max"]
    assert s["measures"]["RR"]["max_abs_shift"] == pytest.approx(max(abs(v - s["measures"]["RR"]["original"])
                                                                     for v in moved))
    # under its original names it answers exactly like the same arm built directly
    direct = arms.make("by-name", c, store)
    q = qrels.load(qs_path).queries[0]
    assert r.runs[0].at[q.id, "top"] == tuple(f"{h.doc}#{h.page}" for h in direct.search(q.text, 10).hits)


def test_an_arm_answering_with_names_the_corpus_does_not_hold_is_named(small, qs_path, with_by_name):
    c, store = small
    with pytest.raises(ValueError, match=r"arm 'remembered' answered query 'n1' with document 'booktabs.pdf', which"):
        robustness.check(c, store, qrels.load(qs_path), "remembered", permutations=1, progress=False)


def test_cli_writes_the_json_the_gate_reads_and_prints_the_table(small, qs_path, tmp_path, capsys):
    c, store = small
    out = tmp_path / "rob"
    argv = ["robustness", "--docs", str(c.root), "--cache", str(store.path), "--qrels", str(qs_path),
            "--arm", "keyword", "--permutations", "2", "--seed", "7", "--out", str(out)]
    assert main(argv) == 0
    data = json.loads((out / "robustness.json").read_text())
    assert data["arm"] == "keyword" and data["permutations"] == 2 and data["seed"] == 7
    assert set(data["measures"]) == set(robustness.MEASURES)
    for v in data["measures"].values():
        assert {"original", "min", "max", "max_abs_shift"} <= set(v)
        assert all(isinstance(v[k], float) for k in ("original", "min", "max", "max_abs_shift"))
    assert data["answerable"] == 4 and data["queries"] == 5
    assert data["rankings_changed"] == {"top": 10, "queries": 0, "ids": []}
    printed = capsys.readouterr().out
    assert "max |shift|" in printed and "nDCG@10(doc)" in printed and str(out / "robustness.json") in printed


@pytest.mark.parametrize("extra, message", [
    (["--permutations", "0"], "permutations must be >= 1"),
    (["--measures", "nDCG@10,Bogus@3"], "unknown measure 'Bogus@3'"),
    (["--arm", "nosuch"], "unknown arm 'nosuch'"),
])
def test_cli_bad_input_exits_2_with_one_line(small, qs_path, tmp_path, capsys, extra, message):
    c, store = small
    argv = ["robustness", "--docs", str(c.root), "--cache", str(store.path), "--qrels", str(qs_path),
            "--arm", "keyword", "--out", str(tmp_path / "rob"), *extra]
    assert main(argv) == 2
    one_line_error(capsys, message)  # after the line that says which cache the corpus was read from
    assert not (tmp_path / "rob").exists()

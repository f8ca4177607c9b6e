import re
from pathlib import Path

import pytest

from evalkit import qrels
from evalkit.cli import main
from evalkit.qrels import QrelsError
from evalkit.text import contains

from .conftest import ROOT, make_pdf, one_line_error

PAGES = {
    "a.pdf": ["The geometry package sets page margins.", "Tables get rules from booktabs."],
    "b.pdf": ["Captions go above tables with the position option.", "Nothing else here."],
}

GOOD = '''
[set]
name = "tiny"
corpus = "tiny"
[[query]]
id = "n1"
class = "needle"
text = "How do I set the margins?"
judgments = [{ doc = "a.pdf", page = 1, gain = 3, evidence = "sets page margins" }]
[[query]]
id = "s1"
class = "spread"
text = "tables"
judgments = [{ doc = "a.pdf", page = 2, gain = 2, evidence = "Tables get rules" },
             { doc = "b.pdf", page = 1, gain = 1, evidence = "above tables" }]
[[query]]
id = "d1"
class = "described"
text = "the white border around my printed sheet is too wide"
judgments = [{ doc = "a.pdf", page = 1, gain = 3, evidence = "geometry package" }]
[[query]]
id = "a1"
class = "abstain"
text = "How do I draw a flowchart with TikZ?"
judgments = []
'''


def _load(tmp_path, text):
    p = tmp_path / "q.toml"
    p.write_text(text)
    return qrels.load(p)


def test_a_good_set_has_no_problems(tmp_path):
    qs = _load(tmp_path, GOOD)
    assert (qs.name, qs.corpus, len(qs.queries)) == ("tiny", "tiny", 4)
    assert qrels.check(qs, PAGES, strict=True) == []
    assert qs["d1"].cls == "described" and qs.by_class()["abstain"][0].id == "a1"


def _problems(tmp_path, old, new, strict=True):
    assert old in GOOD
    return qrels.check(_load(tmp_path, GOOD.replace(old, new, 1)), PAGES, strict=strict)


@pytest.mark.parametrize("old, new, field, message", [
    ('id = "s1"', 'id = "n1"', "id", "duplicate id"),
    ('class = "needle"', 'class = "needel"', "class", "is not one of"),
    ('text = "tables"', 'text = "  "', "text", "empty"),
    ('judgments = []', 'judgments = [{ doc = "a.pdf", page = 1, gain = 1, evidence = "margins" }]', "judgments",
     "abstain query has no relevant judgments"),
    ('judgments = [{ doc = "a.pdf", page = 1, gain = 3, evidence = "sets page margins" }]',
     'judgments = [{ doc = "a.pdf", page = 1, gain = 0 }]', "judgments", "at least one judgment with gain > 0"),
    ('{ doc = "b.pdf", page = 1, gain = 1, evidence = "above tables" }',
     '{ doc = "a.pdf", page = 1, gain = 1, evidence = "margins" }', "judgments", "at least 2 documents"),
    ('gain = 3, evidence = "sets page margins"', 'gain = 4, evidence = "sets page margins"', "judgments[1].gain",
     "not in 0..3"),
    ('doc = "a.pdf", page = 1, gain = 3, evidence = "sets', 'doc = "zzz.pdf", page = 1, gain = 3, evidence = "sets',
     "judgments[1].doc", "not in the corpus"),
    ('page = 1, gain = 3, evidence = "sets page margins"', 'page = 3, gain = 3, evidence = "sets page margins"',
     "judgments[1].page", "out of range"),
    (', evidence = "sets page margins"', "", "judgments[1].evidence", "missing"),
    ('evidence = "sets page margins"', 'evidence = "sets the page margins"', "judgments[1].evidence",
     "not found on a.pdf#1"),
    ('text = "the white border around my printed sheet is too wide"', 'text = "geometry package margins"', "text",
     "shares 100%"),
    ('{ doc = "b.pdf", page = 1, gain = 1, evidence = "above tables" }',
     '{ doc = "b.pdf", page = 1, gain = 1, evidence = "above tables" }, { doc = "b.pdf", page = 1, gain = 2, evidence '
     '= "above tables" }', "judgments", "judged twice"),
    ('{ doc = "b.pdf", page = 1, gain = 1, evidence = "above tables" }', '{ doc = "b.pdf", page = 1, gain = 0 }',
     "judgments", "at least 2 documents"),
    ('class = "abstain"', 'class = "abstain"\nkind = "unsure"', "kind", "only abstain queries have a kind"),
    ('class = "needle"', 'class = "needle"\nkind = "near-miss"', "kind", "only abstain queries have a kind"),
    ('class = "needle"', 'class = "needle"\ndistractor = "b.pdf"', "distractor", "only trap queries"),
])
def test_every_rule_has_a_failing_example(tmp_path, old, new, field, message):
    problems = _problems(tmp_path, old, new)
    assert any(p.field == field and message in p.message for p in problems), problems


def test_an_ungraded_query_is_a_warning_and_strict_refuses_it(tmp_path):
    """A needle with no judgment at all is written, not graded yet: a warning naming it (a run records its answers
    for the judge), an error with --strict; a needle graded with no relevant page is an error either way, and an
    abstain query with no judgment is its normal state, never ungraded."""
    old = 'judgments = [{ doc = "a.pdf", page = 1, gain = 3, evidence = "sets page margins" }]'
    qs = _load(tmp_path, GOOD.replace(old, "judgments = []", 1))
    assert qrels.ungraded(qs) == ("n1",)
    [loose] = qrels.check(qs, PAGES)
    assert (loose.query, loose.field, loose.warning) == ("n1", "judgments", True)
    assert str(loose).startswith("n1: judgments: warning: not graded yet: no judgments")
    [strict] = [p for p in qrels.check(qs, PAGES, strict=True) if p.query == "n1"]
    assert not strict.warning and strict.message.startswith("not graded yet")
    zero = _load(tmp_path, GOOD.replace(old, 'judgments = [{ doc = "a.pdf", page = 1, gain = 0 }]', 1))
    assert qrels.ungraded(zero) == () and [p.warning for p in qrels.check(zero, PAGES)] == [False]
    assert qrels.ungraded(_load(tmp_path, GOOD)) == ()  # a1, the abstain query, has no judgment


def test_judged_non_relevant_pages_are_kept(tmp_path):
    """Gain 0 is a page read and found wanting: allowed anywhere (abstain too), evidence optional, and
    exported to TREC qrels as trec_eval expects."""
    qs = _load(tmp_path, GOOD.replace('judgments = []', 'kind = "near-miss"\njudgments = [{ doc = "a.pdf", page = 2, '
                                                        'gain = 0 }]')
               .replace('class = "needle"', 'class = "trap"\ndistractor = "b.pdf"'))
    assert qrels.check(qs, PAGES, strict=True) == []
    assert (qs["a1"].kind, qs["n1"].distractor, qs["a1"].relevant) == ("near-miss", "b.pdf", ())
    assert "a1 0 a.pdf#2 0\n" in qrels.to_trec(qs)
    again = _load(tmp_path, qrels.to_toml(qs))
    assert again.queries == qs.queries


def test_the_pool_is_recorded_in_the_header(tmp_path):
    qs = _load(tmp_path, GOOD.replace('corpus = "tiny"', 'corpus = "tiny"\npool_depth = 10\npool_arms = ["keyword", '
                                                         '"hybrid(keyword=global-index)"]'))
    assert (qs.pool_depth, qs.pool_arms) == (10, ("keyword", "hybrid(keyword=global-index)"))
    again = _load(tmp_path, qrels.to_toml(qs))
    assert (again.pool_depth, again.pool_arms) == (qs.pool_depth, qs.pool_arms)
    assert (_load(tmp_path, GOOD).pool_depth, _load(tmp_path, GOOD).pool_arms) == (None, ())
    for bad, message in (("pool_depth = 0", "pool_depth is not a positive integer: 0"),
                         ('pool_depth = "10"', "pool_depth is not a positive integer: '10'"),
                         ('pool_arms = "keyword"', "pool_arms is not a list of arm specs: 'keyword'"),
                         ("pool_arms = [1]", "pool_arms is not a list of arm specs: \\[1\\]")):
        with pytest.raises(QrelsError, match=message):
            _load(tmp_path, GOOD.replace('corpus = "tiny"', f'corpus = "tiny"\n{bad}'))


def test_the_default_gains_are_the_rubric():
    assert sorted(qrels.DEFAULT_GAINS) == [0, 1, 2, 3]
    assert "command or option and its use" in qrels.DEFAULT_GAINS[3] and "does not answer" in qrels.DEFAULT_GAINS[0]


def test_a_warning_says_so():
    assert str(qrels.Problem("n1", "text", "lifted", warning=True)) == "n1: text: warning: lifted"
    assert str(qrels.Problem(qrels.SET, "abstain", "too few")) == "[set]: abstain: too few"


def test_strict_only_rules_pass_without_strict(tmp_path):
    assert _problems(tmp_path, 'evidence = "sets page margins"', 'evidence = "nowhere"', strict=False) == []


@pytest.mark.parametrize("text, message", [
    ("[[query]\nid=1", "not valid TOML"),
    ('[[query]]\nid = "x"\ntext = "t"', "query 'x': field 'class' is missing"),
    ('[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\njudgments = [{ doc = "a.pdf", page = "3", gain = 1 }]',
     "query 'x': judgments\\[1\\].page is missing or not a int"),
    ('[[query]]\nclass = "needle"\ntext = "t"', "query #1: field 'id'"),
    ("[set]\nname='x'", "no \\[\\[query\\]\\] entries"),
    ('[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\njudgments = [{ doc = "a.pdf", page = 3, gain = 1, reread = 2 '
     '}]',
     "query 'x': judgments\\[1\\].reread is not a string"),
    ('[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\njudgments = [{ doc = "a.pdf", page = 3, gain = 1, found_by = '
     '"search:" }]',
     "query 'x': judgments\\[1\\].found_by is 'search:', want \"search:<arm>\""),
    ('[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\njudgments = [{ doc = "a.pdf", page = 3, gain = 1, found_by = '
     '"pool" }]',
     "query 'x': judgments\\[1\\].found_by is 'pool'"),
    ('[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\ndrafted = 3', "query 'x': field 'drafted' is not a string"),
])
def test_malformed_files_name_the_query_and_field(tmp_path, text, message):
    with pytest.raises(QrelsError, match=message):
        _load(tmp_path, text)


def test_a_file_without_header_or_evidence_loads(tmp_path):
    qs = _load(tmp_path, '[[query]]\nid = "q"\nclass = "needle"\ntext = "margins"\n'
                         'judgments = [{ doc = "a.pdf", page = 1, gain = 2 }]\n')
    assert qs.corpus is None and qs.name == "q"
    assert qrels.check(qs, PAGES) == []
    assert [p.field for p in qrels.check(qs, PAGES, strict=True)] == ["judgments[1].evidence"]


def test_evidence_survives_extraction_differences():
    page = "The ﬁrst option con-\ntrols  the\nMargins of the page."
    assert contains(page, "first option controls the margins")
    assert contains(page, "con-trols")
    assert not contains(page, "second option")


def test_trec_export_import_round_trip(tmp_path):
    qs = _load(tmp_path, GOOD)
    page, doc = qrels.to_trec(qs, "page"), qrels.to_trec(qs, "doc")
    assert "n1 0 a.pdf#1 3\n" in page and "s1 0 b.pdf 1\n" in doc
    back = qrels.from_trec(page, qrels.topics_tsv(qs), name="tiny", corpus="tiny")
    strip = lambda q: (q.id, q.cls, q.text, sorted((j.doc, j.page, j.gain) for j in q.judgments))  # noqa: E731
    assert [strip(q) for q in back.queries] == [strip(q) for q in qs.queries]
    again = tmp_path / "again.toml"
    again.write_text(qrels.to_toml(back))
    assert [strip(q) for q in qrels.load(again).queries] == [strip(q) for q in qs.queries]


def test_import_infers_classes_without_a_class_column():
    qs = qrels.from_trec("q1 0 a.pdf#1 2\nq2 0 a.pdf#1 1\nq2 0 b.pdf#2 1\n", "q1\tone\nq2\ttwo\nq3\tthree\n")
    assert [q.cls for q in qs.queries] == ["needle", "spread", "abstain"]
    with pytest.raises(QrelsError, match="missing from the topics file: q9"):
        qrels.from_trec("q9 0 a.pdf#1 2\n", "q1\tone\n")
    with pytest.raises(QrelsError, match="line 1: query 'q1'"):
        qrels.from_trec("q1 0 a.pdf 2\n", "q1\tone\n")


def test_cli_check_export_import(isolated, capsys):
    d = isolated / "docs"
    d.mkdir()
    for name, texts in PAGES.items():
        make_pdf(d / name, texts)
    q = isolated / "q.toml"
    q.write_text(GOOD)
    assert main(["qrels", "check", str(q), "--docs", str(d), "--verbose"]) == 0  # --strict: test_validity.py
    assert "described d1: overlap" in capsys.readouterr().out
    q.write_text(GOOD.replace('page = 2, gain = 2', 'page = 9, gain = 2'))
    assert main(["qrels", "check", str(q), "--docs", str(d)]) == 1
    assert "s1: judgments[1].page: 9 is out of range for a.pdf (1..2)" in capsys.readouterr().out
    q.write_text(GOOD)
    assert main(["qrels", "export", str(q), "--out", str(isolated / "t")]) == 0
    assert main(["qrels", "import", str(isolated / "t.page.qrels"), str(isolated / "t.topics.tsv"),
                 "--out", str(isolated / "back.toml")]) == 0
    assert len(qrels.load(isolated / "back.toml").queries) == 4
    q.write_text(GOOD + '[[query]]\nid = "p1"\nclass = "needle"\ntext = "tables"\n'
                        'judgments = [{ doc = "a.pdf", page = 2, gain = 3 }]\n')
    capsys.readouterr()
    assert main(["qrels", "pool", str(q), "--docs", str(d), "--arms", "keyword,global-index", "--depth", "5"]) == 0
    pooled = capsys.readouterr().out
    # p1 judged only a.pdf#2; both arms also retrieve b.pdf#1 ("above tables"), which the judge should read
    assert "p1 [needle] tables\n    b.pdf#1  (keyword@" in pooled and "global-index@" in pooled
    assert pooled.rstrip().endswith("1 unjudged page(s) in the top 5 of 2 arm(s)")
    # without --arms and --depth, the pool recorded in [set] is used
    q.write_text(q.read_text().replace('corpus = "tiny"', 'corpus = "tiny"\npool_depth = 3\npool_arms = '
                                                          '["global-index"]'))
    assert main(["qrels", "pool", str(q), "--docs", str(d)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("in the top 3 of 1 arm(s)")
    # an adaptive strategy names the one page each query's judgments call for next, and the stopping estimate
    assert main(["qrels", "pool", str(q), "--docs", str(d), "--arms", "keyword,global-index", "--strategy",
                 "maxmean(k=5)"]) == 0
    out = capsys.readouterr().out
    assert "the next one per query by maxmean(k=5)" in out and "stopping estimate over" in out
    assert main(["qrels", "pool", str(q), "--docs", str(d), "--strategy", "maxmean(k=0)"]) == 2


@pytest.fixture(scope="module")
def shipped_corpus(request, real_env):
    """name -> (page texts, corpus-wide BM25 ranker) of a real corpus: made once for every shipped set
    checked on it (the session's fetched and ingested corpus)."""
    from evalkit import validity

    made: dict = {}

    def get(name):
        if name not in made:
            c, store = request.getfixturevalue(name)
            made[name] = store.corpus_texts(c), validity.bm25_ranker(c, store)
        return made[name]
    return get


@pytest.mark.slow
@pytest.mark.parametrize("name, file, minimum", [
    ("latex", "latex.toml", {c: 30 for c in qrels.CLASSES}),
    ("rmanuals", "rmanuals.toml", {c: 10 for c in qrels.CLASSES}),
    ("latex", "held-out/latex.toml", {"abstain": 15}), ("rmanuals", "held-out/rmanuals.toml", {"abstain": 20}),
    *((c, f"held-out/{b}/{c}.toml", {"abstain": 25}) for b in ("blind", "blind3", "blind4")
      for c in ("latex", "rmanuals"))])
def test_shipped_query_sets_pass_strict_checks(shipped_corpus, name, file, minimum):
    """The shipped sets, held-out abstain sets included, pass every strict check, the class-validity ones
    (traps trap, abstain kinds and mix, wording) included; warnings (a needle sharing a phrase with its page)
    are allowed."""
    from evalkit import validity

    texts, ranker = shipped_corpus(name)
    qs = qrels.load(ROOT / "qrels" / file)
    assert qrels.check(qs, texts, strict=True) == []
    problems = validity.check(qs, texts, ranker)
    assert [p for p in problems if not p.warning] == []
    assert {c: len(v) for c, v in qs.by_class().items() if v} == {c: len(qs.by_class()[c]) for c in minimum}
    assert all(len(qs.by_class()[c]) >= n for c, n in minimum.items())
    assert all(j.evidence for q in qs.queries for j in q.relevant)
    assert all(q.distractor for q in qs.by_class()["trap"]) and all(q.kind for q in qs.by_class()["abstain"])
    assert qs.pool_depth == 10 and len(qs.pool_arms) == 7

@pytest.mark.parametrize("text, message", [
    ('[set]\nname = "../../outside"\n', r"\[set\] name '../../outside' holds a path separator"),
    ('[set]\ncorpus = ".."\n', r"\[set\] corpus '..' is '..', a folder"),
    ('[set]\nname = 3\n', r"\[set\] name 3 is not a non-empty string"),
    ("", r"judgments\[1\].doc '../a.pdf' holds a path separator"),
])
def test_names_that_become_paths_are_refused(tmp_path, text, message):
    """The set's name and corpus name folders (results/<corpus>-<name>, the corpus folder), and a judged
    document is a file in the corpus folder: none may lead outside."""
    doc = "../a.pdf" if not text else "a.pdf"
    with pytest.raises(QrelsError, match=message):
        _load(tmp_path, text + f'[[query]]\nid = "x"\nclass = "needle"\ntext = "t"\n'
                               f'judgments = [{{ doc = "{doc}", page = 1, gain = 1 }}]\n')


def test_strict_check_reports_pooled_pages_not_judged_and_a_bad_pool_record(tmp_path):
    text = ('[[query]]\nid = "q1"\nclass = "needle"\ntext = "walrus"\npooled = ["a.pdf#2", "b%23c.pdf#1"]\n'
            'judgments = [{ doc = "a.pdf", page = 2, gain = 3 }]\n')
    qs = qrels.parse(text.encode(), tmp_path / "s.toml")
    assert qs.pooled == {"q1": (("a.pdf", 2), ("b#c.pdf", 1))}
    [p] = [p for p in qrels.check(qs, None, strict=True) if p.field == "pooled"]
    assert "1 pooled page(s) not judged yet: b%23c.pdf#1" in str(p)
    assert not [p for p in qrels.check(qs, None) if p.field == "pooled"]  # only strict asks
    ungraded = qrels.parse(text.replace('judgments = [{ doc = "a.pdf", page = 2, gain = 3 }]\n', "").encode(),
                           tmp_path / "s.toml")  # not graded yet says so once, not page by page
    assert [p.field for p in qrels.check(ungraded, None, strict=True)] == ["judgments"]
    abstain = qrels.parse(text.replace('"needle"', '"abstain"').replace(
        'judgments = [{ doc = "a.pdf", page = 2, gain = 3 }]\n', "").encode(), tmp_path / "s.toml")
    assert [p.field for p in qrels.check(abstain, None, strict=True)] == ["pooled"]  # its pool is still to read
    with pytest.raises(qrels.QrelsError, match="query 'q1': field 'pooled' is not a list of page ids"):
        qrels.parse(text.replace('pooled = ["a.pdf#2", "b%23c.pdf#1"]', "pooled = 3").encode(), tmp_path / "s.toml")


def test_problems_several_queries_share_are_one_line_naming_them():
    problems = [qrels.Problem(f"q{i}", "judgments", "not graded yet", True) for i in range(10)]
    problems.insert(3, qrels.Problem("d4", "text", "described query shares 44%"))
    assert qrels.shown(problems) == [
        "q0, q1, q2, q3, q4, q5, q6, q7 … (10 queries): judgments: warning: not graded yet",
        "d4: text: described query shares 44%"]
    assert qrels.shown(problems[:1]) == ["q0: judgments: warning: not graded yet"]


def _many(n_per_class=5, same_text=()):
    from evalkit.records import Judgment, Query

    queries = []
    for cls in ("needle", "spread", "trap", "described", "abstain"):
        for i in range(n_per_class):
            qid = f"{cls[0]}{i}"
            text = "one need asked twice" if qid in same_text else f"{cls} question {i}"
            judged = () if cls == "abstain" else (Judgment("a.pdf", i + 1, 3),)
            queries.append(Query(qid, cls, text, judged))
    return qrels.QuerySet("set", "c", tuple(queries))


def test_a_described_querys_overlap_names_its_words_as_written():
    from evalkit.records import Judgment, Query

    q = Query("d1", "described", "which page says where walrus herds go", (Judgment("a.pdf", 1, 3),))
    assert qrels.described_overlap(q, {"a.pdf": ["Walrus herds migrate south."]}) == (0.5, ["herds", "walrus"])


def test_the_most_shared_page_is_counted_per_page_first_on_a_tie():
    text = "where do walrus herds go"  # content words: walrus, herds
    pages = [("a.pdf#1", "a walrus"), ("a.pdf#2", "herds of seals"), ("b.pdf#1", "the herds")]
    assert qrels.most_shared(text, pages) == (0.5, "a.pdf#1", ["walrus"])  # not 100% over the union
    assert qrels.most_shared(text, [("a.pdf#1", "seals"), ("b.pdf#1", "Walrus herds")]) == (1.0, "b.pdf#1",
                                                                                          ["herds", "walrus"])
    assert qrels.most_shared(text, [("a.pdf#1", "seals")]) == qrels.most_shared("the of", pages) == (0.0, "", [])


def test_split_is_two_disjoint_halves_stratified_by_class_and_seeded():
    qs = _many()
    a, b = qrels.split(qs, seed=3)
    ids_a, ids_b = [q.id for q in a.queries], [q.id for q in b.queries]
    assert not set(ids_a) & set(ids_b) and sorted(ids_a + ids_b) == sorted(q.id for q in qs.queries)
    assert abs(len(ids_a) - len(ids_b)) <= 1
    for cls, mine in a.by_class().items():  # 5 a class: 2 or 3 in each half
        assert len(mine) in (2, 3) and len(mine) + len(b.by_class()[cls]) == 5
    assert (a.name, b.name) == ("set-a", "set-b") and a.queries[0].judgments == qs[a.queries[0].id].judgments
    again = qrels.split(qrels.QuerySet("set", "c", tuple(reversed(qs.queries))), seed=3)  # file order plays no part
    assert [q.id for q in again[0].queries] == list(reversed(ids_a))
    assert [q.id for q in qrels.split(qs, seed=4)[0].queries] != ids_a


def test_split_keeps_queries_of_the_same_text_together():
    qs = _many(same_text=("n1", "n2"))
    for seed in range(10):
        a, _ = qrels.split(qs, seed)
        assert ("n1" in {q.id for q in a.queries}) == ("n2" in {q.id for q in a.queries})


def test_cli_split_writes_two_files_and_never_overwrites(tmp_path, capsys):
    src = tmp_path / "set.toml"
    src.write_text(qrels.to_toml(_many()))
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["qrels", "split", str(src), "--out", str(a), str(b)]) == 0
    assert len(qrels.load(a).queries) + len(qrels.load(b).queries) == 25
    before = a.read_bytes()
    assert main(["qrels", "split", str(src), "--out", str(a), str(tmp_path / "c.toml")]) == 2
    assert "a.toml: already exists" in capsys.readouterr().err
    assert a.read_bytes() == before and not (tmp_path / "c.toml").exists()


SHIPPED = sorted(p for p in (ROOT / "qrels").rglob("*.toml") if "drafts" not in p.parts)  # drafts: not sets


@pytest.mark.slow
@pytest.mark.parametrize("bom, newline", [(True, "\r\n"), (True, "\n"), (False, "\r\n")])
def test_a_query_file_with_a_byte_order_mark_or_crlf_is_the_same_set(tmp_path, bom, newline):
    """What editors on Windows write (UTF-8 with a BOM, CRLF) loads as the same set, digest included."""
    for path in SHIPPED:
        copy = tmp_path / path.name
        copy.write_bytes(b"\xef\xbb\xbf" * bom + path.read_bytes().replace(b"\n", newline.encode()))
        original, windows = qrels.load(path), qrels.load(copy)
        assert (windows, windows.gains, windows.pooled) == (original, original.gains, original.pooled), path
        assert windows.digest == original.digest


def test_decode_gives_the_layout_a_writer_keeps():
    for layout in (qrels.Layout(), qrels.Layout(True, "\r\n"), qrels.Layout(False, "\r\n"), qrels.Layout(True)):
        raw = layout.encode('[set]\nname = "x"\n')
        assert qrels.decode(raw, Path("x.toml")) == ('[set]\nname = "x"\n', layout)


@pytest.mark.parametrize("encoding, says", [
    ("utf-16", "not UTF-8 but UTF-16 or UTF-32"), ("utf-16-le", "not UTF-8 but UTF-16 or UTF-32"),
    ("utf-32", "not UTF-8 but UTF-16 or UTF-32"), ("latin-1", "not UTF-8 (byte 0xe9 on line 3; Latin-1")])
def test_a_query_file_in_another_encoding_is_one_line_naming_the_file(isolated, capsys, encoding, says):
    d = isolated / "docs"
    d.mkdir()
    for name, texts in PAGES.items():
        make_pdf(d / name, texts)
    q = isolated / "q.toml"
    q.write_bytes(GOOD.replace('name = "tiny"', 'name = "tiny café"').encode(encoding))  # line 3
    with pytest.raises(QrelsError, match=f"^{q}: {re.escape(says)}"):
        qrels.load(q)
    assert main(["qrels", "check", str(q), "--docs", str(d)]) == 2
    one_line_error(capsys, f"evalkit: {q}: {says}")


def test_a_bom_crlf_copy_of_a_shipped_set_passes_qrels_check(rmanuals, real_env, monkeypatch, tmp_path, capsys):
    """On the real corpus, fetched and read by its fixture (under its build lock: never by two workers)."""
    for k, v in real_env.items():
        monkeypatch.setenv(k, v)
    copy = tmp_path / "rmanuals.toml"
    copy.write_bytes(b"\xef\xbb\xbf" + (ROOT / "qrels" / "rmanuals.toml").read_bytes().replace(b"\n", b"\r\n"))
    assert main(["qrels", "check", str(copy), "--strict"]) == 0, capsys.readouterr()


def test_a_page_graded_under_an_earlier_wording_counts_but_strict_wants_it_read_again(tmp_path):
    qs = _load(tmp_path, '[[query]]\nid = "x"\nclass = "needle"\ntext = "new words"\njudgments = [\n'
                         '  { doc = "a.pdf", page = 3, gain = 2, evidence = "e", reread = "old words" },\n'
                         '  { doc = "a.pdf", page = 4, gain = 0 }]')
    assert qs.reread == {"x": (("a.pdf", 3),)} and qs["x"].relevant
    [p] = [p for p in qrels.check(qs, None, strict=True) if p.field == "judgments"]
    assert "1 page(s) graded under an earlier wording, to read again under this one: a.pdf#3" in p.message
    assert not [p for p in qrels.check(qs, None) if p.field == "judgments"]


def test_a_page_found_by_search_outside_the_pool_is_read_as_such(tmp_path):
    text = GOOD.replace('gain = 3, evidence = "sets page margins" }]',
                        'gain = 3, evidence = "sets page margins", found_by = "search:keyword" }]', 1)
    qs = _load(tmp_path, text)
    assert qs.found == {"n1": {("a.pdf", 1): "search:keyword"}} and qrels.check(qs, PAGES, strict=True) == []

"""The class-validity rules of ``qrels check --strict``, on a tiny real corpus (PDFs, page store, FTS5 BM25)."""
import pytest

from evalkit import corpora, qrels, validity
from evalkit.cli import main
from evalkit.pages import PageStore
from evalkit.records import Judgment, Query

from .conftest import make_pdf

PAGES = {
    "ledger.pdf": ["The ledger package prints a running balance column beside each entry. "
                   "Load it with the totals option.",
                   "Version history of the ledger package."],
    "bank.pdf": ["Running balance, running balance: a bank statement shows the running balance of an account "
                 "after each entry."],
    "garden.pdf": ["Planting tomatoes: water the tomatoes each morning and stake the plants when they grow tall.",
                   "Roses need pruning in early spring."],
}

VALID = '''
[set]
name = "tiny"
pool_depth = 10
pool_arms = ["keyword", "global-index"]
[[query]]
id = "n1"
class = "needle"
text = "Which option loads totals in ledger?"
judgments = [{ doc = "ledger.pdf", page = 1, gain = 3, evidence = "with the totals option" },
             { doc = "ledger.pdf", page = 2, gain = 0 }]
[[query]]
id = "t1"
class = "trap"
distractor = "bank.pdf"
text = "show a running balance for each entry"
judgments = [{ doc = "ledger.pdf", page = 1, gain = 3, evidence = "running balance column" }]
[[query]]
id = "d1"
class = "described"
text = "my vegetables keep falling over as they get taller"
judgments = [{ doc = "garden.pdf", page = 1, gain = 3, evidence = "stake the plants" }]
[[query]]
id = "a1"
class = "abstain"
kind = "near-miss"
text = "pruning tomatoes in early spring"
[[query]]
id = "a2"
class = "abstain"
kind = "uncovered-need"
text = "water roses each morning"
[[query]]
id = "a3"
class = "abstain"
kind = "absent-name"
text = "How do I use the fancyledger package?"
'''


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(pages, ranker) of the tiny corpus: real PDFs in a real page store, ranked by the real FTS5 index."""
    d = tmp_path_factory.mktemp("docs")
    for name, texts in PAGES.items():
        make_pdf(d / name, texts)
    store = PageStore(tmp_path_factory.mktemp("cache") / "evalkit.sqlite")
    c = store.ingest(corpora.from_dir(d, "tiny"), progress=False).corpus
    yield store.corpus_texts(c), validity.bm25_ranker(c, store)
    store.close()


def _check(tmp_path, tiny, text):
    p = tmp_path / "q.toml"
    p.write_text(text)
    qs = qrels.load(p)
    pages, rank = tiny
    return qrels.check(qs, pages, strict=True) + validity.check(qs, pages, rank)


def test_a_valid_set_passes(tmp_path, tiny):
    assert _check(tmp_path, tiny, VALID) == []


@pytest.mark.parametrize("old, new, query, field, message, warning", [
    # traps: a named distractor that BM25 ranks above every gold page
    ('distractor = "bank.pdf"\n', "", "t1", "distractor", "missing: a trap names its distractor", False),
    ('distractor = "bank.pdf"', 'distractor = "garden.pdf"', "t1", "distractor",
     "not a trap: corpus-wide BM25 ranks garden.pdf at best nowhere, the best gold page (ledger.pdf#1) at 2", False),
    # abstain: kinds, and a mix that a name check cannot pass
    ('kind = "near-miss"\n', "", "a1", "kind", "missing: an abstain query says why nothing answers", False),
    ('text = "water roses each morning"', 'text = "water roses with fertilizer"', "a2", "kind",
     "uncovered-need, but fertilizer occur(s) nowhere in the corpus", False),
    ('kind = "uncovered-need"', 'kind = "absent-name"', "[set]", "abstain",
     "1 of 3 abstain queries are uncovered-need or near-miss with every content word found in the corpus; "
     "at least half (2) must be", False),
    ('text = "pruning tomatoes in early spring"', 'text = "pruning tomatoes in early autumn"', "[set]", "abstain",
     "1 of 3 abstain queries", False),
    ('kind = "absent-name"', 'kind = "off-domain"', None, None, None, None),  # 1 off-domain: fine
    # wording: a lifted run is a warning on a needle, an error on a described query
    ('text = "Which option loads totals in ledger?"', 'text = "Which package prints a running balance column?"',
     "n1", "text", "shares the run 'package prints a running balance column' with judged page ledger.pdf#1", True),
    ('text = "my vegetables keep falling over as they get taller"',
     'text = "I water the tomatoes each morning but they fall over"', "d1", "text",
     "shares the run 'water the tomatoes each morning' with judged page garden.pdf#1", False),
    ('text = "my vegetables keep falling over as they get taller"', 'text = "tall tomatoes need a stake"',
     "d1", "text", "keyword-easy: corpus-wide BM25 ranks gold page garden.pdf#1 at 1", False),
    # the pool recorded in [set] names arms that exist
    ('pool_arms = ["keyword", "global-index"]', 'pool_arms = ["keyword", "nosucharm"]', "[set]", "pool_arms",
     "unknown arm 'nosucharm'", False),
    # ... a notebook function's name (ek.arm) is a record of what pooled, valid in any process (issue 33)
    ('pool_arms = ["keyword", "global-index"]', 'pool_arms = ["keyword", "lc-bm25-1000@45e5b792"]', None, None,
     None, None),
    ('pool_arms = ["keyword", "global-index"]', 'pool_arms = ["keyword", "lc-bm25@45e5b792(k)"]', "[set]",
     "pool_arms", "parameter 'k' has no '='", False),
])
def test_every_validity_rule_has_a_failing_example(tmp_path, tiny, old, new, query, field, message, warning):
    assert old in VALID
    problems = _check(tmp_path, tiny, VALID.replace(old, new, 1))
    if query is None:
        assert problems == []
        return
    hit = [p for p in problems if (p.query, p.field) == (query, field) and message in p.message]
    assert hit and hit[0].warning is warning, problems


def test_a_pooled_notebook_function_checks_alike_registered_or_not(tmp_path, tiny, isolated, monkeypatch):
    """The notebook (its retriever registered) and the shell (not) give the same check of a set it pooled."""
    from evalkit import arms
    from evalkit.arms import function

    monkeypatch.setattr(arms, "_LOCAL", {})
    spec = function.register(lambda query, k: [], name="lc-bm25-1000")
    text = VALID.replace('pool_arms = ["keyword", "global-index"]', f'pool_arms = ["keyword", "{spec}"]')
    registered = _check(tmp_path, tiny, text)
    monkeypatch.setattr(arms, "_LOCAL", {})
    assert _check(tmp_path, tiny, text) == registered == []
    d = isolated / "docs"
    d.mkdir()
    for name, texts in PAGES.items():
        make_pdf(d / name, texts)
    (isolated / "q.toml").write_text(text)
    assert main(["qrels", "check", str(isolated / "q.toml"), "--docs", str(d), "--strict"]) == 0


def test_at_most_two_off_domain_abstain_queries(tmp_path, tiny):
    def off(n):
        return "".join(f'[[query]]\nid = "o{i}"\nclass = "abstain"\nkind = "off-domain"\ntext = "water roses"\n'
                       for i in range(n))
    message = ("[set]: abstain: 3 off-domain abstain queries (o0, o1, o2); at most 2: they are refusable without "
               "reading the corpus")
    assert message in [str(p) for p in _check(tmp_path, tiny, VALID + off(3))]
    assert not any("off-domain" in p.message for p in _check(tmp_path, tiny, VALID + off(1)))


def test_trap_ranks_name_the_best_page_of_each_side(tiny):
    pages, rank = tiny
    q = Query("t", "trap", "show a running balance for each entry", (Judgment("ledger.pdf", 1, 3),),
              distractor="bank.pdf")
    t = validity.trap_ranks(q, rank(q.text))
    assert (t.distractor_rank, t.distractor_page, t.gold_rank, t.gold_page, t.traps) == (1, "bank.pdf#1", 2,
                                                                                         "ledger.pdf#1", True)
    assert str(t) == "t: distractor bank.pdf best at 1 (bank.pdf#1), gold best at 2 (ledger.pdf#1): traps"


def test_gold_pages_fall_back_to_relevant_pages():
    q = Query("q", "trap", "?", (Judgment("a.pdf", 1, 1), Judgment("b.pdf", 2, 0)))
    assert validity.gold_pages(q) == {("a.pdf", 1)}
    q = Query("q", "trap", "?", (Judgment("a.pdf", 1, 1), Judgment("c.pdf", 3, 2)))
    assert validity.gold_pages(q) == {("c.pdf", 3)}


def test_unknown_words_are_surface_words_with_plurals_folded(tiny):
    pages, _ = tiny
    vocab = validity.vocabulary(pages)
    unknown = lambda text: validity.unknown_words(Query("a", "abstain", text), vocab)  # noqa: E731
    assert unknown("TOMATOES and a rose in Spring") == set()  # case and a plural s are folded
    assert unknown("prune tomatoes") == {"prune"}  # "pruning" is on a page, but its stem is not a surface match
    assert unknown("How do I use the fancyledger package?") == {"fancyledger"}


def test_shared_runs_need_four_words_and_two_content_words():
    page = "At the end of each chapter, the ledger package prints a running balance column."
    assert validity.shared_runs("what happens at the end of the book", page) == []  # one content word ("end")
    assert validity.shared_runs("ledger package prints", page) == []  # three words
    assert validity.shared_runs("the ledger package prints a running balance!", page) == [
        "the ledger package prints a running balance"]
    assert validity.shared_runs("ledger package prints totals and a running balance column", page) == [
        "a running balance column"]  # "ledger package prints" is three words


def test_cli_strict_check_warns_without_failing_and_verbose_lists_ranks(isolated, capsys):
    d = isolated / "docs"
    d.mkdir()
    for name, texts in PAGES.items():
        make_pdf(d / name, texts)
    q = isolated / "q.toml"
    q.write_text(VALID.replace('text = "Which option loads totals in ledger?"',
                               'text = "Which package prints a running balance column?"'))
    assert main(["qrels", "check", str(q), "--docs", str(d), "--strict", "-v"]) == 0
    out = capsys.readouterr().out
    assert "n1: text: warning: shares the run 'package prints a running balance column'" in out
    assert "  trap t1: distractor bank.pdf best at 1 (bank.pdf#1), gold best at 2 (ledger.pdf#1): traps" in out
    assert "  abstain a3 [absent-name]: not in the corpus: fancyledger" in out
    assert "  abstain a2 [uncovered-need]: every content word is in the corpus" in out
    assert "  described d1: overlap" in out and "BM25 ranks its best gold page at nowhere" in out
    assert out.rstrip().endswith("(pooled from the top 10 of keyword, global-index), 0 problem(s), 1 warning(s)")
    q.write_text(VALID.replace('distractor = "bank.pdf"', 'distractor = "garden.pdf"'))
    assert main(["qrels", "check", str(q), "--docs", str(d)]) == 0  # validity rules are --strict only
    assert main(["qrels", "check", str(q), "--docs", str(d), "--strict"]) == 1
    assert "t1: distractor: not a trap" in capsys.readouterr().out

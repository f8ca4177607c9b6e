import pytest

from evalkit import arms, corpus
from evalkit.arms.lexical import match_expression, query_terms
from evalkit.pages import PageStore

from ..conftest import make_pdf

LEXICAL = ["keyword", "keyword(idf_scope=corpus)", "global-index", "score-merge"]
HOSTILE = ['"', '""unbalanced "quote', "NEAR(", "NEAR(a b", "*", "-", "- minus -", "a AND OR NOT", "col:term",
           "^start", "'; DROP TABLE pages; --", "ünïcödé 数学 ﬁligature", "", "   ", "(((", "a+b=c", "\\section*{x}"]


def test_query_terms_drop_stop_words_and_quote_every_term():
    assert query_terms("How do I change the margins?") == ["change", "margins"]
    assert query_terms("the of and") == ["the", "of", "and"]  # nothing but stop words: keep them
    assert match_expression(["a", 'b"c']) == '"a" OR "b""c"'


@pytest.mark.parametrize("spec", LEXICAL)
@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(small, spec, query):
    c, store = small
    result = arms.make(spec, c, store).search(query, 10)
    assert not result.refused and len(result.hits) <= 10


def _tie_corpus(tmp_path, names: dict[str, str]):
    folder = tmp_path / "tie"
    folder.mkdir(parents=True)
    texts = {"common": "page margins are set with the geometry package",
             "rare": "page margins and also marginparwidth for notes in the margin",
             "other": "fonts and colours have nothing to do with this"}
    for key, name in names.items():
        make_pdf(folder / name, [texts[key], "filler page about tables"])
    store = PageStore(tmp_path / "s.sqlite")
    return store.ingest(corpus.from_dir(folder), progress=False).corpus, store


def test_content_tiebreak_decides_what_a_filename_order_would(tmp_path):
    # both documents' best pages tie at 1/61; only "z-rare.pdf" holds the rarer query word
    c, store = _tie_corpus(tmp_path, {"rare": "z-rare.pdf", "common": "a-common.pdf", "other": "m-other.pdf"})
    hits = arms.make("keyword", c, store).search("margins marginparwidth", 10).hits
    assert [h.doc for h in hits[:2]] == ["z-rare.pdf", "a-common.pdf"]
    assert hits[0].score == hits[1].score == 1 / 61
    # swap the names: the same content wins
    c2, store2 = _tie_corpus(tmp_path / "x", {"rare": "a-rare.pdf", "common": "z-common.pdf", "other": "m-other.pdf"})
    assert [h.doc for h in arms.make("keyword", c2, store2).search("margins marginparwidth", 10).hits[:2]] == [
        "a-rare.pdf", "z-common.pdf"]


@pytest.mark.parametrize("spec", LEXICAL)
def test_prefix_property_and_strictly_ordered_ties(small, spec):
    c, store = small
    arm = arms.make(spec, c, store)
    for q in ["rules in tables", "line spacing of captions", "include pages of an external PDF", "citation"]:
        top20 = arm.search(q, 20).hits
        for k in (1, 3, 10):
            assert arm.search(q, k).hits == top20[:k]
        assert len({(h.doc, h.page) for h in top20}) == len(top20)
        assert [h.score for h in top20] == sorted((h.score for h in top20), reverse=True)


def test_score_merge_and_keyword_disagree_on_real_manuals(small):
    """The trap in one assertion: merging raw per-document BM25 is a different ranking from fusing ranks."""
    c, store = small
    q = "space between rows of a table"
    kw = [(h.doc, h.page) for h in arms.make("keyword", c, store).search(q, 10).hits]
    sm = [(h.doc, h.page) for h in arms.make("score-merge", c, store).search(q, 10).hits]
    assert kw != sm and set(kw) & set(sm)


def test_idf_scope_changes_the_statistics(small):
    c, store = small
    q = "float placement here"
    doc = arms.make("keyword", c, store).per_document(query_terms(q), 5)
    cor = arms.make("keyword(idf_scope=corpus)", c, store).per_document(query_terms(q), 5)
    assert doc.keys() == cor.keys()
    assert any(doc[d][0][1] != cor[d][0][1] for d in doc)  # same pages may rank, scores differ


def test_page_tiebreak_orders_a_band_by_the_page_itself(tmp_path):
    """Both documents hold both words; only "together.pdf" holds them on one page."""
    folder = tmp_path / "pages"
    folder.mkdir()
    make_pdf(folder / "split.pdf", ["margins are wide", "marginparwidth is narrow"])
    make_pdf(folder / "together.pdf", ["margins and marginparwidth together", "nothing"])
    store = PageStore(tmp_path / "s.sqlite")
    c = store.ingest(corpus.from_dir(folder), progress=False).corpus
    q = "margins marginparwidth"
    by_page = arms.make("keyword(tiebreak=page)", c, store)
    assert by_page.label == "keyword(tiebreak=page)"
    assert [(h.doc, h.page) for h in by_page.search(q, 1).hits] == [("together.pdf", 1)]
    # the document-level tie-break sees two documents with both words: the sha256 decides, whichever it is
    by_doc = arms.make("keyword", c, store).search(q, 10).hits
    first = min(c.documents, key=lambda d: d.sha256).name
    assert by_doc[0].doc == first and by_doc[0].score == by_doc[1].score

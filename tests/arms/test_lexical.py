import numpy as np
import pytest

from evalkit import arms, corpora
from evalkit.arms.lexical import (GlobalIndex, Tokenizer, build_postings, ensure_global_index, fts5_idf, idf_table,
                                  match_expression, postings_table, query_terms, run_lengths, settings)
from evalkit.pages import PageStore

from ..conftest import make_pdf
from .test_keyword import reference_search

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
    return store.ingest(corpora.from_dir(folder), progress=False).corpus, store


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
    c = store.ingest(corpora.from_dir(folder), progress=False).corpus
    q = "margins marginparwidth"
    by_page = arms.make("keyword(tiebreak=page)", c, store)
    assert by_page.label == "keyword(tiebreak=page)"
    assert [(h.doc, h.page) for h in by_page.search(q, 1).hits] == [("together.pdf", 1)]
    # the document-level tie-break sees two documents with both words: the sha256 decides, whichever it is
    by_doc = arms.make("keyword", c, store).search(q, 10).hits
    first = min(c.documents, key=lambda d: d.sha256).name
    assert by_doc[0].doc == first and by_doc[0].score == by_doc[1].score


def test_query_words_become_the_index_terms_fts5_makes_of_them():
    # stemmed and folded as the index is; a word of Python's pattern that FTS5 splits is a phrase to FTS5
    # (U+19B0, a New Tai Lue vowel sign: a letter to Python's Unicode tables, a separator to SQLite's)
    assert Tokenizer()(["tables", "hyphenation", "Ünïcödé", "数学", "ab\u19b0cd", "\u19b0"]) == [
        ("tabl",), ("hyphen",), ("unicod",), ("数学",), ("ab", "cd"), ()]


def test_run_lengths_by_hand():
    # term 0 occurs twice on row 1 and once on row 4; term 1 twice on row 2; term 2 once on row 1
    term, rows, tf = run_lengths(np.array([3, 2, 1]), np.array([1, 1, 4, 2, 2, 1]))
    assert term.tolist() == [0, 0, 1, 2] and rows.tolist() == [1, 4, 2, 1] and tf.tolist() == [2, 1, 2, 1]


def test_idf_table_holds_fts5s_idf_for_every_count():
    rows = np.array([0, 1, 5, 2])
    table, start = idf_table(rows)
    for d, n in enumerate(rows):
        for hits in range(n + 1):
            assert table[start[d] + hits] == fts5_idf(np.array([float(n)]), np.array([float(hits)]))[0]
    assert len(table) == (rows + 1).sum()


def _postings(store, name):
    return {t: (np.frombuffer(r, "<i4").tolist(), np.frombuffer(f, "<i4").tolist())
            for t, r, f in store.db.execute(f"SELECT term, rows, tf FROM {postings_table(name)}")}


def _vocab_postings(store, name):
    """The reference: every occurrence from fts5vocab's 'instance' table, counted per (term, row) by SQL."""
    store.db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.ref_vocab USING fts5vocab(main, {name}, instance)")
    out = {}
    for term, row, n in store.db.execute("SELECT term, doc, count(*) FROM temp.ref_vocab GROUP BY term, doc ORDER BY "
                                         "term, doc"):
        out.setdefault(term, ([], []))
        out[term][0].append(row)
        out[term][1].append(n)
    store.db.execute("DROP TABLE temp.ref_vocab")
    return out


def test_postings_hold_fts5s_counts_on_real_manuals(small):
    c, store = small
    name = ensure_global_index(store, c)
    assert _postings(store, name) == _vocab_postings(store, name)


def _tiny(tmp_path, pages: dict[str, list[str]]):
    folder = tmp_path / "tiny"
    folder.mkdir()
    for name, texts in pages.items():
        make_pdf(folder / name, texts)
    store = PageStore(tmp_path / "s.sqlite")
    return store.ingest(corpora.from_dir(folder), progress=False).corpus, store


@pytest.mark.parametrize("limit", [1, 3, 10**6])
def test_postings_are_the_same_however_the_occurrences_are_chunked(tmp_path, limit):
    c, store = _tiny(tmp_path, {"a.pdf": ["tables and more tables", "rules in tables"], "b.pdf": ["a rule", "x"]})
    name = ensure_global_index(store, c)
    with store.db:
        store.db.execute("BEGIN")
        store.db.execute(f"DROP TABLE {postings_table(name)}")
        build_postings(store.db, name, limit)
    assert _postings(store, name) == _vocab_postings(store, name)
    assert _postings(store, name)["tabl"] == ([1, 2], [2, 1])


def test_an_index_built_without_postings_is_rebuilt(tmp_path):
    c, store = _tiny(tmp_path, {"a.pdf": ["margins"], "b.pdf": ["fonts"]})
    name = ensure_global_index(store, c)
    store.db.execute(f"DROP TABLE {postings_table(name)}")  # as an index of an earlier evalkit had it
    old_settings = settings(store, "document")  # extractor and tokenizer: what a global index recorded then
    store.db.execute("UPDATE fts_indexes SET settings=? WHERE name=?", (old_settings, name))
    assert [(d, p) for d, p, _ in GlobalIndex(store, c).bm25(["margins"])] == [("a.pdf", 1)]
    assert _postings(store, name) == _vocab_postings(store, name)


@pytest.mark.parametrize("spec", ["keyword", "keyword(idf_scope=corpus)", "global-index", "score-merge"])
def test_a_word_fts5_reads_as_a_phrase_matches_as_fts5_matches_it(tmp_path, spec):
    # "ab<U+19B0>cd" is the phrase "ab cd": only pages with the two words adjacent match, as often as they are
    c, store = _tiny(tmp_path, {"a.pdf": ["ab cd and ab cd again", "ab then cd", "cd ab"],
                                "b.pdf": ["one ab cd here", "tables"]})
    arm = arms.make(spec, c, store)
    query = "ab\u19b0cd tables"
    hits = arm.search(query, 10).hits
    assert [(h.doc, h.page, h.score) for h in hits] == reference_search(arm, query, 10)
    assert {(h.doc, h.page) for h in hits} == {("a.pdf", 1), ("b.pdf", 1), ("b.pdf", 2)}


def test_a_phrase_is_read_while_another_process_changes_the_caches_schema(tmp_path):
    # Another process (a shell building an index beside a notebook) commits a schema change at the moment
    # FTS5 connects the table, after the statement read the schema: without one read snapshot around the
    # query SQLite fails it ("vtable constructor failed" or "database schema has changed", SQLITE_SCHEMA).
    import itertools
    import sqlite3

    c, store = _tiny(tmp_path, {"a.pdf": ["ab cd and ab cd again"], "b.pdf": ["tables"]})
    index = GlobalIndex(store, c)
    other = sqlite3.connect(store.path, isolation_level=None, timeout=60)
    n = itertools.count()

    def meanwhile(action, table, *_):
        if action == sqlite3.SQLITE_READ and table == f"{index.table}_config":  # FTS5 connecting the table
            other.execute(f"CREATE TABLE other_{next(n)}(x)")
        return sqlite3.SQLITE_OK

    fresh = PageStore(store.path)  # a connection that has not connected the table yet
    index.db = fresh.db
    fresh.db.set_authorizer(meanwhile)
    rows, tf = index._phrase("ab\u19b0cd")
    fresh.db.set_authorizer(None)
    assert next(n) > 0, "the schema never changed while FTS5 connected the table: the test tests nothing"
    assert rows.tolist() == [1] and tf.tolist() == [2.0]
    assert not fresh.db.in_transaction
    other.close()
    fresh.close()
    store.close()

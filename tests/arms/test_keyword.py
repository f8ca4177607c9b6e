"""The lexical arms compute BM25 in NumPy from the corpus-wide index's postings; these tests hold them to
what FTS5 itself gives: one FTS5 table per document (the keyword arm's former implementation, kept here
as the reference) and bm25() of the corpus-wide table."""
import math
from collections import defaultdict

import pytest

from evalkit import arms, qrels
from evalkit.arms.lexical import ensure_document_indexes, match_expression, query_terms, snapshot
from evalkit.fusion import fuse

from ..conftest import ROOT

VARIANTS = ["keyword", "keyword(idf_scope=corpus)", "keyword(tiebreak=page)",
            "keyword(idf_scope=corpus,tiebreak=page)", "score-merge", "global-index"]


def reference_per_document(arm, terms: list[str], k: int) -> dict[str, list[tuple[int, float]]]:
    """One FTS5 query per document over its own table (idf_scope=doc), or the corpus-wide bm25() list
    split by document (idf_scope=corpus); each document's top k as (page, -bm25)."""
    db = arm.store.db  # read in one snapshot: the other test worker may be building indexes in the same cache
    if arm.params["idf_scope"] == "corpus":
        t = arm.global_index.table
        with snapshot(db):
            rows = db.execute(f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH ?",
                              (match_expression(terms),)).fetchall()
        out = defaultdict(list)
        for rowid, score in rows:
            out[arm.global_index.docs[arm.global_index.doc[rowid]]].append((int(arm.global_index.page[rowid]), -score))
        return {d: sorted(v, key=lambda ps: (-ps[1], ps[0]))[:k] for d, v in out.items()}
    out = {}
    tables = ensure_document_indexes(arm.store, arm.corpus)
    with snapshot(db):
        for doc, table in tables.items():
            rows = db.execute(f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? "
                              f"ORDER BY bm25({table}), rowid LIMIT {int(k)}", (match_expression(terms),)).fetchall()
            if rows:
                out[doc] = [(page, -score) for page, score in rows]
    return out


def reference_content_scores(arm, terms: list[str]):
    """The content tie-break from one set of (document, page) per term."""
    g, db = arm.global_index, arm.store.db
    pages_with = {}
    for t in terms:
        with snapshot(db):
            rows = db.execute(f"SELECT rowid FROM {g.table} WHERE {g.table} MATCH ?",
                              (match_expression([t]),)).fetchall()
        pages_with[t] = {(g.docs[g.doc[r]], int(g.page[r])) for (r,) in rows}
    docs_with = {t: {d for d, _ in ps} for t, ps in pages_with.items()}
    n = len(set().union(*docs_with.values())) if docs_with else 0
    docs, pages = defaultdict(float), defaultdict(float)
    for t, ps in pages_with.items():
        if ps:
            w = math.log(1 + n / len(docs_with[t]))
            for d in docs_with[t]:
                docs[d] += w
            for p in ps:
                pages[p] += w
    return dict(docs), dict(pages)


def reference_search(arm, query: str, k: int) -> list[tuple[str, int, float]]:
    terms = query_terms(query)
    if not terms:
        return []
    if arm.name == "global-index":
        g = arm.global_index
        with snapshot(arm.store.db) as db:
            rows = db.execute(f"SELECT rowid, bm25({g.table}) FROM {g.table} WHERE {g.table} MATCH ?",
                              (match_expression(terms),)).fetchall()
        sha = {d.name: d.sha256 for d in arm.corpus.documents}
        ranked = sorted(((score, g.docs[g.doc[r]], int(g.page[r])) for r, score in rows),
                        key=lambda r: (r[0], sha[r[1]], r[2]))
        return [(doc, page, -score) for score, doc, page in ranked[:k]]
    ranked = reference_per_document(arm, terms, k)
    if arm.name == "score-merge":
        merged = [(doc, page, score) for doc, pages in ranked.items() for page, score in pages]
        return sorted(merged, key=lambda h: (-h[2], arm.sha[h[0]], h[1]))[:k]
    content, by_page = reference_content_scores(arm, terms)
    by_page = by_page if arm.params["tiebreak"] == "page" else {}
    fused = fuse(([(doc, page) for page, _ in pages] for doc, pages in ranked.items()),
                 tiebreak=lambda dp: (-by_page.get(dp, 0.0), -content.get(dp[0], 0.0), arm.sha[dp[0]], dp[1]))
    return [(doc, page, score) for (doc, page), score in fused[:k]]


@pytest.mark.slow
@pytest.mark.parametrize("spec", VARIANTS)
@pytest.mark.parametrize("name, queries", [("small", "latex"), ("rmanuals", "rmanuals")])
def test_same_rankings_as_one_fts5_table_per_document(request, name, queries, spec):
    # identical hits, order and scores (to the bit) for every query of the real query sets (latex's asked of
    # ten of its manuals: one FTS5 query per document and query is the reference's cost), at k = 100 and
    # at k = 3 (fewer than the matching documents: only the best pages are fused)
    c, store = request.getfixturevalue(name)
    arm = arms.make(spec, c, store)
    for q in qrels.load(ROOT / "qrels" / f"{queries}.toml").queries:
        for k in (100, 3):
            assert [(h.doc, h.page, h.score) for h in arm.search(q.text, k).hits] == reference_search(arm, q.text,
                                                                                                      k), (q.id, k)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["latex", "rmanuals"])
def test_every_pages_per_document_score_is_fts5s_to_the_bit(request, name):
    c, store = request.getfixturevalue(name)
    arm = arms.make("keyword", c, store)
    for q in qrels.load(ROOT / "qrels" / f"{name}.toml").queries:
        terms = query_terms(q.text)
        assert arm.per_document(terms, 10**6) == reference_per_document(arm, terms, 10**6), q.id


def test_term_frequencies_are_fts5s_counts(latex):
    # reference: fts5vocab's 'instance' table lists every occurrence of every (stemmed) term
    c, store = latex
    g = arms.make("keyword", c, store).global_index
    store.db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, {g.table}, instance)")
    for word, stem in [("table", "tabl"), ("the", "the"), ("hyphenation", "hyphen"), ("colour", "colour"),
                       ("zzz", "zzz")]:
        with snapshot(store.db) as db:
            want = dict(db.execute("SELECT doc, count(*) FROM temp.vocab WHERE term=? GROUP BY doc", (stem,)))
        assert want or word == "zzz"
        m = g.matches((word,))
        assert dict(zip(m.term_rows[0].tolist(), m.term_tf[0].tolist(), strict=True)) == want

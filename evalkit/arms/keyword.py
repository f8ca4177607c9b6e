"""keyword: SQLite FTS5 BM25 inside each document, fused across documents by Reciprocal Rank Fusion.

BM25 scores are not comparable across per-document indexes (each has its own IDF and length statistics);
ranks are. Each document ranks its own pages; a page at rank r in its document scores 1/(60 + r) (1-based).
Every document's best page therefore ties at 1/61, and so on down: the order inside each such band is
decided by content, then by document sha256, never by file name. ``tiebreak=doc`` (the default) orders a
band by the document's content score (:meth:`GlobalIndex.content_scores`: documents holding more of the
query's rarer words first); ``tiebreak=page`` orders it by the same score computed on the band's page
itself, then by the document's.

``idf_scope``: ``doc`` ranks pages with each document's own FTS5 statistics (the per-document tool);
``corpus`` ranks pages inside each document with corpus-wide statistics (one index, then the same fusion).
"""
from __future__ import annotations

from collections import defaultdict

from ..fusion import fuse
from ..records import Hit, Result
from . import Arm
from .lexical import GlobalIndex, ensure_document_indexes, match_expression, query_terms


class KeywordArm(Arm):
    name = "keyword"
    defaults = {"idf_scope": "doc", "tiebreak": "doc", "rrf_k": 60}
    choices = {"idf_scope": ("doc", "corpus"), "tiebreak": ("doc", "page")}
    minimum = {"rrf_k": 0}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.global_index = GlobalIndex(store, corpus)
        self.tables = ensure_document_indexes(store, corpus) if self.params["idf_scope"] == "doc" else {}
        self.sha = {d.name: d.sha256 for d in corpus.documents}

    def per_document(self, terms: list[str], k: int) -> dict[str, list[tuple[int, float]]]:
        """Each matching document's top ``k`` pages as (page, -bm25), best first, equal scores by page."""
        if self.params["idf_scope"] == "corpus":
            out: dict[str, list[tuple[int, float]]] = defaultdict(list)
            for doc, page, score in self.global_index.bm25(terms):
                out[doc].append((page, score))
            return {d: sorted(v, key=lambda ps: (-ps[1], ps[0]))[:k] for d, v in out.items()}
        expr = match_expression(terms)
        out = {}
        db = self.store.db
        matching = self.global_index.content_scores(terms)  # documents holding a query word (cached)
        for doc, table in self.tables.items():
            if doc not in matching:
                continue
            rows = db.execute(f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? "
                              f"ORDER BY bm25({table}), rowid LIMIT {int(k)}", (expr,)).fetchall()
            if rows:
                out[doc] = [(page, -score) for page, score in rows]
        return out

    def search(self, query: str, k: int) -> Result:
        terms = query_terms(query)
        if not terms:
            return Result()
        ranked = self.per_document(terms, k)
        content = self.global_index.content_scores(terms)
        by_page = self.global_index.page_content_scores(terms) if self.params["tiebreak"] == "page" else {}
        fused = fuse(([(doc, page) for page, _ in pages] for doc, pages in ranked.items()),
                     tiebreak=lambda dp: (-by_page.get(dp, 0.0), -content.get(dp[0], 0.0), self.sha[dp[0]], dp[1]),
                     k=self.params["rrf_k"])
        return Result(tuple(Hit(doc, page, score) for (doc, page), score in fused[:k]))

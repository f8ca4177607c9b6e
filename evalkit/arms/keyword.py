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

Speed: the per-document scores are those each document's own FTS5 table would give, but computed from the
corpus-wide index's postings in NumPy (:meth:`GlobalIndex.bm25_scores`), so a query costs one postings
read per query term however many documents there are, not one FTS5 query per document. The fusion is
vectorised too (:func:`fuse_disjoint` over the ranks the fused top k can reach, :func:`round_robin_depth`):
only the k hits become Python objects.
"""
from __future__ import annotations

import numpy as np

from ..fusion import fuse_disjoint, round_robin_depth
from ..records import Answer, Hit
from . import Arm
from .lexical import GlobalIndex, query_terms


class KeywordArm(Arm):
    name = "keyword"
    defaults = {"idf_scope": "doc", "tiebreak": "doc", "rrf_k": 60}
    choices = {"idf_scope": ("doc", "corpus"), "tiebreak": ("doc", "page")}
    minimum = {"rrf_k": 0}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.global_index = GlobalIndex(store, corpus)
        self.sha = {d.name: d.sha256 for d in corpus.documents}

    def _ranked(self, terms: list[str], k: int, fused: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each matching document's best pages as (row, score, rank in its document), grouped by document,
        best first in each, equal scores by page: its top ``k``, or (``fused``) as deep as the fused top k
        can reach (:func:`round_robin_depth`; with many documents, only each one's best page)."""
        index = self.global_index
        rows, score = index.bm25_scores(terms, self.params["idf_scope"])
        doc = index.doc[rows]
        start = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])  # rows come in rowid order: by document
        counts = np.diff(np.r_[start, len(rows)])
        depth = round_robin_depth(counts, k) if fused else k
        if depth == 1 and len(rows):  # a document's best page scores its best: sort only those, not every page
            keep = score == np.repeat(np.maximum.reduceat(score, start), counts)
            rows, score = rows[keep], score[keep]
        order = np.argsort(-score, kind="stable")  # best first; equal scores stay in rowid order, i.e. by page
        order = order[np.argsort(index.doc[rows[order]], kind="stable")]  # then grouped by document
        rows, score = rows[order], score[order]
        doc = index.doc[rows]
        first = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])  # where each document's pages start
        rank = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
        keep = rank < depth
        return rows[keep], score[keep], rank[keep]

    def per_document(self, terms: list[str], k: int) -> dict[str, list[tuple[int, float]]]:
        """Each matching document's top ``k`` pages as (page, -bm25), best first, equal scores by page."""
        index = self.global_index
        out: dict[str, list[tuple[int, float]]] = {}
        rows, score, _ = self._ranked(terms, k, fused=False)
        for d, page, s in zip(index.doc[rows].tolist(), index.page[rows].tolist(), score.tolist(), strict=True):
            out.setdefault(index.docs[d], []).append((page, s))
        return out

    def search(self, query: str, k: int) -> Answer:
        terms = query_terms(query)
        if not terms:
            return Answer()
        index = self.global_index
        rows, _, rank = self._ranked(terms, k, fused=True)
        doc = index.doc[rows]
        by_doc, by_row = index.content_weights(tuple(terms))
        by_page = -by_row[rows] if self.params["tiebreak"] == "page" else np.zeros(len(rows))
        order, fused = fuse_disjoint(rank, (by_page, -by_doc[doc], index.sha_rank[doc], index.page[rows]),
                                     self.params["rrf_k"], k)
        return Answer(tuple(Hit(index.docs[d], p, s) for d, p, s in
                            zip(doc[order].tolist(), index.page[rows[order]].tolist(), fused.tolist(), strict=True)))

"""The text signals of the judge's features, from what the arms already keep: the corpus-wide FTS5 index
(BM25 as the ``global-index`` arm computes it, IDF as FTS5 does) and the semantic arm's window vectors
(its cached vectors; the arm object is built as a reader of them, never run or registered as a judge)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import numpy as np

from ..corpora import Corpus
from ..pages import PageStore
from ..pooling import PageKey
from .lexical import GlobalIndex, fts5_idf, query_terms
from .semantic import SemanticArm, page_maxima


class CorpusSignals:
    """BM25, IDF mass and window cosines of a corpus's pages for a query (:data:`features.TEXT`)."""

    def __init__(self, corpus: Corpus, store: PageStore, progress: bool = False, vectors: bool = True):
        """``vectors=False``: no semantic signal (its columns are 0), for a corpus not embedded."""
        self.index = GlobalIndex(store, corpus)
        gi = self.index
        self.row = {(gi.docs[gi.doc[r]], int(gi.page[r])): r for r in range(1, len(gi.doc))}
        self.n_pages = {d.name: d.pages for d in corpus.documents}
        self.semantic = SemanticArm(corpus, store, progress=progress, query_threads=1) if vectors else None
        sem = self.semantic
        self.window = {} if sem is None else {(sem.doc_names[sem.page_doc_rank[i]], int(sem.page_number[i])): i
                                              for i in range(len(sem.page_number))}
        self.doc_rank = {} if sem is None else {name: i for i, name in enumerate(sem.doc_names)}
        model = [sem.spec.key, sem.label] if sem is not None else ["no vectors"]
        self.key = hashlib.sha256(json.dumps([gi.table, *model]).encode()).hexdigest()[:32]

    def pages(self, doc: str) -> int:
        return self.n_pages.get(doc, 1)

    def score(self, query: str, pages: Sequence[PageKey]) -> np.ndarray:
        terms = query_terms(query)
        gi = self.index
        rows = np.array([self.row.get(p, 0) for p in pages], dtype=np.int64)
        bm25, mass = np.zeros(len(pages)), np.zeros(len(pages))
        if terms:
            hit, score = gi.bm25_scores(terms)
            full = np.zeros(len(gi.doc))
            full[hit] = score
            bm25 = full[rows] * (rows > 0)
            m = gi.matches(tuple(terms))
            idf = fts5_idf(np.full(len(m.term_rows), float(gi.n_pages)), np.array([len(r) for r in m.term_rows], float))
            held = np.column_stack([np.isin(rows, r) for r in m.term_rows]) if m.term_rows else np.zeros((len(pages),
                                                                                                          0))
            mass = (held * idf).sum(axis=1) / max(float(idf.sum()), 1e-12)
        cos, cos_doc = self._cosines(query, pages)
        return np.column_stack([bm25, mass, np.full(len(pages), np.log1p(len(terms))), cos, cos_doc, cos_doc - cos])

    def _cosines(self, query: str, pages: Sequence[PageKey]) -> tuple[np.ndarray, np.ndarray]:
        sem = self.semantic
        if sem is None:
            return np.zeros(len(pages)), np.zeros(len(pages))
        best = page_maxima(sem.window_scores(query), sem.starts) if len(sem.starts) else np.zeros(0)
        per_doc = np.full(len(sem.doc_names), -1.0)
        np.maximum.at(per_doc, sem.page_doc_rank, best)
        idx = [self.window.get(p) for p in pages]
        cos = np.array([best[i] if i is not None else 0.0 for i in idx])
        doc = np.array([per_doc[self.doc_rank[d]] if d in self.doc_rank else 0.0 for d, _ in pages])
        return cos, doc

"""semantic: fastembed page embeddings cached in SQLite, exhaustive cosine in one NumPy product.

``model`` defaults to BAAI/bge-small-en-v1.5 (fetched from the hub by fastembed); the configured model
(:mod:`evalkit.config`: ``$EVALKIT_MODEL``/``$EVALKIT_MODEL_DIR`` or ``evalkit config model``) supplies a
model and a local folder when the spec does not (see docs/getting-started.md, "Offline model"). A page scores as the
cosine of its best window (see :mod:`evalkit.embeddings`); equal scores are ordered by document sha256, then page.
"""
from __future__ import annotations

import numpy as np

from .. import config
from ..embeddings import ModelSpec, ensure_vectors, load_vectors, loaded
from ..records import Answer, Hit
from . import Arm


class SemanticArm(Arm):
    name = "semantic"
    defaults = {"model": "BAAI/bge-small-en-v1.5", "model_dir": "", "max_tokens": 256, "window": 160,
                "batch_size": 16, "query_threads": 0}
    minimum = {"max_tokens": 1, "window": 0, "batch_size": 1, "query_threads": 0}
    # where the weights are and how fast they run: not what is measured
    unlabelled = frozenset({"model_dir", "batch_size", "query_threads"})

    def __init__(self, corpus, store, progress: bool = True, **params):
        configured = config.model()  # $EVALKIT_MODEL(_DIR) or the config file (evalkit config model)
        for key, setting in (("model", "name"), ("model_dir", "dir")):
            if key not in params and configured[setting]:
                params[key] = configured[setting]
        super().__init__(corpus, store, **params)
        p = self.params
        self.spec = ModelSpec(p["model"], p["model_dir"] or None, p["max_tokens"], p["window"], store.extractor)
        ensure_vectors(store, list(corpus.documents), self.spec,
                       lambda: loaded(self.spec, p["batch_size"]), progress=progress,
                       batch_size=p["batch_size"])
        # query_threads = 0: every core. An arm that runs this one beside other work (hybrid) asks for 1:
        # onnxruntime's idle worker threads spin, and would take the other core from that work.
        self.embedder = loaded(self.spec, threads=p["query_threads"] or None)
        self._last: tuple[str, np.ndarray] | None = None  # the last query's window scores (window_scores)
        self._load()

    def _load(self) -> None:
        by_sha = sorted(self.corpus.documents, key=lambda d: d.sha256)
        sha_rank = {d.name: i for i, d in enumerate(by_sha)}
        mats, docs, pages = [], [], []
        for d in by_sha:  # rows in content order: the float arithmetic cannot depend on file names
            p, v = load_vectors(self.store, d, self.spec.key)
            mats.append(v)
            docs.append(np.full(len(p), sha_rank[d.name]))
            pages.append(p)
        matrix = np.concatenate(mats) if mats else np.zeros((0, 1), np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = matrix / np.where(norms == 0, 1, norms)
        doc_of, page_of = np.concatenate(docs), np.concatenate(pages)
        new_page = np.r_[True, (doc_of[1:] != doc_of[:-1]) | (page_of[1:] != page_of[:-1])]
        self.starts = np.flatnonzero(new_page)            # first window of each page
        self.page_doc_rank = doc_of[self.starts]          # document's rank by sha256: the tie-break
        self.page_number = page_of[self.starts]
        self.doc_names = [d.name for d in by_sha]

    def window_scores(self, query: str) -> np.ndarray:
        """The query's cosine with every window of the corpus, rows in content order: what a page's score
        is the best of, and what an admission policy reads the query's spread over the corpus from. The last
        query's array is kept (read-only: callers share it), as a policy asks for it twice (its spread, its
        best page); kept in a plain attribute, not an lru_cache on the method, which would make a reference
        cycle that keeps every arm built and dropped (and its model) alive until a garbage collection."""
        if self._last is not None and self._last[0] == query:
            return self._last[1]
        if not len(self.starts):
            return np.zeros(0)
        q = self.embedder.query(query)
        q /= np.linalg.norm(q) or 1.0
        # einsum, not BLAS: one pass over the matrix on this thread, with no BLAS threads left spinning
        scores = np.einsum("ij,j->i", self.matrix, q)
        scores.flags.writeable = False
        self._last = (query, scores)
        return scores

    def search(self, query: str, k: int) -> Answer:
        if not query.strip() or not len(self.starts):
            return Answer()
        scores = page_maxima(self.window_scores(query), self.starts)
        order = np.lexsort((self.page_number, self.page_doc_rank, -scores))[:k]
        return Answer(tuple(Hit(self.doc_names[self.page_doc_rank[i]], int(self.page_number[i]), float(scores[i]))
                            for i in order))


def page_maxima(window_scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each page's score: the best of its windows (``starts``: the first window of each page, ascending)."""
    return np.maximum.reduceat(window_scores, starts)

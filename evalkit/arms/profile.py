"""Document priors: each document ranked against the query by how its opening reads (the profile) or by
what the whole of it is about (the centroid).

A manual says in plain words what it is for on its first page (title, abstract, "this package…"); a
question worded without the manual's vocabulary often matches that opening better than any one page of
the body. The profile is the document's first ``windows`` embedded windows in reading order (160 words
each: ``windows=1`` is page 1's opening, the head vector pdf-mcp's hybrid ranks documents by; more
windows reach the rest of the title page and the start of the table of contents), and a document scores as
its best profile window's cosine with the query. The vectors are the semantic arm's own, already cached:
a profile costs no embedding, and the query's window scores are the ones the semantic arm just computed.

The centroid is the mean of all of a document's window vectors, and a document scores as the query's cosine
with it. A focused manual (one package) has a centroid that says what it is for; a broad one (a language
reference) has a centroid that says little, so how much the prior helps depends on the corpus, and it is a
weight to tune. It needs no embedding either: with unit query and window vectors,
cos(q, Σw) = Σ(q·w) / |Σw|, the sum of the document's window scores over a norm computed once.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from . import ArmError
from .semantic import page_maxima


def run_starts(doc_of_window: np.ndarray) -> np.ndarray:
    """Where each document's run of rows starts (rows grouped by document)."""
    return np.flatnonzero(np.r_[True, doc_of_window[1:] != doc_of_window[:-1]])


def leading_windows(doc_of_window: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each document's first ``n`` windows (rows grouped by document, in reading order) and
    where each document's run of them starts: the arguments of ``np.maximum.reduceat``."""
    first = run_starts(doc_of_window)
    ends = np.r_[first[1:], len(doc_of_window)]
    counts = np.minimum(ends - first, n)
    rows = np.concatenate([np.arange(a, a + c) for a, c in zip(first, counts,
                                                               strict=True)]) if len(first) else np.zeros(0, int)
    return rows, np.cumsum(np.r_[0, counts[:-1]])


def best_pages(page_scores: np.ndarray, page_doc: np.ndarray, page_number: np.ndarray) -> np.ndarray:
    """Index of each document's best page (highest score, then lowest page number), documents in the order
    their pages come (grouped by document)."""
    order = np.lexsort((page_number, -page_scores, page_doc))
    return order[np.r_[True, page_doc[order][1:] != page_doc[order][:-1]]]


def document_runs(semantic) -> np.ndarray:
    """Each window's document (the semantic arm's rows are grouped by document, in reading order)."""
    return np.repeat(semantic.page_doc_rank, np.diff(np.r_[semantic.starts, len(semantic.matrix)]))


class DocumentPrior(ABC):
    """Scores of every document of a semantic arm for a query, and each document's best page."""

    def __init__(self, semantic):
        if not hasattr(semantic, "window_scores"):
            raise ArmError(f"a document prior needs a semantic arm's window vectors, not {semantic.label}")
        self.semantic = semantic
        self.docs = [semantic.doc_names[d] for d in np.unique(semantic.page_doc_rank)]

    @abstractmethod
    def by_document(self, windows: np.ndarray) -> np.ndarray:
        """One score per document (in ``self.docs`` order) from the query's window scores."""

    def scores(self, query: str) -> tuple[dict[str, float], dict[str, int]]:
        """Each document's score and its best page overall (its best window's page)."""
        s = self.semantic
        if not len(s.starts):
            return {}, {}
        windows = s.window_scores(query)
        best = best_pages(page_maxima(windows, s.starts), s.page_doc_rank, s.page_number)
        return (dict(zip(self.docs, self.by_document(windows).tolist(), strict=True)),
                {s.doc_names[s.page_doc_rank[i]]: int(s.page_number[i]) for i in best})


class DocumentProfile(DocumentPrior):
    """A document scores as its best window among its first ``windows`` (module docstring)."""

    def __init__(self, semantic, windows: int):
        super().__init__(semantic)
        self.rows, self.segments = leading_windows(document_runs(semantic), windows)

    def by_document(self, windows: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(windows[self.rows], self.segments)


class DocumentCentroid(DocumentPrior):
    """A document scores as the query's cosine with the mean of its windows (module docstring)."""

    def __init__(self, semantic):
        super().__init__(semantic)
        runs = document_runs(semantic)
        self.first = run_starts(runs) if len(runs) else np.zeros(0, int)
        sums = np.add.reduceat(semantic.matrix, self.first, axis=0) if len(runs) else np.zeros((0, 1))
        norms = np.linalg.norm(sums, axis=1)
        self.norms = np.where(norms == 0, 1.0, norms)  # a document of empty windows scores 0

    def by_document(self, windows: np.ndarray) -> np.ndarray:
        return np.add.reduceat(windows, self.first) / self.norms

"""Document profiles: each document ranked against the query by how its opening reads.

A manual says in plain words what it is for on its first page (title, abstract, "this package…"); a
question worded without the manual's vocabulary often matches that opening better than any one page of
the body. The profile is the document's first ``windows`` embedded windows in reading order (160 words
each: ``windows=1`` is page 1's opening, the head vector pdf-mcp's hybrid ranks documents by; more
windows reach the rest of the title page and the start of the table of contents), and a document scores as
its best profile window's cosine with the query. The vectors are the semantic arm's own, already cached:
a profile costs no embedding, and the query's window scores are the ones the semantic arm just computed.
"""
from __future__ import annotations

import numpy as np

from . import ArmError
from .semantic import page_maxima


def leading_windows(doc_of_window: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each document's first ``n`` windows (rows grouped by document, in reading order) and
    where each document's run of them starts: the arguments of ``np.maximum.reduceat``."""
    first = np.flatnonzero(np.r_[True, doc_of_window[1:] != doc_of_window[:-1]])
    ends = np.r_[first[1:], len(doc_of_window)]
    counts = np.minimum(ends - first, n)
    rows = np.concatenate([np.arange(a, a + c) for a, c in zip(first, counts)]) if len(first) else np.zeros(0, int)
    return rows, np.cumsum(np.r_[0, counts[:-1]])


def best_pages(page_scores: np.ndarray, page_doc: np.ndarray, page_number: np.ndarray) -> np.ndarray:
    """Index of each document's best page (highest score, then lowest page number), documents in the order
    their pages come (grouped by document)."""
    order = np.lexsort((page_number, -page_scores, page_doc))
    return order[np.r_[True, page_doc[order][1:] != page_doc[order][:-1]]]


class DocumentProfile:
    """Profile scores of every document of a semantic arm, and each document's best page, per query."""

    def __init__(self, semantic, windows: int):
        if not hasattr(semantic, "window_scores"):
            raise ArmError(f"a document profile needs a semantic arm's window vectors, not {semantic.label}")
        self.semantic = semantic
        doc_of_window = np.repeat(semantic.page_doc_rank, np.diff(np.r_[semantic.starts, len(semantic.matrix)]))
        self.rows, self.segments = leading_windows(doc_of_window, windows)
        self.docs = [semantic.doc_names[d] for d in np.unique(semantic.page_doc_rank)]

    def scores(self, query: str) -> tuple[dict[str, float], dict[str, int]]:
        """Each document's profile score (its best profile window's cosine) and its best page overall."""
        s = self.semantic
        if not len(self.rows):
            return {}, {}
        windows = s.window_scores(query)
        profile = np.maximum.reduceat(windows[self.rows], self.segments)
        best = best_pages(page_maxima(windows, s.starts), s.page_doc_rank, s.page_number)
        return (dict(zip(self.docs, profile.tolist())),
                {s.doc_names[s.page_doc_rank[i]]: int(s.page_number[i]) for i in best})

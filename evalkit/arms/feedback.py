"""Pseudo-relevance feedback for the corpus-wide BM25: RM3 (Lavrenko & Croft 2001; Abdul-Jaleel et al.,
TREC 2004), as Anserini applies it to BM25.

The query runs once; its ``docs`` best pages are taken as relevant, and the relevance model

    P(w|R) ∝ Σ_D P(w|D) · P(D|Q),   P(w|D) = c(w, D) / |D|,   P(D|Q) = BM25(D) / Σ BM25

picks the ``terms`` most probable index terms (stop words and one-letter tokens left out). The expanded
query weighs each original word ``weight`` / |Q| and each expansion term (1 − ``weight``) · P(w|R) /
Σ P(top terms); pages are ranked by BM25 with those term weights. A need worded in the reader's words
borrows the corpus's words from the pages the first pass found; the cost is a second pass and the risk
of drifting to the first pass's topic when its top pages are wrong.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ..text import STOPWORDS


def relevance_model(pages: list[list[str]], scores: list[float], skip: set[str], terms: int) -> dict[str, float]:
    """RM1 over the feedback ``pages`` (each a list of index terms) with retrieval ``scores``: the ``terms``
    most probable terms not in ``skip``, normalised to sum to 1; equal probabilities by term."""
    total = sum(scores)
    model: dict[str, float] = defaultdict(float)
    for tokens, s in zip(pages, scores, strict=True):
        if not tokens or total <= 0:
            continue
        for w, c in Counter(tokens).items():
            if w not in skip and len(w) > 1 and not w.isdigit():
                model[w] += c / len(tokens) * s / total
    top = sorted(model.items(), key=lambda kv: (-kv[1], kv[0]))[:terms]
    mass = sum(p for _, p in top)
    return {w: p / mass for w, p in top} if mass > 0 else {}


def rm3(original: list[str], expansion: dict[str, float], weight: float) -> dict[str, float]:
    """Term weights of the expanded query: the original terms share ``weight`` equally, the expansion terms
    share 1 − ``weight`` by their probability; a term in both adds both."""
    out: dict[str, float] = {}
    for t in original:
        out[t] = out.get(t, 0.0) + weight / len(original)
    for t, p in expansion.items():
        out[t] = out.get(t, 0.0) + (1 - weight) * p
    return out


class Feedback:
    """RM3 over a :class:`~evalkit.arms.lexical.GlobalIndex`: ``expand`` gives a query's weighted index terms,
    ``ranked`` the pages by the expanded query."""

    def __init__(self, index, store, corpus, docs: int, terms: int, weight: float):
        self.index, self.store, self.docs, self.terms, self.weight = index, store, docs, terms, weight
        self.by_name = {d.name: d for d in corpus.documents}
        self.skip = {t for tok in index.tokenize(sorted(STOPWORDS)) for t in tok}

    def tokens(self, doc: str, page: int) -> list[str]:
        """A page's text as index terms (the index's own tokenizer and stemmer)."""
        return list(self.index.tokenize([self.store.page(self.by_name[doc], page).text])[0])

    def expand(self, terms: list[str]) -> dict[str, float]:
        first = self.index.bm25(terms, self.docs)
        original = [t for tok in self.index.tokenize(terms) for t in tok]
        if not first or not original:
            return rm3(original, {}, 1.0)
        model = relevance_model([self.tokens(d, p) for d, p, _ in first], [s for _, _, s in first], self.skip,
                                self.terms)
        return rm3(original, model, self.weight)

    def ranked(self, terms: list[str], k: int) -> list[tuple[str, int, float]]:
        weights = self.expand(terms)
        if not weights:
            return []
        rows, score = self.index.weighted_bm25(weights)
        index = self.index
        doc = index.doc[rows]
        order = np.lexsort((rows, index.page[rows], index.sha_rank[doc], -score))[:k]
        return [(index.docs[doc[i]], int(index.page[rows[i]]), float(score[i])) for i in order]

"""learned: pages ranked by a logistic regression over per-page features, fitted on another query set.

Candidates are the pages of the corpus-wide BM25 top ``depth`` and the semantic top ``depth``. Each gets
:data:`FEATURES`:

- ``bm25``: its BM25 score over the query's best (0 when it holds no query word), so queries of many and
  of few words are on one scale;
- ``cosine``: its best window's cosine with the query, and ``gap``: how far below the query's best page;
- ``profile``: its document's profile (the cosine of the document's opening, :mod:`evalkit.arms.profile`);
- ``position``: log of its page number (manuals answer "what is this for" early);
- ``coverage``: the share of the query's term weight (:meth:`GlobalIndex.content_weights`) the page holds.

The model is a logistic regression (``fit_logistic``: numpy and scipy's L-BFGS, an L2 penalty on
standardised features), not gradient-boosted trees: six features and a few thousand labelled pages are a
small problem, and a linear model's weights can be read and printed as a spec. ``fit`` learns the weights
from one query set's judgments (a page of gain > 0 is a positive; every other candidate a negative, up to
``negatives`` per query drawn with ``seed``) and returns the arm's spec; the arm is then scored on another
set, never on the one it was fitted on (``evalkit tune`` keeps the two apart).
"""
from __future__ import annotations

import numpy as np

from ..records import Answer, Hit
from . import Arm, ArmError, make
from .lexical import query_terms
from .policies import fit_logistic, format_weights, logistic, parse_weights
from .profile import DocumentProfile
from .semantic import page_maxima

FEATURES = ("bm25", "cosine", "gap", "profile", "position", "coverage")


class LearnedArm(Arm):
    name = "learned"
    defaults = {"weights": "", "depth": 100, "semantic": "semantic(query_threads=1)", "profile_windows": 1}
    minimum = {"depth": 1, "profile_windows": 1}

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        parse(resolved["weights"])
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.weights = np.array(parse(self.params["weights"]))
        self.lexical = make("global-index", corpus, store)
        self.index = self.lexical.global_index
        self.semantic = make(self.params["semantic"], corpus, store)
        self.profile = DocumentProfile(self.semantic, self.params["profile_windows"])
        s = self.semantic  # the semantic arm's page order -> the index's rows
        row = {(d, p): r for r, (d, p) in enumerate(zip(self.index.doc.tolist(), self.index.page.tolist(), strict=True))
               if r}
        doc_index = {name: i for i, name in enumerate(self.index.docs)}
        self.page_row = np.array([row[(doc_index[s.doc_names[d]], int(p))]
                                  for d, p in zip(s.page_doc_rank, s.page_number, strict=True)])

    def features(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """The candidates' index rows and their :data:`FEATURES`, one row per candidate."""
        terms, depth, index = query_terms(query), self.params["depth"], self.index
        bm25 = np.zeros(len(index.doc))
        if terms:
            rows, score = index.bm25_scores(terms)
            bm25[rows] = score
        cosine = np.full(len(index.doc), -1.0)  # a page with no vector (no text) is as far as can be
        cosine[self.page_row] = page_maxima(self.semantic.window_scores(query), self.semantic.starts)
        by_doc, _ = self.profile.scores(query)
        matched = np.flatnonzero(bm25[1:] > 0) + 1
        cand = np.union1d(matched[np.argsort(-bm25[matched], kind="stable")[:depth]],
                          np.argsort(-cosine[1:], kind="stable")[:depth] + 1)  # rows run from 1
        by_row = index.content_weights(tuple(terms))[1] if terms else np.zeros(len(index.doc))
        total = by_row.max() if by_row.max() > 0 else 1.0
        prof = np.array([by_doc.get(index.docs[d], 0.0) for d in index.doc[cand]])
        x = np.column_stack([bm25[cand] / (bm25.max() or 1.0), cosine[cand], cosine.max() - cosine[cand], prof,
                             np.log(index.page[cand]), by_row[cand] / total])
        return cand, x

    def search(self, query: str, k: int) -> Answer:
        if not self.weights.size:
            raise ArmError("arm 'learned' needs weights=… (fit them with `evalkit learn` on another query set)")
        rows, x = self.features(query)
        p = logistic(x, self.weights)
        index = self.index
        order = np.lexsort((index.page[rows], index.sha_rank[index.doc[rows]], -p))[:k]
        return Answer(tuple(Hit(index.docs[index.doc[rows[i]]], int(index.page[rows[i]]), float(p[i])) for i in order))


def parse(text: str) -> list[float]:
    """``w0:w1:…`` (intercept, then one weight per feature); empty: not fitted yet."""
    return parse_weights(text, FEATURES, "arm 'learned'") if text else []


def training_set(arm: LearnedArm, queries, negatives: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of every answerable query's candidates: its pages of gain > 0 are positives; of
    the rest, ``negatives`` per query drawn with ``seed`` (every query weighs about alike)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for q in queries:
        if not q.answerable:
            continue
        rows, x = arm.features(q.text)
        relevant = {(j.doc, j.page) for j in q.relevant}
        y = np.array([(arm.index.docs[arm.index.doc[r]], int(arm.index.page[r])) in relevant for r in rows])
        neg = np.flatnonzero(~y)
        keep = np.r_[np.flatnonzero(y), rng.choice(neg, min(negatives, len(neg)), replace=False)]
        xs.append(x[np.sort(keep)])
        ys.append(y[np.sort(keep)])
    return np.concatenate(xs), np.concatenate(ys).astype(float)


def fit(corpus, store, queries, seed: int = 0, negatives: int = 50, l2: float = 1.0, **params) -> str:
    """The spec of a learned arm fitted on ``queries`` (a development set, never the one it is scored on)."""
    arm = LearnedArm(corpus, store, **params)
    x, y = training_set(arm, queries, negatives, seed)
    if not y.any() or y.all():
        raise ArmError("arm 'learned': fitting needs relevant and non-relevant candidate pages")
    w = format_weights(fit_logistic(x, y, l2))
    return f"learned({','.join([f'weights={w}', *(f'{k}={v}' for k, v in params.items())])})"

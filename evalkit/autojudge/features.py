"""What the judge reads about a (query, page): signals evalkit already computes, never the page's grade.

A query's *domain* is every page the judge predicts for: the pool (the union of every arm's top ``depth``)
and every page the person judged. Each row holds the query's id and class, the page, the person's grade
(NaN where none: kept apart from the features, only ever a target) and the features:

- text (:class:`TextSignals`, computed by :mod:`evalkit.arms.signals` from the page store): the
  query's corpus-wide BM25 on the page, the share of the query's IDF mass the page holds, the number of
  query terms, the cosine of the page's best window with the query (the semantic arm's own vectors), the
  best such cosine in the page's document, and the gap between the two;
- position: the page's place in its document (0 first, 1 last) and the log of its number;
- pool: the share of the query's pool in the page's document, the share of arms listing it, the log of its
  best rank, and every arm's rank (log; a page an arm does not list within ``depth`` is at ``depth + 1``).

The quoted evidence is not a feature: only pages graded >= 1 carry a quote, so the presence of a quote *is*
the grade, and another page's quote of the same query is that query's grade, which cross-fitting must keep
from its own predictions. The features of a page depend on the arms' rankings and the text alone.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from .. import pooling
from ..pooling import PageKey, Rankings
from ..records import Query

TEXT = ("bm25", "idf_mass", "query_terms", "cos", "cos_doc", "cos_gap")
POSITION = ("position", "log_page")
POOL = ("doc_share", "votes", "best_rank")
KEYS = ("query", "cls", "doc", "page", "gain", "distractor", "pooled")  # every row's identity and target


class TextSignals(Protocol):
    """The text features of pages for one query, and the page count of a document."""

    key: str  # what computed them (index, model): part of the judge's identity

    def pages(self, doc: str) -> int: ...

    def score(self, query: str, pages: Sequence[PageKey]) -> np.ndarray:
        """One row per page, one column per name of :data:`TEXT`."""
        ...


@dataclass(frozen=True)
class Settings:
    """Everything that decides the features: the pool depth, the arms whose ranks are read (in order), and
    the key of the text signals."""

    depth: int = 10
    arms: tuple[str, ...] = ()
    text: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return (*TEXT, *POSITION, *POOL, *(f"rank:{a}" for a in self.arms))

    def digest(self) -> str:
        return hashlib.sha256(json.dumps([self.depth, list(self.arms), self.text]).encode()).hexdigest()


class FeatureError(ValueError):
    """The features cannot be built as asked (an arm the judge reads is missing from a results directory)."""


def domain(q: Query, rankings: Rankings, depth: int) -> list[PageKey]:
    """The pages the judge predicts for: the pool and the judged pages, in (doc, page) order."""
    return sorted(set(pooling.votes(rankings, depth)) | {(j.doc, j.page) for j in q.judgments})


def pool_features(pages: Sequence[PageKey], rankings: Rankings, settings: Settings) -> np.ndarray:
    """The pool columns (:data:`POOL` then one rank per arm) of ``pages``."""
    top = pooling.listed(rankings, settings.depth)
    beyond = settings.depth + 1
    ranks = np.array([[top[a].index(p) + 1 if p in top[a] else beyond for a in settings.arms] for p in pages],
                     dtype=float).reshape(len(pages), len(settings.arms))
    pool = set(pooling.votes(rankings, settings.depth))
    per_doc: dict[str, int] = {}
    for d, _ in pool:
        per_doc[d] = per_doc.get(d, 0) + 1
    share = np.array([per_doc.get(d, 0) / max(len(pool), 1) for d, _ in pages])
    votes = (ranks < beyond).sum(axis=1) / max(len(settings.arms), 1)
    best = np.log(ranks.min(axis=1, initial=beyond))
    return np.column_stack([share, votes, best, np.log(ranks)])


def query_features(q: Query, rankings: Rankings, signals: TextSignals, settings: Settings) -> pd.DataFrame:
    """One query's rows: :data:`KEYS` then :attr:`Settings.names`."""
    missing = [a for a in settings.arms if a not in rankings]
    if missing:
        raise FeatureError(f"query {q.id}: no answers of arm(s) {', '.join(missing)} that the judge reads")
    rankings = {a: rankings[a] for a in settings.arms}
    pages = domain(q, rankings, settings.depth)
    gains = {(j.doc, j.page): j.gain for j in q.judgments}
    pool = set(pooling.votes(rankings, settings.depth))
    position = np.array([[(p - 1) / max(signals.pages(d) - 1, 1), math.log(p)] for d, p in pages]).reshape(-1, 2)
    x = np.column_stack([signals.score(q.text, pages).reshape(len(pages), len(TEXT)), position,
                         pool_features(pages, rankings, settings)])
    rows = pd.DataFrame(x, columns=list(settings.names))
    keys = pd.DataFrame({"query": q.id, "cls": q.cls, "doc": [d for d, _ in pages], "page": [p for _, p in pages],
                         "gain": [float(gains.get(p, math.nan)) for p in pages],
                         "distractor": [bool(q.distractor) and d == q.distractor for d, _ in pages],
                         "pooled": [p in pool for p in pages]})
    return pd.concat([keys, rows], axis=1)


def table(queries: Sequence[Query], rankings: Mapping[str, Rankings], signals: TextSignals,
          settings: Settings) -> pd.DataFrame:
    """Every query's rows, in query order (``rankings``: per query id, every arm's ranked pages)."""
    parts = [query_features(q, rankings.get(q.id, {}), signals, settings) for q in queries]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*KEYS, *settings.names])


def digest(frame: pd.DataFrame, names: Sequence[str]) -> str:
    """sha256 of the rows a judge is trained on: keys, grades and features, as bytes."""
    h = hashlib.sha256()
    for col in ("query", "doc"):
        h.update("\x00".join(frame[col].astype(str)).encode())
    h.update(np.ascontiguousarray(frame[["page", "gain", *names]].to_numpy(dtype=np.float64)).tobytes())
    return h.hexdigest()

"""Rank and score fusion as pure functions: Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009) and
the convex combination of normalised scores (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for
Hybrid Retrieval", TOIS 2023).

    RRF(d) = Σ_r 1 / (k + rank_r(d)),   rank 1-based, k = 60.

A 0-based rank silently means k = 59; here the first item of a ranking contributes 1/61. Items missing
from a ranking contribute nothing. Fusing disjoint rankings (one per document) degenerates into a
round-robin whose top band is all tied, which is why the caller must supply the tie-break.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T", bound=Hashable)

K = 60


def rrf_scores(rankings: Iterable[Sequence[T]], k: int = K) -> dict[T, float]:
    """Each item's fused score; an item's contributions from several rankings add."""
    scores: dict[T, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return scores


def fuse(rankings: Iterable[Sequence[T]], tiebreak: Callable[[T], Any], k: int = K) -> list[tuple[T, float]]:
    """Items by fused score, best first; equal scores ordered by ``tiebreak(item)`` ascending, which must
    be a total order over the items (e.g. (-content score, sha256, page))."""
    scores = rrf_scores(rankings, k)
    return sorted(scores.items(), key=lambda kv: (-kv[1], tiebreak(kv[0])))


def fuse_disjoint(rank: np.ndarray, tiebreak: Sequence[np.ndarray], k: int = K,
                  top: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fuse` of *disjoint* rankings (each item in exactly one), vectorised: an item at 0-based rank r
    in its ranking scores 1/(k + r + 1), so the order is by rank, then by the ``tiebreak`` arrays (one key
    per array, first array first, each ascending). Returns the first ``top`` items' indices into ``rank``
    and their scores. For rankings of thousands of items, where a Python key per item is the cost."""
    order = np.lexsort((*reversed(tiebreak), rank))[:top]
    return order, 1.0 / (k + rank[order] + 1)


def round_robin_depth(lengths: Sequence[int], k: int) -> int:
    """How deep each of several *disjoint* rankings must be read for the top k of their fusion: an item at
    rank r scores 1/(k_rrf + r) whichever ranking holds it, so the fused list is all first items, then all
    second items, and so on; its top k lies within the first r ranks once those hold k items."""
    counts = np.asarray(lengths)
    depth = 1
    while depth < counts.max(initial=0) and np.minimum(counts, depth).sum() < k:
        depth += 1
    return depth


# ---- weighted fusion of several inputs, each a map item -> rank or score ---------------------------------

NORMS = ("minmax", "zscore", "tmm")


def weighted_rrf(ranks: Sequence[Mapping[T, int]], weights: Sequence[float], k: int = K) -> dict[T, float]:
    """Σ_r w_r / (k + rank_r(item)) over the inputs that rank the item (ranks 1-based). An input is a map,
    not a list, so several items may share a rank: a document prior gives every page of a document the
    document's rank."""
    scores: dict[T, float] = {}
    for rank, w in zip(ranks, weights, strict=True):
        for item, r in rank.items():
            scores[item] = scores.get(item, 0.0) + w / (k + r)
    return scores


def normalise(scores: np.ndarray, norm: str, lower: float = 0.0) -> np.ndarray:
    """One input's scores on a common scale. ``minmax``: (s − min)/(max − min); ``zscore``: (s − mean)/sd;
    ``tmm`` (theoretical min-max): (s − lower)/(max − lower), with ``lower`` the least score the scorer can
    give (0 for BM25, −1 for a cosine), so a list of uniformly weak scores stays low. A list whose scores are
    all equal (or one long) cannot say which item is better: every item gets 1 (min-max) or 0 (z-score)."""
    s = np.asarray(scores, dtype=float)
    if not len(s):
        return s
    if norm == "zscore":
        sd = s.std()
        return (s - s.mean()) / sd if sd > 0 else np.zeros(len(s))
    low = s.min() if norm == "minmax" else lower
    if norm not in NORMS:
        raise ValueError(f"unknown normalisation {norm!r} (known: {', '.join(NORMS)})")
    span = s.max() - low
    return (s - low) / span if span > 0 else np.ones(len(s))


def convex(scores: Sequence[Mapping[T, float]], weights: Sequence[float], norm: str,
           lower: Sequence[float] | None = None) -> dict[T, float]:
    """Σ_i w_i · normalise_i(score_i(item)) over every item of any input. An item an input did not return
    gets that input's least normalised score ("no better than the worst it returned"; 0 under min-max):
    the inputs are top-k lists, so their absence is weak evidence, not a score of −∞."""
    lower = lower if lower is not None else [0.0] * len(scores)
    above: dict[T, float] = {}  # Σ w_i · (n_i − floor_i): an input that misses an item adds 0
    base = 0.0  # Σ w_i · floor_i, which every item has
    for score, w, low in zip(scores, weights, lower, strict=True):
        items = list(score)
        n = normalise(np.array([score[i] for i in items], dtype=float), norm, low)
        floor = float(n.min()) if len(n) else 0.0
        base += w * floor
        for item, v in zip(items, n.tolist(), strict=True):
            above[item] = above.get(item, 0.0) + w * (v - floor)
    return {item: base + v for item, v in above.items()}


def diversify(order: Sequence[tuple[str, T]], head: int) -> list[tuple[str, T]]:
    """``order`` (pairs of a document and one of its items, best first) with its first ``head`` items kept
    in place and, after them, every document not yet listed brought forward: its best item comes before any
    further item of a document already listed, each group keeping its order. A list cut at 10 then reaches
    more documents without moving what is on top (host crowding, as web search limits results per site).
    ``head`` 0 leaves ``order`` as it is."""
    if head <= 0:
        return list(order)
    top = list(order[:head])
    seen = {doc for doc, _ in top}
    new: list[tuple[str, T]] = []
    again: list[tuple[str, T]] = []
    for doc, item in order[head:]:
        (again if doc in seen else new).append((doc, item))
        seen.add(doc)
    return top + new + again

"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009), as pure functions.

    RRF(d) = Σ_r 1 / (k + rank_r(d)),   rank 1-based, k = 60.

A 0-based rank silently means k = 59; here the first item of a ranking contributes 1/61. Items missing
from a ranking contribute nothing. Fusing disjoint rankings (one per document) degenerates into a
round-robin whose top band is all tied, which is why the caller must supply the tie-break.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
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

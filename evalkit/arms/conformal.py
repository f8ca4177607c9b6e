"""conformal: a refusal threshold the user's own corpus sets, with no judgments. The pseudo-queries and the
p-value are here; the policy (:class:`~evalkit.arms.policies.ConformalPolicy`) sits with the other policies.

Any label-free policy's confidence (``spread`` by default) is turned into a conformal p-value against
pseudo-queries the corpus answers by construction: ``n`` passages of ``words`` consecutive words, each from
a page drawn at random (seeded; pages in content order, so file names play no part). A query's confidence
is p = (1 + #{pseudo-queries scoring ≤ it}) / (n + 1). Refusing when p ≤ α refuses at most a share α of
queries drawn like the pseudo-queries (split conformal prediction: the bound needs exchangeability, no
model and no fit), so ``admit(…,policy=conformal,threshold=0.05)`` carries a wrongful-refusal bound to any
corpus, where a threshold on the raw confidence chosen on one corpus is a guess on the next. The bound
holds for real questions only as far as they look to the policy like passages of the corpus; docs/refusal.md
reports how far that is on the shipped sets.

``words=0`` compares each query with passages of its own length (whitespace words): Mondrian conformal
prediction, one calibration set per length, drawn when a query of that length first comes. A query's
spread depends on its length, and questions are longer than the default 12-word passages: calibrated on
those, the bound is far looser than promised for real questions (docs/refusal.md). Each new length costs
``n`` pseudo-queries' confidences (embeddings), once per arm.
"""
from __future__ import annotations

import numpy as np


def pseudo_queries(pages: list[str], n: int, words: int, seed: int) -> list[str]:
    """``n`` passages of ``words`` consecutive whitespace-separated words, each from a page drawn uniformly
    (with replacement) among the pages that have that many words, at a uniform start. Deterministic in
    ``seed`` and the order of ``pages``."""
    split = [p.split() for p in pages]
    usable = [s for s in split if len(s) >= words]
    if not usable:
        return []
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.integers(0, len(usable), n).tolist():
        start = int(rng.integers(0, len(usable[i]) - words + 1))
        out.append(" ".join(usable[i][start:start + words]))
    return out


def p_value(calibration: np.ndarray, score: float) -> float:
    """Conformal p-value of ``score`` among ``calibration`` (sorted ascending): (1 + #{c ≤ score}) / (n + 1).
    Ties count for the query, so a refusal at p ≤ α stays within α."""
    return (1 + int(np.searchsorted(calibration, score, side="right"))) / (len(calibration) + 1)


def refused(calibration: np.ndarray, alpha: float) -> int:
    """How many of the calibration scores themselves a refusal at p < ``alpha`` would refuse, each asked as a
    new query is (its own score among all of them)."""
    c = np.sort(np.asarray(calibration, dtype=float))
    return sum(p_value(c, float(s)) < alpha for s in c)


def guarantee(n: int, alpha: float) -> float:
    """The most a refusal at p < ``alpha`` refuses of queries exchangeable with ``n`` calibration queries:
    a new query's rank R among the n + 1 is uniform, and it is refused when R < alpha (n + 1), so the chance
    is #{R : R / (n + 1) < alpha} / (n + 1) < alpha (0 when 1 / (n + 1) >= alpha: nothing can be refused);
    counted with the same division as :func:`p_value`, so no rounding separates the two."""
    return sum(r / (n + 1) < alpha for r in range(1, n + 2)) / (n + 1)

"""Assessor agreement between two gradings of the same queries (``evalkit qrels agree A.toml B.toml``).

Two assessors grade independently; on the (query, page) pairs both judged, agreement is reported as the
share of identical grades and as Cohen's weighted kappa, which discounts the agreement two assessors would
reach by chance given how often each uses each grade. Grades are ordinal (0-3), so a 3-vs-2 disagreement
weighs less than 3-vs-0. The headline is **linear** weights (each step of the scale costs the same);
quadratic weights, which forgive one-step disagreements more and equal an intraclass correlation, are
reported beside it because much of the literature quotes them. Pages only one assessor judged are
counted, not guessed: they say how differently the two pooled, not how differently they graded.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .qrels import QuerySet
from .records import CLASSES

GRADES = (0, 1, 2, 3)


def confusion(pairs: Iterable[tuple[int, int]], grades: tuple[int, ...] = GRADES) -> np.ndarray:
    """Counts of (grade by A, grade by B): rows A, columns B, in the order of ``grades``."""
    index = {g: i for i, g in enumerate(grades)}
    m = np.zeros((len(grades), len(grades)), dtype=int)
    for a, b in pairs:
        if a not in index or b not in index:
            raise ValueError(f"grade pair ({a}, {b}) is outside {grades}")
        m[index[a], index[b]] += 1
    return m


def weighted_kappa(matrix: np.ndarray, power: int = 1) -> float:
    """Cohen's weighted kappa of a confusion matrix whose categories are equally spaced ordinal grades:
    1 - sum(w * observed) / sum(w * expected), disagreement weight w_ij = |i - j|^power (1 linear,
    2 quadratic), expected = the product of the two assessors' marginal shares. NaN when chance alone
    predicts no disagreement (both assessors used a single grade): kappa is undefined there."""
    m = np.asarray(matrix, dtype=float)
    n = m.sum()
    if n == 0:
        return math.nan
    i, j = np.indices(m.shape)
    w = np.abs(i - j) ** power
    expected = np.outer(m.sum(axis=1), m.sum(axis=0)) / n
    chance = (w * expected).sum()
    return math.nan if chance == 0 else float(1 - (w * m).sum() / chance)


@dataclass(frozen=True)
class Agreement:
    """Agreement on one class of queries (or ``all``) between assessors A and B."""

    cls: str
    queries: int  # queries both sets contain, worded alike
    pairs: int  # (query, page) pairs both judged
    exact: float  # share of those with the same grade
    kappa_linear: float
    kappa_quadratic: float
    only_a: int  # pages only A judged (of the queries both contain)
    only_b: int
    confusion: tuple[tuple[int, ...], ...]  # rows A's grade, columns B's, over GRADES


def worded_differently(a: QuerySet, b: QuerySet) -> list[str]:
    """Ids in both sets whose query text differs (white space aside): a grade is a grade against one
    wording, so such queries are not compared."""
    b_text = {q.id: " ".join(q.text.split()) for q in b.queries}
    return [q.id for q in a.queries if q.id in b_text and " ".join(q.text.split()) != b_text[q.id]]


def agree(a: QuerySet, b: QuerySet) -> list[Agreement]:
    """Per class (in CLASSES order, A's class of each query) and ``all``: agreement on the queries both
    sets contain with the same wording, matched by id (ValueError when they have none in common)."""
    b_by_id = {q.id: q for q in b.queries}
    if not any(q.id in b_by_id for q in a.queries):
        raise ValueError("no query id in common")
    reworded = set(worded_differently(a, b))
    rows: dict[str, list] = {}
    for qa in a.queries:
        qb = b_by_id.get(qa.id)
        if qb is None or qa.id in reworded:
            continue
        ga, gb = ({(j.doc, j.page): j.gain for j in q.judgments} for q in (qa, qb))
        for who, grades in (("A", ga), ("B", gb)):
            if bad := next(((p, g) for p, g in grades.items() if g not in GRADES), None):
                raise ValueError(f"{who}'s query {qa.id!r} grades {bad[0][0]}#{bad[0][1]} {bad[1]}, "
                                 f"outside {GRADES[0]}..{GRADES[-1]}")
        for key in (qa.cls, "all"):
            r = rows.setdefault(key, [0, [], 0, 0])
            r[0] += 1
            r[1] += [(ga[p], gb[p]) for p in ga.keys() & gb.keys()]
            r[2] += len(ga.keys() - gb.keys())
            r[3] += len(gb.keys() - ga.keys())
    out = []
    for cls in [*CLASSES, *sorted(set(rows) - set(CLASSES) - {"all"}), "all"]:
        if cls not in rows:
            continue
        n_queries, pairs, only_a, only_b = rows[cls]
        m = confusion(pairs)
        out.append(Agreement(cls, n_queries, len(pairs), float(np.trace(m)) / len(pairs) if pairs else math.nan,
                             weighted_kappa(m, 1), weighted_kappa(m, 2), only_a, only_b,
                             tuple(tuple(int(x) for x in row) for row in m)))
    return out


def table(rows: list[Agreement]) -> pd.DataFrame:
    """The agreement rows as a table, one row per class."""
    return pd.DataFrame([{"class": r.cls, "queries": r.queries, "pages both judged": r.pairs, "exact": r.exact,
                          "kappa linear": r.kappa_linear, "kappa quadratic": r.kappa_quadratic,
                          "only A judged": r.only_a, "only B judged": r.only_b} for r in rows]).set_index("class")


def confusion_table(row: Agreement) -> pd.DataFrame:
    """One row's confusion matrix, labelled: rows A's gain, columns B's gain."""
    return pd.DataFrame(row.confusion, index=[f"A {g}" for g in GRADES], columns=[f"B {g}" for g in GRADES])

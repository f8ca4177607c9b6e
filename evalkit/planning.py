"""How many queries a decision needs: the power planner of a query set in the making.

From the judgments so far, per class, the minimal detectable difference (MDD) the set can see now and the
number of queries it would need to see a chosen Δ at the target power. The spread of per-query differences
comes from the arms' recorded answers rescored with the current judgments (the median over every pair of
arms, so no pair is picked to flatter the set). Every ranking measure lies in [0, 1]: an MDD beyond that
range says nothing, so it is reported as "n too small" (:func:`evalkit.stats.mdd_text`), as is a class with
fewer than two queries; a class whose paired differences do not vary at all (arms alike on its queries) has
no spread to plan with: "no variance", and no count of queries needed.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from . import stats
from .records import CLASSES


def sd_of_pairs(wide: pd.DataFrame) -> tuple[float, int]:
    """The median, over every pair of arms (columns), of the standard deviation of their per-query
    differences (rows: queries), and the number of pairs."""
    sds = [float(np.std(wide[a] - wide[b], ddof=1)) for a, b in itertools.combinations(wide.columns, 2)
           if len(wide) >= 2]
    return (float(np.median(sds)), len(sds)) if sds else (math.nan, 0)


def plan(frame: pd.DataFrame, measure: str = "nDCG@10(doc)", delta: float = 0.05, alpha: float = stats.ALPHA,
         target: float = stats.POWER) -> pd.DataFrame:
    """Per answerable class and for all of them (``per_query`` rows of two or more arms): queries, arm
    pairs, the sd of paired differences, the MDD now (NaN when it is out of range or n < 2) and the queries
    needed to detect ``delta`` at power ``target``."""
    answerable = frame[frame["class"] != "abstain"]
    rows = []
    for cls in ["all", *[c for c in CLASSES if c != "abstain" and (answerable["class"] == c).any()]]:
        part = answerable if cls == "all" else answerable[answerable["class"] == cls]
        wide = part.pivot(index="query", columns="arm", values=measure).dropna()
        sd, pairs = sd_of_pairs(wide)
        mdd = stats.mdd(sd, len(wide), alpha, target) if pairs else math.nan
        rows.append({"class": cls, "queries": len(wide), "pairs": pairs, "sd": sd,
                     "mdd": stats.detectable(mdd),
                     "needed": stats.queries_needed(delta, sd, alpha, target) if sd > 0 else math.nan})
    return pd.DataFrame(rows).set_index("class")


def text(table: pd.DataFrame, measure: str, delta: float, target: float = stats.POWER) -> str:
    """What ``evalkit qrels plan`` prints: one line per class."""
    lines = [f"{measure}: what the set can detect now, and the queries needed to see Δ = {delta:g} at "
             f"{target:.0%} power (sd of paired differences: median over {int(table['pairs'].max())} arm pair(s))"]
    for cls, r in table.iterrows():
        mdd = stats.mdd_text(r["mdd"], r["sd"])
        needed = "n/a" if math.isnan(r["needed"]) else f"{int(r['needed'])} queries"
        lines.append(f"  {cls:<10} {int(r['queries']):>4} queries  {mdd:<15} needs {needed}")
    return "\n".join(lines)


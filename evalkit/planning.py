"""How many queries a decision needs: the power planner of a query set in the making.

From the judgments so far, per class, the minimal detectable difference (MDD) the set can see now and the
number of queries it would need to see a chosen Δ at the target power. The spread of per-query differences
comes from the arms' recorded answers rescored with the current judgments (the median over every pair of
arms, so no pair is picked to flatter the set). Every ranking measure lies in [0, 1]: an MDD beyond that
range says nothing, so it is reported as "n too small" (:func:`evalkit.stats.mdd_text`), as is a class with
fewer than two queries; a class whose paired differences do not vary at all (arms alike on its queries) has
no spread to plan with: "no variance", and no count of queries needed. :func:`hours_text` prices the
counts in person-hours under a stated reading model (:func:`evalkit.effort.reading_model`).
"""
from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import stats
from .records import CLASSES

if TYPE_CHECKING:
    from .effort import ReadingModel
    from .qrels import QuerySet


def sd_of_pairs(wide: pd.DataFrame) -> tuple[float, int]:
    """The median, over every pair of arms (columns), of the standard deviation of their per-query
    differences (rows: queries), and the number of pairs."""
    sds = [float(np.std(wide[a] - wide[b], ddof=1)) for a, b in itertools.combinations(wide.columns, 2)
           if len(wide) >= 2]
    return (float(np.median(sds)), len(sds)) if sds else (math.nan, 0)


def check(frame: pd.DataFrame, measure: str) -> None:
    """Refuse (ValueError) per-query rows the planner cannot plan from: fewer than two arms, or no ``measure``."""
    if frame.empty or frame["arm"].nunique() < 2:
        raise ValueError("the power planner needs the answers of two or more arms to the set's queries")
    if measure not in frame.columns:
        raise ValueError(f"--measure {measure!r} is not one of the run's measures: "
                         f"{', '.join(c for c in frame.columns if '@' in c or c.startswith('RR'))}")


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


WRITTEN = 4  # with a judge: queries written per query the person-only plan needs


def judge_correlation(person: pd.DataFrame, judge: pd.DataFrame) -> float:
    """The median, over every pair of arms (columns; rows: queries), of the correlation between the person's
    per-query differences and the judge's predictions of them; NaN without spread."""
    rs = []
    for a, b in itertools.combinations(person.columns, 2):
        x, y = (person[a] - person[b]).to_numpy(), (judge[a] - judge[b]).to_numpy()
        if len(x) >= 3 and x.std() > 0 and y.std() > 0:
            rs.append(float(np.corrcoef(x, y)[0, 1]))
    return float(np.median(rs)) if rs else math.nan


def with_judge(frame: pd.DataFrame, predicted: pd.DataFrame, table: pd.DataFrame, measure: str, delta: float,
               alpha: float = stats.ALPHA, target: float = stats.POWER) -> pd.DataFrame:
    """``table`` (:func:`plan`) with, per class, the judge-person correlation of the paired differences
    (``predicted``: the judge's expected ``measure`` per query and arm, as rows like ``frame``'s) and how many
    of WRITTEN x the person-only count of queries the person must grade whole with the judge predicting the
    rest (:func:`evalkit.estimates.graded_needed`)."""
    from .estimates import graded_needed

    answerable = frame[frame["class"] != "abstain"]
    out = table.copy()
    for cls in table.index:
        part = answerable if cls == "all" else answerable[answerable["class"] == cls]
        person = part.pivot(index="query", columns="arm", values=measure).dropna()
        judge = predicted.pivot(index="query", columns="arm", values=measure).reindex_like(person)
        r = judge_correlation(person, judge)
        needed = table.at[cls, "needed"]
        written = WRITTEN * int(needed) if needed == needed else 0
        out.loc[cls, "judge r"] = r
        out.loc[cls, "written"] = written
        out.loc[cls, "graded"] = (graded_needed(delta, table.at[cls, "sd"], r if r == r else 0.0,
                                                written, alpha, target)
                                 if written else math.nan)
    return out


def judge_text(table: pd.DataFrame) -> str:
    """The lines ``evalkit qrels plan --judge`` adds: per class, the judge's correlation and the grading it saves."""
    lines = [f"with the judge predicting the pages nobody graded (write {WRITTEN}x the queries, grade some whole, "
             "at random; r: judge-person correlation of the paired differences, median over arm pairs)"]
    for cls, r in table.iterrows():
        what = "n/a" if r["graded"] != r["graded"] else (
            f"grade {int(r['graded'])} of {int(r['written'])} written" if r["graded"] <= r["written"] else "not enough")
        lines.append(f"  {cls:<10} r {r['judge r']:.2f}  {what}")
    return "\n".join(lines)



def hours_text(table: pd.DataFrame, qs: "QuerySet", model: "ReadingModel") -> str:
    """The lines pricing the plan in person-hours: per class, the queries needed (and, with a judge, the
    queries graded whole) times the pages a whole query of that class has to be read on in ``qs`` now (its
    pool and any page judged outside it), under ``model``: queries not pooled or judged yet do not count, so
    a set graded in part is priced by its whole queries, not by their share of the set."""
    lines = [model.statement]
    for cls, r in table.iterrows():
        judged = [n for q in qs.queries if q.answerable and cls in ("all", q.cls)
                  if (n := len({(j.doc, j.page) for j in q.judgments} | set(qs.pooled.get(q.id, ()))))]
        per = sum(judged) / len(judged) if judged else math.nan
        counts = [(f"{int(n)} queries", n) for n in (r["needed"], r.get("graded", math.nan)) if n == n]
        priced = "; ".join(f"{what} x {per:.1f} pages = {n * per:.0f} pages: {model.hours(n * per):.2f} h"
                           for what, n in counts) if per == per else ""
        lines.append(f"  {cls:<10} {priced or 'n/a'}")
    return "\n".join(lines)

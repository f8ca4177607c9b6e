"""How complete the judgments under a run are: the report's Judged@10 table and its warning.

nDCG counts a page nobody judged as non-relevant. An arm whose top 10 is mostly unjudged pages is scored
on what the assessors happened to read, not on what it found: its nDCG@10 is a statement about the pool.
Judged@10 (:func:`evalkit.measures.judged`) measures that per query; here it is averaged per arm and
class, and an arm under :data:`THRESHOLD` on its answerable queries gets a warning in the report.
"""
from __future__ import annotations

import pandas as pd

from . import escape as esc
from .display import Markdown
from .records import CLASSES
from .results import Results

MEASURE = "Judged@10"
# Below this share of judged pages in its top 10, an arm's nDCG@10 rests on unjudged pages for more than
# a fifth of what it shows: the report says so next to its figures.
THRESHOLD = 0.8
ALL = "all answerable"


def judged_table(results: Results) -> pd.DataFrame:
    """Mean Judged@10 per arm (rows, manifest order) and class (columns), plus ``all answerable``: over the
    queries each arm answered (a refused or empty answer shows no page, so it has none to judge). On
    abstain queries it is the share of the top 10 read and found not to answer."""
    pq = results.per_query
    if MEASURE not in pq.columns:
        raise ValueError(f"{results.path} has no {MEASURE} column: it was written before evalkit measured it; "
                         "`evalkit run ... --resume` into it recomputes every measure")
    present = [c for c in CLASSES if c in set(pq["class"])]
    wide = pq.pivot_table(index="arm", columns="class", values=MEASURE, aggfunc="mean", dropna=False)
    wide = wide.reindex(index=results.arms, columns=present)
    wide.insert(len([c for c in present if c != "abstain"]), ALL,
                pq[pq["class"] != "abstain"].groupby("arm")[MEASURE].mean().reindex(results.arms))
    return wide


def judged_warning(results: Results, threshold: float = THRESHOLD) -> Markdown:
    """A warning naming every arm whose Judged@10 over answerable queries is below ``threshold``, or a line
    saying that none is."""
    try:
        overall = judged_table(results)[ALL]
    except ValueError as e:
        return Markdown(f"_{esc.markdown(e)}._")
    if overall.isna().all():
        return Markdown("_No answerable query: Judged@10 qualifies nDCG, which these runs do not have._")
    low = overall[overall < threshold]
    if low.empty:
        return Markdown(f"Every arm has Judged@10 ≥ {threshold:.2f} on the answerable queries (lowest: "
                        f"{esc.code(overall.idxmin())}, {overall.min():.2f}): its nDCG@10 rests on judged pages.")
    lines = [f"**Warning: judgments too shallow for {len(low)} arm(s).** nDCG scores an unjudged page as "
             f"non-relevant without anyone having read it. Below {threshold:.0%} judged, more than "
             f"{1 - threshold:.0%} of an arm's top 10 is scored that way, and its nDCG@10 speaks about unjudged "
             "pages rather than about the arm. Judge them (`evalkit qrels pool QRELS --arms ARM --depth 10`) "
             "before reading these arms' scores:", ""]
    lines += [f"- {esc.code(arm)}: Judged@10 = {v:.2f} ({1 - v:.0%} of its top 10 unjudged)" for arm, v in low.items()]
    return Markdown("\n".join(lines))

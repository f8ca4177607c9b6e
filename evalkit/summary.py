"""The per-arm (and per-class) table of a results directory: what the runner writes to ``summary.csv`` and
what :class:`evalkit.results.Results` recomputes from ``per_query.parquet``. Its own module, so that modules
that read results need not import the runner."""
from __future__ import annotations

import math

import pandas as pd

from . import measures
from .records import CLASSES


def summarize(frame: pd.DataFrame, by_class: bool = True) -> pd.DataFrame:
    """Per arm (and per class, plus ``all``): ranking measures averaged over answerable queries only (an
    errored one scores 0, like an empty answer), both refusal rates side by side, the number of errors,
    latency median / p95 / mean, and the mean tied items at 10. Audit measures (Judged@10) are averaged over
    the queries with an answer: answerable ones in ``all`` (the row whose nDCG they qualify), the class's
    own in a class row (abstain included)."""
    names = [n for n in measures.DEFAULT if n in frame.columns]
    audit = {n for n in names if measures.MEASURES[n].audit}
    groups = [("all", frame)]
    if by_class:
        groups += [(c, frame[frame["class"] == c]) for c in CLASSES if (frame["class"] == c).any()]
    rows = []
    for cls, g in groups:
        for arm, a in g.groupby("arm", sort=False):
            answerable = a[a["class"] != "abstain"]
            row = {"arm": arm, "class": cls, "queries": len(a)}
            row.update({n: answerable[n].mean() if len(answerable) else math.nan for n in names})
            row.update({n: (answerable if cls == "all" else a)[n].mean() for n in audit})
            row.update(measures.refusal_rates(a["outcome"], a["class"] == "abstain"))
            row["errors"] = int((a["outcome"] == "error").sum())
            row.update({f"latency_{k}_s": v for k, v in measures.latency_summary(a["latency_s"]).items()})
            row["ties@10"] = a["ties@10"].mean()
            rows.append(row)
    return pd.DataFrame(rows)


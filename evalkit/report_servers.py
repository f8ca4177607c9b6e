"""Report tables for arms that call out to a server (the ``mcp`` arm): which server answered, how much of
each query's time was the transport, and which queries failed with which message.

Everything is read from the results directory: the manifest's per-arm ``describe`` (see
:meth:`evalkit.arms.Arm.describe`) and the per-query ``outcome``/``error`` columns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .results import Results


def servers(results: Results) -> pd.DataFrame:
    """One row per arm backed by a server: its name and version, digests of its tool schema and of the arm
    definition (a change between two runs shows here), warm-up time and restarts, and the transport's
    share of the median query time (a ping round trip, sampled after the run, over the median latency).

    A run on an executor records each worker's instance apart (``describe["workers"]``): the row names every
    distinct server and digest (joined by " / ", so workers that disagree show it), adds up warm-ups and
    restarts, and takes the median of the workers' ping medians."""
    latency = results.per_query.groupby("arm", sort=False)["latency_s"].median()
    rows = []
    for arm in results.manifest["arms"]:
        d = arm.get("describe", {})
        parts = list(d.get("workers", {}).values()) or [d]  # one description per instance that answered
        if not any("server" in p or "definition" in p for p in parts):
            continue
        found = [p.get("server", {}) for p in parts]
        median = latency.get(arm["label"], float("nan"))
        ping = float(np.median([p.get("transport", {}).get("ping_median_s", float("nan")) for p in parts]))
        rows.append({"arm": arm["label"],
                     "server": _distinct(f"{s.get('name', '?')} {s.get('version', '')}".strip() for s in found),
                     "tool schema sha256": _distinct(s.get("tools_sha256", "")[:12] for s in found),
                     "definition sha256": _distinct(p.get("definition_sha256", "")[:12] for p in parts),
                     "warm-up s": sum(sum(p.get("warmup_seconds", [])) for p in parts),
                     "restarts": sum(p.get("restarts", 0) for p in parts),
                     "s/query (median)": median, "ping s (median)": ping, "transport share": ping / median})
    return pd.DataFrame(rows).set_index("arm") if rows else pd.DataFrame()


def _distinct(values) -> str:
    return " / ".join(dict.fromkeys(values))


def errors(results: Results) -> pd.DataFrame:
    """Every query an arm failed to answer, with the arm's message (empty when nothing failed)."""
    pq = results.per_query
    if "error" not in pq.columns:  # a run written before errors were recorded had none
        return pd.DataFrame(columns=["arm", "query", "class", "error"])
    return pq.loc[pq["outcome"] == "error", ["arm", "query", "class", "error"]].reset_index(drop=True)

"""Report tables for arms that call out to a server (the ``mcp`` arm): which server answered, how much of
each query's time was the transport, and which queries failed with which message.

Everything is read from the results directory: the manifest's per-arm ``describe`` (see
:meth:`evalkit.arms.Arm.describe`) and the per-query ``outcome``/``error`` columns.
"""
from __future__ import annotations

import pandas as pd

from .results import Results


def servers(results: Results) -> pd.DataFrame:
    """One row per arm backed by a server: its name and version, digests of its tool schema and of the arm
    definition (a change between two runs shows here), warm-up time and restarts, and the transport's
    share of the median query time (a ping round trip, sampled after the run, over the median latency)."""
    latency = results.per_query.groupby("arm", sort=False)["latency_s"].median()
    rows = []
    for arm in results.manifest["arms"]:
        d = arm.get("describe", {})
        if "server" not in d and "definition" not in d:
            continue
        server, transport = d.get("server", {}), d.get("transport", {})
        median = latency.get(arm["label"], float("nan"))
        ping = transport.get("ping_median_s", float("nan"))
        rows.append({"arm": arm["label"], "server": f"{server.get('name', '?')} {server.get('version', '')}".strip(),
                     "tool schema sha256": server.get("tools_sha256", "")[:12],
                     "definition sha256": d.get("definition_sha256", "")[:12],
                     "warm-up s": sum(d.get("warmup_seconds", [])), "restarts": d.get("restarts", 0),
                     "s/query (median)": median, "ping s (median)": ping, "transport share": ping / median})
    return pd.DataFrame(rows).set_index("arm") if rows else pd.DataFrame()


def errors(results: Results) -> pd.DataFrame:
    """Every query an arm failed to answer, with the arm's message (empty when nothing failed)."""
    pq = results.per_query
    if "error" not in pq.columns:  # a run written before errors were recorded had none
        return pd.DataFrame(columns=["arm", "query", "class", "error"])
    return pq.loc[pq["outcome"] == "error", ["arm", "query", "class", "error"]].reset_index(drop=True)

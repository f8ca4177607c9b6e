"""Refusal in a results directory: what ``evalkit refusal`` prints and the report's refusal section.

Reads the per-query confidences that ``admit(...)`` arms record (:mod:`evalkit.arms.admit`) and applies the
pure measures of :mod:`evalkit.refusal`. Measures over every threshold need every query's confidence, and
AURC / nAUC also need the quality of the answer a refused query would have had: both come from a
record-only run of the same wrapper (``admit(arm=A,policy=P)``, threshold -inf: it never refuses), or from
the unwrapped arm ``A`` in the same run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from . import refusal
from . import escape as esc
from .resultsdir import ResultsError
from .specs import parse_spec

METRIC = "nDCG@10"


class RefusalError(ValueError):
    """An arm a refusal measure cannot be computed for; the message says which and why."""


class Run(Protocol):
    """What the refusal measures read of a results directory: a :class:`~evalkit.results.Results`, whose
    ``refusal()`` calls back here (so this module names what it needs instead of importing the class)."""

    @property
    def path(self) -> Path: ...

    @property
    def manifest(self) -> dict: ...

    @property
    def per_query(self) -> pd.DataFrame: ...

    @property
    def arms(self) -> list[str]: ...

    def arm(self, name: str) -> str: ...


@dataclass(frozen=True)
class Confidences:
    """One arm's refusal data, one entry per query (the run's query order)."""

    arm: str
    threshold: float               # the arm's own (-inf: record-only)
    queries: np.ndarray
    confidence: np.ndarray         # -inf where the arm found nothing (refused at every threshold)
    answerable: np.ndarray
    kinds: np.ndarray
    refused: np.ndarray            # what the run did
    metric: np.ndarray | None      # nDCG@10 of the answer each query would get, if known


def arm_info(results: Run, arm: str) -> dict:
    """The manifest entry of ``arm`` (named as :meth:`Results.arm` resolves it)."""
    try:
        label = results.arm(arm)
    except ResultsError as e:
        raise RefusalError(str(e)) from None
    return next(info for info in results.manifest["arms"] if info["label"] == label)


def admitted(results: Run) -> list[str]:
    """The arms of a run that record a confidence for every query, in manifest order."""
    pq = results.per_query
    if "confidence" not in pq.columns:
        return []
    have = pq.groupby("arm")["confidence"].apply(lambda c: c.notna().all())
    return [a for a in results.arms if have.get(a, False)]


def _threshold(info: dict) -> float:
    return float(info.get("params", {}).get("threshold", -math.inf))


def record_only(info: dict) -> str:
    """The label of the same wrapper without a threshold (the curve every operating point lies on)."""
    p = info.get("params", {})
    return f"admit(arm={p['arm']},policy={p['policy']})" if "policy" in p else info["label"]


def confidences(results: Run, arm: str) -> Confidences:
    info = arm_info(results, arm)
    label = info["label"]
    if label not in admitted(results):
        raise RefusalError(f"{label} records no confidence in {results.path}: wrap it in an admission policy, "
                           f"e.g. admit(arm={label},policy=semantic), and run that")
    rows = results.per_query[results.per_query["arm"] == label].reset_index(drop=True)
    threshold = _threshold(info)
    conf = rows["confidence"].to_numpy(dtype=float)
    # refused with a confidence that passes its threshold: the arm itself found nothing
    empty = rows["refused"].to_numpy(dtype=bool) & (conf >= threshold)
    kinds = rows["kind"].fillna("").to_numpy(dtype=object) if "kind" in rows else np.full(len(rows), "", object)
    return Confidences(label, threshold, rows["query"].to_numpy(), np.where(empty, -np.inf, conf),
                       rows["class"].ne("abstain").to_numpy(), kinds, rows["refused"].to_numpy(dtype=bool),
                       _metric(results, info, rows))


def _metric(results: Run, info: dict, rows: pd.DataFrame) -> np.ndarray | None:
    """The per-query metric of the answers, from a run that answered every query it could."""
    pq = results.per_query
    candidates = [info["label"]] if _threshold(info) == -math.inf else []
    candidates += [record_only(info), info.get("params", {}).get("arm", "")]
    for label in candidates:
        if label in set(pq["arm"]):
            m = pq[pq["arm"] == label].set_index("query")[METRIC]
            return m.reindex(rows["query"]).to_numpy(dtype=float)
    return None


def measures(d: Confidences, threshold: float | None = None) -> dict:
    """The operating point (the run's refusals, or ``threshold`` applied to the confidences) and the
    threshold-free measures: AUROC, AURC and nAUC (NaN when the answers' quality is unknown)."""
    refused = d.refused if threshold is None else d.confidence < threshold
    out: dict = dict(refusal.operating_point(refused, d.answerable, d.kinds))
    out["threshold"] = d.threshold if threshold is None else threshold
    out["AUROC"] = refusal.auroc(d.confidence, d.answerable)
    if d.metric is None:
        out["AURC"] = out["nAUC"] = out["nAUC(all)"] = math.nan
    else:
        out["AURC"] = refusal.aurc(d.confidence, refusal.losses(d.metric, d.answerable))
        a = d.answerable
        out["nAUC"] = refusal.nauc(d.confidence[a], d.metric[a])  # MTEB's: answerable queries only
        out["nAUC(all)"] = refusal.nauc(d.confidence, np.where(a, d.metric, 0.0))
    return out


def text(results: Run, arm: str, threshold: float | None = None, curve: bool = False) -> str:
    """What ``evalkit refusal RESULTS --arm SPEC`` prints."""
    d = confidences(results, arm)
    m = measures(d, threshold)
    n_abstain = int((~d.answerable).sum())
    lines = [f"{d.arm} on {results.manifest['corpus']['name']} × {results.manifest['qrels']['name']} "
             f"({len(d.queries)} queries: {len(d.queries) - n_abstain} answerable, {n_abstain} abstain)",
             f"at threshold {m['threshold']:g} ({'given' if threshold is not None else 'the arm’s own'}):",
             f"  correct refusal   {m['correct_refusal']}"]
    lines += [f"    {k[len('correct_refusal['):-1]:<16}{m[k]}" for k in m if k.startswith("correct_refusal[")]
    lines += [f"  wrongful refusal  {m['wrongful_refusal']}", "over every threshold:",
              f"  AUROC (answerable vs abstain)                 {m['AUROC']:.3f}"]
    if d.metric is None:
        lines.append("  AURC, nAUC: n/a (need the record-only wrapper or the unwrapped arm in the same run)")
    else:
        lines += [f"  AURC (loss 1 - {METRIC}; answering abstain = 1)  {m['AURC']:.3f}",
                  f"  nAUC (MTEB, {METRIC}, answerable queries)     {m['nAUC']:.3f}",
                  f"  nAUC (all queries, abstain scored 0)          {m['nAUC(all)']:.3f}"]
    if curve:
        lines += ["trade-off (refuse when confidence < threshold):",
                  refusal.tradeoff(d.confidence, d.answerable).to_string(index=False,
                                                                         float_format=lambda v: f"{v:.4g}")]
    return "\n".join(lines)


def calibrated(results: Run, arm: str, max_wrongful: float) -> tuple[str, dict]:
    """The admission spec with the threshold chosen on this run (``max_wrongful`` at most), and the
    measures it has here (self-tuned: optimistic; report it on another set)."""
    info = arm_info(results, arm)
    if "policy" not in info.get("params", {}):
        raise RefusalError(f"{info['label']} is not an admit(...) arm")
    d = confidences(results, arm)
    t = refusal.calibrate(d.confidence, d.answerable, max_wrongful)
    return f"{record_only(info)[:-1]},threshold={t})", measures(d, t)


def table(results: Run) -> pd.DataFrame:
    """One row per arm that records confidences: both rates with intervals at its own threshold, correct
    refusal per abstain kind, AUROC, AURC and nAUC."""
    rows = []
    for arm in admitted(results):
        m = measures(confidences(results, arm))
        row = {"arm": arm, "threshold": m["threshold"]}
        for key, v in m.items():
            if isinstance(v, refusal.Rate):
                row[key] = str(v)
        row.update({k: m[k] for k in ("AUROC", "AURC", "nAUC", "nAUC(all)")})
        rows.append(row)
    return pd.DataFrame(rows).set_index("arm") if rows else pd.DataFrame()


def fig_tradeoff(results: Run) -> Figure | None:
    """Correct vs wrongful refusal over every threshold, one curve per policy (its record-only run, else its
    own confidences), each thresholded arm's operating point marked on its policy's curve."""
    arms = admitted(results)
    if not arms:
        return None
    by_policy: dict[str, list[str]] = {}
    for arm in arms:
        by_policy.setdefault(record_only(arm_info(results, arm)), []).append(arm)
    inner = {parse_spec(p)[1].get("arm", "") for p in by_policy}
    fig, ax = plt.subplots(figsize=(10, 6))
    for i, (policy, members) in enumerate(by_policy.items()):
        colour, style = f"C{i % 10}", ("-", "--", ":")[i // 10 % 3]  # past ten policies the dash tells them apart
        d = confidences(results, policy if policy in arms else members[0])
        curve = refusal.tradeoff(d.confidence, d.answerable)
        name = parse_spec(policy)[1].get("policy", policy) if len(inner) == 1 else policy
        ax.step(curve["wrongful_refusal"], curve["correct_refusal"], where="post", color=colour, ls=style,
                label=f"{esc.figure(name)}  (AUROC {refusal.auroc(d.confidence, d.answerable):.2f})")
        for arm in members:
            own = confidences(results, arm)
            if own.threshold > -math.inf:
                op = refusal.operating_point(own.refused, own.answerable)
                xy = (op["wrongful_refusal"].value, op["correct_refusal"].value)
                ax.plot(*xy, "o", color=colour, ms=8, mec="black")
                ax.annotate(f"t={own.threshold:g}", xy, textcoords="offset points", xytext=(6, -12), fontsize=8,
                            color=colour)
    ax.axvline(0.05, color="grey", lw=0.8, ls=":")
    ax.set(xlabel="wrongful refusal (answerable queries refused)", ylabel="correct refusal (abstain queries refused)",
           xlim=(-0.02, 1.02), ylim=(-0.02, 1.02))
    where = f" on {esc.figure(next(iter(inner)))}" if len(inner) == 1 and "" not in inner else ""
    ax.set_title(f"Refusal trade-off over every threshold{where}; dots: arms run with a threshold; "
                 "dotted: 5% wrongful", loc="left", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="policy", title_fontsize=9)
    return fig

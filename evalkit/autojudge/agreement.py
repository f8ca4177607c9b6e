"""How far the judge's grades can stand in for the person's: measured only on grades it did not train on.

Cross-fitting by query (:func:`crossfit`): the queries are dealt into K folds by a hash of their id and the
seed (:func:`evalkit.autojudge.model.folds`), and every query's pages are predicted by a judge fitted on the
other folds, so no query's grades reach its own predictions. The agreement, per class and over all:

- linear-weighted Cohen's κ (:func:`evalkit.agreement.weighted_kappa`) between the person's grade and the
  judge's, the judge's grade being the most likely grade of its ordinal distribution
  (P(0) = 1 − P(≥1), P(1) = P(≥1) − P(≥2), P(2) = P(≥2) − P(=3), P(3) = P(=3));
- AUROC of P(gain ≥ 2) for gain ≥ 2 (the chance a gold page outranks a non-gold one);
- the expected calibration error of P(gain ≥ 2): ten equal-width bins of the prediction, each bin's
  |mean prediction − share of gain ≥ 2| weighted by its share of the pages;
- false alarms: among pages the person graded 0, the share the judge grades ≥ 1;
- Kendall τ of the arms' order on nDCG@10 and nDCG@10(doc) when the judge's labels replace the person's
  (:func:`evalkit.simulate.rescore`), a page's label being its expected gain under the judge.

The trap class is one row, its distractor pages included, and its distractor pages are a row of their own.
:func:`verdicts` applies the bounds docs/judge.md stated before anything was measured.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import agreement as assessor_agreement
from .. import pooling
from ..pooling import GOLD, PageKey, Rankings

KAPPA_MIN = 0.40  # docs/judge.md: every class
FALSE_ALARMS_MAX = 0.20  # docs/judge.md: trap distractor pages, abstain queries
ECE_BINS = 10
PREDICTIONS = ("query", "doc", "page", "p_ge1", "p_ge2", "p_eq3")  # the layout the estimates read
DISTRACTOR_ROW = "trap: distractor pages"


def ordinal(p: np.ndarray) -> np.ndarray:
    """(rows, 4): P(gain = 0..3) from the cumulative chances (rows, 3)."""
    p = np.asarray(p, dtype=float).reshape(-1, 3)
    return np.column_stack([1 - p[:, 0], p[:, 0] - p[:, 1], p[:, 1] - p[:, 2], p[:, 2]])


def grade(p: np.ndarray) -> np.ndarray:
    """The judge's grade: the most likely grade of the ordinal distribution (ties to the lower grade)."""
    return ordinal(p).argmax(axis=1)


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    """The Mann-Whitney AUROC (ties count one half); NaN without both classes."""
    from scipy.stats import rankdata

    y, s = np.asarray(y, bool), np.asarray(s, float)
    pos, neg = int(y.sum()), int((~y).sum())
    if not pos or not neg:
        return math.nan
    r = rankdata(s)
    return float((r[y].sum() - pos * (pos + 1) / 2) / (pos * neg))


def ece(y: np.ndarray, p: np.ndarray, bins: int = ECE_BINS) -> float:
    """Expected calibration error over ``bins`` equal-width bins of [0, 1]; NaN with no rows."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    if not len(y):
        return math.nan
    which = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            total += m.mean() * abs(p[m].mean() - y[m].mean())
    return float(total)


def kappa(person: np.ndarray, judge: np.ndarray) -> float:
    pairs = zip(np.asarray(person, int).tolist(), np.asarray(judge, int).tolist(), strict=True)
    return assessor_agreement.weighted_kappa(assessor_agreement.confusion(pairs), power=1)


def measures(frame: pd.DataFrame) -> dict[str, float]:
    """Agreement on the graded rows of ``frame`` (columns gain, p_ge1, p_ge2, p_eq3)."""
    g = frame[frame["gain"].notna()]
    person = g["gain"].to_numpy(int)
    p = g[["p_ge1", "p_ge2", "p_eq3"]].to_numpy(float)
    judged = grade(p)
    zero = person == 0
    return {"queries": int(g["query"].nunique()), "pages": len(g),
            "kappa": kappa(person, judged) if len(g) else math.nan,
            "auroc_ge2": auroc(person >= GOLD, p[:, 1]), "ece_ge2": ece(person >= GOLD, p[:, 1]),
            "false_alarms": float((judged[zero] >= 1).mean()) if zero.any() else math.nan}


def class_table(preds: pd.DataFrame, taus: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """One row per class present (the trap class with its distractor pages), the trap's distractor pages
    alone, and ``all``; ``taus``: per row name, Kendall τ (page, doc) of the arms' order."""
    rows = {c: preds[preds["cls"] == c] for c in dict.fromkeys(preds["cls"])}
    if "trap" in rows:
        rows[DISTRACTOR_ROW] = rows["trap"][rows["trap"]["distractor"]]
    rows["all"] = preds
    out = []
    for name, part in rows.items():
        tau = (taus or {}).get(name, (math.nan, math.nan))
        out.append({"class": name, **measures(part), "tau_page": tau[0], "tau_doc": tau[1]})
    return pd.DataFrame(out).set_index("class")


def verdicts(table: pd.DataFrame) -> dict[str, str]:
    """Per class: "accepted" or "refused: <why>", by the bounds docs/judge.md stated before measuring
    (κ >= KAPPA_MIN in every class where κ is defined; false alarms <= FALSE_ALARMS_MAX on the trap's
    distractor pages and on abstain queries)."""
    out: dict[str, str] = {}
    for name, r in table.iterrows():
        if name in ("all", DISTRACTOR_ROW):
            continue
        why = []
        alarms_rule = name == "abstain" or (name == "trap" and DISTRACTOR_ROW in table.index)
        alarms = table.loc[DISTRACTOR_ROW,
                           "false_alarms"] if name == "trap" and DISTRACTOR_ROW in table.index else r["false_alarms"]
        if name == "abstain":  # every grade 0: κ is 0 or undefined whatever the judge says; false alarms decide
            if math.isnan(alarms):
                why.append("no measurable agreement (no graded pages)")
        elif math.isnan(r["kappa"]):
            why.append("no measurable agreement (too few graded pages, or one grade only)")
        elif r["kappa"] < KAPPA_MIN:
            why.append(f"kappa {r['kappa']:.2f} < {KAPPA_MIN:.2f}")
        if alarms_rule and not math.isnan(alarms) and alarms > FALSE_ALARMS_MAX:
            where = "distractor pages" if name == "trap" else "pages"
            why.append(f"grades {alarms:.0%} of the {where} the person graded 0 as relevant (> {FALSE_ALARMS_MAX:.0%})")
        out[str(name)] = "refused: " + "; ".join(why) + ": the person grades this class" if why else "accepted"
    return out


def prior_baseline(train: Sequence[tuple[Rankings, Sequence[tuple[PageKey, int]]]], test: Mapping[str, Rankings],
                   depth: int) -> dict[tuple[str, PageKey], float]:
    """The stopping estimate's staged logistic model (:class:`evalkit.pooling.Prior`) as a judge: fitted on
    the training queries' grades as the stopping estimate fits it, applied to each held-out query's pool
    with none of its pages read. Its P(gain >= 2) per (query, page)."""
    prior = pooling.Prior.from_judged(list(train), depth)
    out = {}
    for qid, rankings in test.items():
        for page, x in pooling.covariates(rankings, {}, depth).items():
            out[(qid, page)] = prior.chances(x)[GOLD - 1]
    return out

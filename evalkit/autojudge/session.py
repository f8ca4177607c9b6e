"""A judge over a query file: its features read, judges fitted without the grades they are asked about,
the agreement measured, the predictions written.

Three ways to keep a query's grades out of its own predictions: cross-fitting by query (K folds, the
default), a judge trained on other query files (``train_on``: another corpus), and a judge trained on a
share of the file's queries, stratified by class, tested on the rest (``train_share``).
"""
from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import recorded, simulate
from ..atomic import replacing, write_atomic
from ..pooling import Rankings
from ..qrels import QuerySet
from ..results import Results
from . import agreement, features, model
from .features import Settings, TextSignals

FOLDS = 5


@dataclass(frozen=True, eq=False)
class Source:
    """A query file with the results directory run on it and the judge's feature rows for every query."""

    qs: QuerySet
    results: Results
    answers: dict = field(repr=False)
    rankings: Mapping[str, Rankings] = field(repr=False)
    frame: pd.DataFrame = field(repr=False)
    settings: Settings = Settings()

    @property
    def name(self) -> str:
        return self.qs.name


def load(qs: QuerySet, results: Results, signals: TextSignals, depth: int = 10,
         arms: Sequence[str] | None = None) -> Source:
    """Read a query file's features from its results directory (every arm, or ``arms``) and text signals."""
    recorded.check_run(qs, results)
    ans = recorded.answers(results)
    unknown = [a for a in arms or () if a not in results.arms]
    if unknown:
        raise features.FeatureError(f"{results.path} has no arm {', '.join(unknown)} (it has "
                                    f"{', '.join(results.arms)})")
    settings = Settings(depth, tuple(arms or results.arms), signals.key)
    rankings = {q.id: recorded.rankings(ans, q.id) for q in qs.queries}
    return Source(qs, results, ans, rankings, features.table(qs.queries, rankings, signals, settings), settings)


def fit(frame: pd.DataFrame, settings: Settings, spec: model.Spec, db: sqlite3.Connection | None = None) -> model.Judge:
    """A judge fitted on the graded rows of ``frame``, from the cache when the same one was fitted before."""
    graded = frame[frame["gain"].notna()]
    names = list(settings.names)
    ident = model.identity(spec, settings.digest(), features.digest(graded, names))
    judge, _ = model.cached(db, ident, lambda: model.fit(graded[names].to_numpy(float), graded["gain"].to_numpy(int),
                                                         graded["query"].tolist(), names, spec, ident))
    return judge


def predict(judge: model.Judge, frame: pd.DataFrame) -> pd.DataFrame:
    p = judge.predict(frame[list(judge.names)].to_numpy(float)) if len(frame) else np.zeros((0, 3))
    keys = frame[["query", "doc", "page", "cls", "gain", "distractor", "pooled"]].reset_index(drop=True)
    return keys.assign(p_ge1=p[:, 0], p_ge2=p[:, 1], p_eq3=p[:, 2], model=judge.identity)


def _judged(src: Source, qids: set[str]) -> list[tuple[Rankings, list]]:
    return [(src.rankings[q.id], [((j.doc, j.page), j.gain) for j in q.judgments]) for q in src.qs.queries
            if q.id in qids]


def _with_prior(preds: pd.DataFrame, train: Sequence[tuple[Rankings, list]], test: Source, depth: int) -> pd.DataFrame:
    qids = set(preds["query"])
    chance = agreement.prior_baseline(train, {q: r for q, r in test.rankings.items() if q in qids}, depth)
    return preds.assign(prior_ge2=[chance.get((q, (d, int(p))), math.nan)
                                   for q, d, p in zip(preds["query"], preds["doc"], preds["page"], strict=True)])


def crossfit(src: Source, spec: model.Spec, k: int = FOLDS, db: sqlite3.Connection | None = None) -> pd.DataFrame:
    """Every query's rows predicted by a judge fitted on the other folds' queries (folds by query id)."""
    fold = model.folds(src.frame["query"].tolist(), k, spec.seed)
    parts = []
    for f in range(k):
        train, test = src.frame[fold != f], src.frame[fold == f]
        if not len(test):
            continue
        preds = predict(fit(train, src.settings, spec, db), test).assign(fold=f)
        parts.append(_with_prior(preds, _judged(src, set(train["query"])), src, src.settings.depth))
    return pd.concat(parts, ignore_index=True)


def share(qs: QuerySet, fraction: float, seed: int) -> set[str]:
    """The training queries of a ``fraction`` split: per class, that share (rounded, at least one) of the
    class's queries in the order of sha256(seed, id)."""
    if not 0 < fraction < 1:
        raise ValueError(f"train share {fraction}: want a number between 0 and 1")
    out: set[str] = set()
    for qs_ in qs.by_class().values():
        ids = sorted((q.id for q in qs_), key=lambda i: hashlib.sha256(f"{seed}\x00{i}".encode()).hexdigest())
        out |= set(ids[:max(1, round(fraction * len(ids)))])
    return out


def transfer(train: Sequence[Source], test: Source, spec: model.Spec, db: sqlite3.Connection | None = None,
             train_queries: set[str] | None = None) -> pd.DataFrame:
    """``test``'s rows predicted by one judge fitted on the training sources' rows (only ``train_queries``'
    rows of a source that is ``test`` itself, whose other queries are the ones predicted)."""
    for s in train:
        if s.settings.arms != test.settings.arms or s.settings.depth != test.settings.depth:
            raise features.FeatureError(f"query file {s.name} was read with arms {', '.join(s.settings.arms)} at depth "
                                        f"{s.settings.depth}; {test.name} with {', '.join(test.settings.arms)} at "
                                        "depth "
                                        f"{test.settings.depth}: the judge needs the same arms and depth")
    own = train_queries or set()
    frames = [s.frame[s.frame["query"].isin(own)] if s is test else s.frame for s in train]
    judged = [pair for s in train for pair in _judged(s, own if s is test else set(s.frame["query"]))]
    settings = Settings(test.settings.depth, test.settings.arms,
                        hashlib.sha256(json.dumps(sorted({s.settings.text for s in train})).encode()).hexdigest()[:32])
    judge = fit(pd.concat(frames, ignore_index=True), settings, spec, db)
    rows = test.frame[~test.frame["query"].isin(own)] if any(s is test for s in train) else test.frame
    return _with_prior(predict(judge, rows).assign(fold=-1), judged, test, test.settings.depth)


def rescored(src: Source, preds: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The held-out queries' per-query rows (every arm) rescored on nDCG@10 and nDCG@10(doc) under the
    person's grades and under the judge's labels: every page of ``preds`` at its expected gain,
    P(>= 1) + P(>= 2) + P(= 3) (as the stopping estimate fills unread pages). Its most likely grade would
    label almost every page 0 when relevant pages are rare, and leave every arm at 0: no order to compare."""
    qids = set(preds["query"])
    person = {q.id: recorded.gains(q) for q in src.qs.queries if q.id in qids}
    expected = preds[["p_ge1", "p_ge2", "p_eq3"]].to_numpy(float).sum(axis=1)
    judged: dict[str, dict] = {}
    for q, d, p, x in zip(preds["query"], preds["doc"], preds["page"], expected, strict=True):
        judged.setdefault(q, {})[(d, int(p))] = float(x)
    base = src.results.per_query[src.results.per_query["query"].isin(qids)]
    names = list(simulate.LEVELS.values())
    return (recorded.rescore(src.qs, src.answers, base, person, names),
            recorded.rescore(src.qs, src.answers, base, judged, names))


def taus(src: Source, preds: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Per class and over all answerable queries: Kendall τ of the arms' means on nDCG@10 and nDCG@10(doc)
    under the person's grades and under the judge's (the held-out queries of ``preds`` only)."""
    a, b = rescored(src, preds)
    out = {}
    for cls in [*dict.fromkeys(preds["cls"]), "all"]:
        pa, pb = (a[a["class"] != "abstain"], b[b["class"] != "abstain"]) if cls == "all" else \
            (a[a["class"] == cls], b[b["class"] == cls])
        page, doc = (simulate.kendall_tau(list(pa.groupby("arm")[m].mean()), list(pb.groupby("arm")[m].mean()))
                     for m in simulate.LEVELS.values())
        out[cls] = (page, doc)
    return out


def arm_means(src: Source, preds: pd.DataFrame) -> pd.DataFrame:
    """Each arm's mean nDCG@10 and nDCG@10(doc) over the held-out answerable queries under the person's
    grades and the judge's, and the difference (judge − person): an arm the judge favours beyond what the
    person's grades give it has a larger difference than the others (the circularity check)."""
    a, b = (f[f["class"] != "abstain"].groupby("arm")[list(simulate.LEVELS.values())].mean()
            for f in rescored(src, preds))
    out = pd.DataFrame(index=a.index)
    for level, m in simulate.LEVELS.items():
        out[f"person {level}"], out[f"judge {level}"] = a[m], b[m]
        out[f"judge − person {level}"] = b[m] - a[m]
    return out


@dataclass(frozen=True, eq=False)
class Outcome:
    """What `evalkit qrels judge` reports: the held-out predictions, the agreement table, the verdicts,
    the judge's identity and how it was trained."""

    preds: pd.DataFrame
    table: pd.DataFrame
    verdicts: dict[str, str]
    identity: str
    trained: str
    spec: model.Spec

    @property
    def baseline(self) -> dict[str, float]:
        """AUROC for gain >= 2 on the held-out graded pages of the pool: the judge, the stopping estimate's
        Prior, and "unjudged = 0" (a constant: 0.5)."""
        p = self.preds[self.preds["gain"].notna() & self.preds["pooled"]]
        y = p["gain"].to_numpy(int) >= 2
        return {"pages": len(p), "judge": agreement.auroc(y, p["p_ge2"]),
                "prior": agreement.auroc(y, p["prior_ge2"]), "unjudged = 0": agreement.auroc(y, np.zeros(len(p)))}


def outcome(src: Source, preds: pd.DataFrame, spec: model.Spec, trained: str) -> Outcome:
    identity = hashlib.sha256(json.dumps(sorted(set(preds["model"]))).encode()).hexdigest()
    table = agreement.class_table(preds, taus(src, preds))
    return Outcome(preds.assign(judge=identity), table, agreement.verdicts(table), identity, trained, spec)


def run(src: Source, spec: model.Spec, train_on: Sequence[Source] = (), train_share: float | None = None,
        k: int = FOLDS, db: sqlite3.Connection | None = None) -> Outcome:
    """The judge's held-out predictions and agreement on ``src``: trained on ``train_on`` (other files),
    on a ``train_share`` of its own queries, or cross-fitted by query in ``k`` folds."""
    if train_share is not None:
        own = share(src.qs, train_share, spec.seed)
        preds = transfer([*train_on, src], src, spec, db, own)
        how = f"trained on {len(own)} of {src.name}'s queries ({train_share:.0%} per class)" + \
              (f" and on {', '.join(s.name for s in train_on)}" if train_on else "") + "; tested on the others"
    elif train_on:
        preds = transfer(train_on, src, spec, db)
        how = f"trained on {', '.join(s.name for s in train_on)}; tested on {src.name}"
    else:
        preds = crossfit(src, spec, k, db)
        how = f"cross-fitted on {src.name}: {k} folds by query, each fold predicted by a judge trained on the others"
    return outcome(src, preds, spec, how)


def render(out: Outcome) -> str:
    def fmt(v: float) -> str:
        return "—" if isinstance(v, float) and math.isnan(v) else f"{v:.3f}"

    t = out.table.copy()
    cols = {"queries": "queries", "pages": "graded pages", "kappa": "κ (linear)", "auroc_ge2": "AUROC ≥2",
            "ece_ge2": "ECE ≥2", "false_alarms": "false alarms", "tau_page": "τ nDCG@10", "tau_doc": "τ nDCG@10(doc)"}
    t = t.rename(columns=cols)
    b = out.baseline
    lines = [f"judge {out.identity[:16]} ({out.spec.label}, seed {out.spec.seed}): {out.trained}",
             "agreement on grades the judge did not train on (grade = the most likely of its ordinal distribution; "
             f"ECE over {agreement.ECE_BINS} equal bins):", t.to_string(float_format=fmt), "",
             f"AUROC for gain >= 2 on {b['pages']} held-out graded pool pages: judge {fmt(b['judge'])}, the stopping "
             f"estimate's Prior {fmt(b['prior'])}, unjudged = 0 {fmt(b['unjudged = 0'])}", ""]
    lines += [f"{cls}: {v}" for cls, v in out.verdicts.items()]
    return "\n".join(lines)


def write(out: Outcome, folder: Path, command: str = "") -> list[Path]:
    """predictions.parquet (one row per held-out (query, page): query, doc, page, p_ge1, p_ge2, p_eq3, then
    the person's gain, class, fold, the judge's identity) and judge.json (identity, training, agreement,
    verdicts) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    cols = [*agreement.PREDICTIONS, "gain", "cls", "distractor", "pooled", "fold", "model", "judge"]
    pq = folder / "predictions.parquet"
    with replacing(pq) as tmp:
        out.preds[cols].to_parquet(tmp, index=False)
    table = json.loads(out.table.reset_index().to_json(orient="records"))
    meta = {"judge": out.identity, "models": sorted(set(out.preds["model"])), "spec": out.spec.describe(),
            "trained": out.trained, "command": command, "agreement": table, "verdicts": out.verdicts,
            "auroc_ge2_pool": out.baseline}
    js = folder / "judge.json"
    write_atomic(js, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return [pq, js]

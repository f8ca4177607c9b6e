"""The judge's model: three cumulative binary targets (gain >= 1, >= 2, = 3), each a linear (logistic) or
a boosted (HistGradientBoosting) classifier over the features, calibrated on held-back grades (isotonic or
Platt), the three chances made monotone (P(>= 3) <= P(>= 2) <= P(>= 1)).

scikit-learn only fits (the optional extra ``judge``). A fitted judge is plain arrays (coefficients; the
trees' nodes; the calibration maps), predicted with NumPy: it is stored in the cache as an ``.npz`` read
with ``allow_pickle=False``, so a cached model is data, never code. Its identity is the sha256 of the
model's specification (kind, hyperparameters, calibration, scikit-learn's version), the feature settings,
the digest of the rows it was trained on (grades and features) and the seed: the cache key, recorded
wherever its predictions are used; :meth:`Judge.weights` is the sha256 of the fitted arrays themselves.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np

TARGETS = (1, 2, 3)  # P(gain >= g)
MODELS = ("logistic", "hgb")
CALIBRATIONS = ("isotonic", "platt", "none")
HGB = {"max_iter": 100, "learning_rate": 0.1, "max_leaf_nodes": 15, "min_samples_leaf": 20,
       "l2_regularization": 1.0}
LOGISTIC = {"C": 1.0}
LINEAR, TREES = 0, 1


class JudgeModelError(ValueError):
    """A judge cannot be built as asked (an unknown model, no grades to learn from)."""


@dataclass(frozen=True)
class Spec:
    """How a judge is fitted: ``model`` (logistic | hgb), ``calibration`` (isotonic | platt | none),
    ``seed``, and the folds (by query) whose out-of-fold scores the calibration is fitted on."""

    model: str = "hgb"
    calibration: str = "isotonic"
    seed: int = 0
    calibration_folds: int = 3

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise JudgeModelError(f"judge model {self.model!r}: want one of {', '.join(MODELS)}")
        if self.calibration not in CALIBRATIONS:
            raise JudgeModelError(f"judge calibration {self.calibration!r}: want one of {', '.join(CALIBRATIONS)}")

    @property
    def label(self) -> str:
        return f"{self.model}+{self.calibration}"

    def describe(self) -> dict:
        """The specification as recorded: hyperparameters and the fitting library's version included."""
        return {**asdict(self), "hyperparameters": HGB if self.model == "hgb" else LOGISTIC,
                "scikit-learn": metadata.version("scikit-learn")}


def identity(spec: Spec, settings_digest: str, rows_digest: str) -> str:
    blob = json.dumps([spec.describe(), settings_digest, rows_digest], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def folds(groups: Sequence[str], k: int, seed: int) -> np.ndarray:
    """Each row's fold, by its group (query id) alone: groups ordered by sha256 of seed and id, dealt round
    robin into ``k`` folds. A query's fold depends on its id and the seed, never on any grade."""
    names = sorted(set(groups), key=lambda g: hashlib.sha256(f"{seed}\x00{g}".encode()).hexdigest())
    fold = {g: i % k for i, g in enumerate(names)}
    return np.array([fold[g] for g in groups], dtype=np.int64)


# ---- raw scores: what each target's classifier says before calibration ----------------------------------

def _constant(y: np.ndarray, d: int) -> dict[str, np.ndarray]:
    """A target with one class in training: the smoothed rate, as a linear model with no slope."""
    rate = (y.sum() + 0.5) / (len(y) + 1.0)
    return {"type": np.array([LINEAR]), "mean": np.zeros(d), "scale": np.ones(d), "coef": np.zeros(d),
            "intercept": np.array([math.log(rate / (1 - rate))])}


def _fit_raw(model: str, x: np.ndarray, y: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    if y.min() == y.max():
        return _constant(y, x.shape[1])
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression

        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        lr = LogisticRegression(max_iter=2000, **LOGISTIC).fit((x - mean) / scale, y)
        return {"type": np.array([LINEAR]), "mean": mean, "scale": scale, "coef": lr.coef_[0].copy(),
                "intercept": lr.intercept_.copy()}
    from sklearn.ensemble import HistGradientBoostingClassifier

    est = HistGradientBoostingClassifier(early_stopping=False, random_state=seed, **HGB).fit(x, y)
    return _trees([p[0].nodes for p in est._predictors], float(np.ravel(est._baseline_prediction)[0]))


def _trees(trees: list[np.ndarray], baseline: float) -> dict[str, np.ndarray]:
    """Every tree's nodes in one set of flat arrays (child indices shifted by the tree's offset)."""
    offsets = np.cumsum([0, *(len(t) for t in trees)])[:-1]
    nodes = np.concatenate(trees)
    shift = np.repeat(offsets, [len(t) for t in trees])
    if nodes["is_categorical"].any():  # pragma: no cover - no categorical features are declared
        raise JudgeModelError("categorical splits are not supported")
    return {"type": np.array([TREES]), "feature": nodes["feature_idx"].astype(np.int64),
            "threshold": nodes["num_threshold"].astype(np.float64),
            "missing_left": nodes["missing_go_to_left"].astype(bool),
            "left": nodes["left"].astype(np.int64) + shift, "right": nodes["right"].astype(np.int64) + shift,
            "leaf": nodes["is_leaf"].astype(bool), "value": nodes["value"].astype(np.float64),
            "roots": offsets.astype(np.int64), "baseline": np.array([baseline]),
            "depth": np.array([int(nodes["depth"].max(initial=0))])}


def raw_score(p: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """A target's decision function (log-odds before calibration) for rows ``x``."""
    if p["type"][0] == LINEAR:
        return ((x - p["mean"]) / p["scale"]) @ p["coef"] + p["intercept"][0]
    node = np.broadcast_to(p["roots"][:, None], (len(p["roots"]), len(x))).copy()
    rows = np.arange(len(x))[None, :]
    for _ in range(int(p["depth"][0])):
        v = x[rows, p["feature"][node]]
        left = np.where(np.isnan(v), p["missing_left"][node], v <= p["threshold"][node])
        node = np.where(p["leaf"][node], node, np.where(left, p["left"][node], p["right"][node]))
    return p["baseline"][0] + p["value"][node].sum(axis=0)


# ---- calibration -------------------------------------------------------------------------------------

def _fit_calibration(kind: str, s: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    if kind == "none" or y.min() == y.max():
        return {"kind": np.array([0]), "a": np.array([1.0]), "b": np.array([0.0])}
    if kind == "platt":
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression(C=1e6, max_iter=2000).fit(s[:, None], y)
        return {"kind": np.array([0]), "a": lr.coef_[0].copy(), "b": lr.intercept_.copy()}
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(s, y)
    return {"kind": np.array([1]), "x": iso.X_thresholds_.astype(float), "y": iso.y_thresholds_.astype(float)}


def calibrate(c: dict[str, np.ndarray], s: np.ndarray) -> np.ndarray:
    if c["kind"][0] == 1:
        return np.interp(s, c["x"], c["y"])
    return 1.0 / (1.0 + np.exp(-(c["a"][0] * s + c["b"][0])))


def _out_of_fold(model: str, x: np.ndarray, y: np.ndarray, fold: np.ndarray, seed: int) -> np.ndarray:
    s = np.zeros(len(y))
    for k in np.unique(fold):
        train = fold != k
        s[~train] = raw_score(_fit_raw(model, x[train], y[train], seed), x[~train])
    return s


# ---- the judge ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Judge:
    """A fitted judge: its identity, the feature names it reads (in order) and its arrays."""

    identity: str
    names: tuple[str, ...]
    arrays: dict[str, np.ndarray] = field(repr=False)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(rows, 3): P(gain >= 1), P(gain >= 2), P(gain = 3), monotone in the grade."""
        x = np.asarray(x, dtype=np.float64).reshape(-1, len(self.names))
        cols = []
        for g in TARGETS:
            raw = {k.split(".", 1)[1]: v for k, v in self.arrays.items() if k.startswith(f"t{g}.")}
            cal = {k.split(".", 1)[1]: v for k, v in self.arrays.items() if k.startswith(f"c{g}.")}
            cols.append(calibrate(cal, raw_score(raw, x)))
        return np.minimum.accumulate(np.clip(np.column_stack(cols), 0.0, 1.0), axis=1)

    def weights(self) -> str:
        """sha256 of the fitted arrays (names, dtypes, bytes)."""
        h = hashlib.sha256()
        for k in sorted(self.arrays):
            h.update(f"{k}:{self.arrays[k].dtype.str}:".encode())
            h.update(np.ascontiguousarray(self.arrays[k]).tobytes())
        return h.hexdigest()

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        arrays: dict[str, Any] = {"__names__": np.array(self.names, dtype=str), **self.arrays}
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, identity_: str, blob: bytes) -> Judge:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        return cls(identity_, tuple(str(n) for n in arrays.pop("__names__")), arrays)


def fit(x: np.ndarray, gains: np.ndarray, groups: Sequence[str], names: Sequence[str], spec: Spec,
        identity_: str) -> Judge:
    """Fit the three targets on graded rows (``groups``: each row's query id); each target's calibration is
    fitted on out-of-fold scores (folds by query) and applied to the model refitted on every row. On one
    thread: the boosted model's OpenMP threads, on a shared machine, spend ten times the work waiting."""
    import sklearn.ensemble  # noqa: F401 - loads the OpenMP runtime, so the limit below reaches it
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _fit(x, gains, groups, names, spec, identity_)


def _fit(x: np.ndarray, gains: np.ndarray, groups: Sequence[str], names: Sequence[str], spec: Spec,
         identity_: str) -> Judge:
    x, gains = np.asarray(x, dtype=np.float64), np.asarray(gains)
    if not len(gains):
        raise JudgeModelError("no graded pages to train the judge on")
    k = min(spec.calibration_folds, len(set(groups)))
    fold = folds(groups, k, spec.seed) if k >= 2 else None
    arrays: dict[str, np.ndarray] = {}
    for g in TARGETS:
        y = (gains >= g).astype(int)
        raw = _fit_raw(spec.model, x, y, spec.seed)
        kind = spec.calibration if fold is not None else "none"
        s = _out_of_fold(spec.model, x, y, fold, spec.seed) if kind != "none" and fold is not None else np.zeros(0)
        cal = _fit_calibration(kind, s, y[: len(s)])
        arrays.update({f"t{g}.{k_}": v for k_, v in raw.items()})
        arrays.update({f"c{g}.{k_}": v for k_, v in cal.items()})
    return Judge(identity_, tuple(names), arrays)


# ---- the cache: one table in the cache directory's SQLite file -------------------------------------------

SCHEMA = "CREATE TABLE IF NOT EXISTS judge_models (identity TEXT PRIMARY KEY, names TEXT NOT NULL, blob BLOB NOT NULL)"


def cached(db: sqlite3.Connection | None, identity_: str, build) -> tuple[Judge, bool]:
    """The judge of ``identity_`` from the cache, else ``build()`` stored under it; and whether it was reused."""
    if db is None:
        return build(), False
    db.execute(SCHEMA)
    row = db.execute("SELECT blob FROM judge_models WHERE identity=?", (identity_,)).fetchone()
    if row is not None:
        return Judge.from_bytes(identity_, row[0]), True
    judge = build()
    with db:
        db.execute("INSERT OR REPLACE INTO judge_models VALUES (?,?,?)",
                   (identity_, json.dumps(list(judge.names)), judge.to_bytes()))
    return judge, False

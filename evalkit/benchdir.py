"""Reading a bench directory (what ``evalkit bench`` wrote, see :mod:`evalkit.bench`): its figures, each also
per reference workload, its environment, and the scale figures where there are some. Apart from the bench
itself, which imports the arms it times, so the docs' figures read a bench without importing them."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from . import calibration

TIME_UNITS = ("ms", "ms/page")  # divided by the reference time: how many reference workloads one takes
RATE_UNITS = ("pages/s", "windows/s")  # multiplied by it: how many items are done in one reference's time


def per_reference(value: float, unit: str, reference_ms: float) -> float:
    """A figure relative to the calibration workload (:mod:`evalkit.calibration`); NaN for ratios and sizes,
    which are not times."""
    if unit in TIME_UNITS:
        return value / reference_ms
    if unit in RATE_UNITS:
        return value * reference_ms / 1000
    return math.nan


def with_ratios(figures: pd.DataFrame, env: dict) -> pd.DataFrame:
    """``figures`` with ``calibrated`` (the value relative to its reference reading: the one taken with its
    section, else -- a directory from before sections were calibrated -- the environment's wall reading;
    NaN where there is none) and its unit."""
    timed = figures["unit"].isin(TIME_UNITS + RATE_UNITS)
    given = figures["reference"].astype(object) if "reference" in figures else pd.Series(None, index=figures.index)
    kind = given.where(given.notna() & (given != ""), timed.map({True: "wall", False: ""}))  # older files: wall
    own = figures["reference_ms"] if "reference_ms" in figures else pd.Series(math.nan, index=figures.index)
    ref = own.fillna(calibration.reference_ms(env))
    return figures.assign(reference=kind, calibrated=[per_reference(v, u, r) for v, u, r in
                                                      zip(figures["value"], figures["unit"], ref, strict=True)],
                          calibrated_unit=["x reference" if u in TIME_UNITS else "per reference" if u in RATE_UNITS
                                           else "" for u in figures["unit"]])


def load(path: Path | str) -> dict[str, pd.DataFrame | dict]:
    """A bench directory's files: ``figures``, ``environment``, and ``scale``/``fit`` when present."""
    path = Path(path)
    if not (path / "bench.csv").exists():
        raise FileNotFoundError(f"{path} is not a bench directory (no bench.csv): run `evalkit bench --out {path}`")
    env = json.loads((path / "environment.json").read_text())
    out: dict[str, pd.DataFrame | dict] = {"figures": with_ratios(pd.read_csv(path / "bench.csv"), env),
                                           "environment": env}
    if (path / "scale.csv").exists():
        out["scale"] = pd.read_csv(path / "scale.csv")
        out["fit"] = pd.read_csv(path / "scale_fit.csv")
    return out

"""Which arms a report is about: the best arm, the baseline (given, or the stored gate verdict's) and the
pair compared query by query."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import resultsdir
from ..results import Results
from ..text import split_top
from .tables import _answerable

CONCLUSION_MEASURE = "nDCG@10(doc)"  # the measure the shipped gate rules decide on


def arm_means(results: Results, measure: str = CONCLUSION_MEASURE) -> pd.Series:
    """Mean ``measure`` per arm over the answerable queries, highest first (manifest order on a tie)."""
    means = _answerable(results).groupby("arm", sort=False)[measure].mean().reindex(results.arms).dropna()
    return means.sort_values(ascending=False, kind="stable")


def best_arm(results: Results, measure: str = CONCLUSION_MEASURE, besides: str | None = None) -> str:
    """The arm with the highest mean ``measure`` over answerable queries, other than ``besides`` (so a
    baseline that leads is gated against the runner-up); ValueError when no arm is left to choose."""
    means = arm_means(results, measure).drop(index=[results.arm(besides)] if besides else [])
    if means.empty:
        raise ValueError(f"{results.path}: no arm{' besides ' + besides if besides else ''} scores "
                         f"{measure} on an answerable query")
    return str(means.index[0])


def resolve_baseline(results: Results, baseline: str | None = None) -> str | None:
    """The arm the report compares against: ``baseline`` (checked: an unknown arm raises ValueError), else the
    baseline of the gate verdict stored in this directory when that baseline is an arm of this same run."""
    if baseline:
        try:
            return results.arm(baseline)
        except resultsdir.ResultsError as e:
            raise ValueError(str(e)) from None
    from ..gating import GATE_FILE, read

    try:
        base = read(results.path / GATE_FILE).computed_on.get("baseline", {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    same = Path(str(base.get("path", ""))).resolve() == results.path.resolve()
    return str(base["arm"]) if same and base.get("arm") in results.arms else None


def default_pair(results: Results, baseline: str | None = None) -> tuple[str, str] | None:
    """The per-query delta pair that answers a question: (baseline, best other arm), or without a baseline
    (runner-up, best); None with fewer than two arms or no answerable query."""
    means = arm_means(results)
    if len(means) < 2:
        return None
    if baseline is None:
        return str(means.index[1]), str(means.index[0])
    return baseline, best_arm(results, besides=baseline)


def resolve_pair(results: Results, pair: Sequence[str] | str | None = None,
                 baseline: str | None = None) -> tuple[str, str] | None:
    """The two arms to compare per query: ``pair`` (two labels, or "A,B"), else :func:`default_pair` (the
    best arm against ``baseline``); ``None`` when the run has a single arm or no answerable query (a held-out
    set of abstain queries: the deltas are over answerable ones). Unknown labels raise ValueError listing
    the run's arms."""
    if pair is None:
        return default_pair(results, baseline)
    names = split_top(pair, ",") if isinstance(pair, str) else list(pair)
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"pair must name two different arms, got {pair!r}")
    for n in names:
        if n not in results.arms:
            raise ValueError(f"arm {n!r} is not in {results.path} (arms: {', '.join(results.arms)})")
    return names[0], names[1]

"""tune: sweep an arm's parameters on one query set, then gate the choice on another.

A parameter chosen on the queries it is reported on is a fit, not a result. ``tune`` keeps the two apart:
every candidate runs on the *tuning* set and the best by a declared measure (mean over the answerable
queries; the first in grid order on a tie) is chosen there; only then are the chosen arm and the baseline
run on the *held-out* set and judged by the gate's rules. The report prints the sweep's figures as
in-sample, and the held-out set must share no query (by text) with the tuning set: a report that would
present a tuning-set figure as held out is refused (:class:`TuneError`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import arms, gating, measures
from .comparison import side
from .corpora import Corpus
from .pages import PageStore
from .qrels import QuerySet
from .results import Results
from .runner import run


class TuneError(ValueError):
    """A sweep that cannot be run or reported honestly; the message names the set, arm or measure."""


@dataclass(frozen=True)
class QuerySetOn:
    """A query set and the corpus it is run on."""

    corpus: Corpus
    store: PageStore
    queries: QuerySet  # it knows its file (QuerySet.path), which the runs record

    @property
    def name(self) -> str:
        return f"{self.corpus.name} × {self.queries.name}"


def grid(base: str, axes: dict[str, list[str]]) -> list[str]:
    """The specs of ``base`` with every combination of ``axes`` (parameter -> values), in order: the first
    axis varies slowest. A parameter already in ``base`` is replaced."""
    name, params = arms.parse_spec(base)
    specs = []
    for values in itertools.product(*axes.values()):
        p = {**params, **dict(zip(axes, values))}
        specs.append(f"{name}({','.join(f'{k}={v}' for k, v in p.items())})" if p else name)
    return specs


def means(results: Results, measure: str) -> pd.Series:
    """Each arm's mean of ``measure`` over the answerable queries, arms in run order."""
    pq = results.per_query
    answerable = pq[pq["class"] != "abstain"]
    return pd.Series({arm: answerable[answerable["arm"] == arm][measure].mean() for arm in results.arms}, name=measure)


def check_held_out(tuned: QuerySetOn, held_out: QuerySetOn) -> None:
    """Refuse a held-out set that is the tuning set, or shares a query with it: its figures would be in-sample."""
    shared = {q.text.strip().casefold() for q in tuned.queries.queries} & {
        q.text.strip().casefold() for q in held_out.queries.queries}
    if tuned.queries.digest == held_out.queries.digest or shared:
        what = "is the tuning set" if tuned.queries.digest == held_out.queries.digest else \
            f"shares {len(shared)} query text(s) with the tuning set, e.g. {sorted(shared)[0]!r}"
        raise TuneError(f"the held-out set {held_out.name} {what}: its figures would be in-sample, not held out; "
                        "gate on another query set")


@dataclass(frozen=True)
class Tuned:
    """A sweep and its held-out verdict. ``sweep`` holds in-sample figures only (the tuning set's)."""

    measure: str
    tuned_on: str
    held_out_on: str
    sweep: pd.Series
    chosen: str
    baseline: str
    verdict: gating.Verdict | None  # None when the sweep chose the baseline itself: nothing to gate
    sweep_dir: Path
    held_out_dir: Path

    def text(self) -> str:
        lines = [f"tuned on {self.tuned_on}: {self.measure}, IN-SAMPLE (chosen on these queries; not a result)"]
        lines += [f"  {'*' if arm == self.chosen else ' '} {value:.3f}  {arm}" for arm, value in self.sweep.items()]
        lines.append(f"chosen: {self.chosen}   (results: {self.sweep_dir})")
        lines.append(f"held out on {self.held_out_on}: gate of the chosen arm against {self.baseline} "
                     f"(results: {self.held_out_dir})")
        lines.append(self.verdict.text() if self.verdict else "  the sweep chose the baseline: nothing to gate")
        return "\n".join(lines)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code if self.verdict else 0


def tune(candidates: list[str], tuned: QuerySetOn, held_out: QuerySetOn, out: Path, measure: str = "nDCG@10(doc)",
         baseline: str = "hybrid(keyword=global-index)", rules: Path | str | None = None, k: int = 100,
         progress: bool = True) -> Tuned:
    """Run ``candidates`` on ``tuned`` (``out/tuned-<corpus>``), choose the best by ``measure``, then run it and
    ``baseline`` on ``held_out`` (``out/held-out-<corpus>``) and gate it there with ``rules``. Directories
    that hold these runs already are resumed, so nothing is asked twice."""
    check_held_out(tuned, held_out)
    if measure not in measures.DEFAULT or measure == "Judged@10":
        raise TuneError(f"tune: cannot choose by {measure!r}; a results directory holds "
                        f"{', '.join(m for m in measures.DEFAULT if m != 'Judged@10')}")
    if not candidates:
        raise TuneError("tune: no candidate arm to sweep")
    sweep_dir = run(tuned.corpus, tuned.store, tuned.queries, candidates, out / f"tuned-{tuned.corpus.name}", k,
                    resume=True, progress=progress)
    table = means(Results.load(sweep_dir), measure)
    chosen = str(table.idxmax())
    base_label = arms.make(baseline, tuned.corpus, tuned.store).label
    specs = [baseline] if chosen == base_label else [baseline, chosen]
    held_dir = run(held_out.corpus, held_out.store, held_out.queries, specs, out / f"held-out-{held_out.corpus.name}",
                   k, resume=True, progress=progress)
    verdict = None
    if chosen != base_label:
        verdict = gating.evaluate(side(held_dir, base_label), side(held_dir, chosen), rules)
        (held_dir / gating.GATE_FILE).write_text(verdict.to_json())
    return Tuned(measure, tuned.name, held_out.name, table, chosen, base_label, verdict, sweep_dir, held_dir)

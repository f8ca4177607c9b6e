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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import arms, gating, measures, timing
from .comparison import side
from .corpora import Corpus
from .pages import PageStore
from .qrels import QuerySet
from .results import Results
from .runner import CheckedArms, run


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
        p = {**params, **dict(zip(axes, values, strict=True))}
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


def choose(table: pd.DataFrame, measure: str, keep: dict[str, float], baseline: str) -> str:
    """The arm (row) of ``table`` (arms × measures, tuning-set means) with the highest ``measure`` among those
    whose every kept measure is at least the baseline's minus its margin (``keep``: measure -> margin); the
    first in row order on a tie; the baseline when no other arm keeps them. Pure, so the rule is testable."""
    ok = table.index != baseline
    for m, margin in keep.items():
        ok &= table[m] >= table.loc[baseline, m] - margin
    return str(table.loc[ok, measure].idxmax()) if ok.any() else baseline


@dataclass(frozen=True)
class Tuned:
    """A sweep and its held-out verdict. ``sweep`` holds in-sample figures only (the tuning set's): the
    choice's measure, then each kept measure."""

    measure: str
    tuned_on: str
    held_out_on: str
    sweep: pd.DataFrame
    chosen: str
    baseline: str
    verdict: gating.Verdict | None  # None when the sweep chose the baseline itself: nothing to gate
    sweep_dir: Path
    held_out_dir: Path
    keep: dict[str, float]

    def text(self) -> str:
        kept = "".join(f"; keeping {m} within {margin} of the baseline's" for m, margin in self.keep.items())
        lines = [f"tuned on {self.tuned_on}: {self.measure}{kept}, IN-SAMPLE (chosen on these queries; not a result)"]
        lines += [f"  {'*' if arm == self.chosen else ' '} {'  '.join(f'{v:.3f}' for v in row)}  {arm}"
                  + ("   (baseline)" if arm == self.baseline else "") for arm, row in self.sweep.iterrows()]
        lines.append(f"chosen: {self.chosen}   (results: {self.sweep_dir})")
        lines.append(f"held out on {self.held_out_on}: gate of the chosen arm against {self.baseline} "
                     f"(results: {self.held_out_dir})")
        lines.append(self.verdict.text() if self.verdict else "  the sweep chose the baseline: nothing to gate")
        return "\n".join(lines)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code if self.verdict else 0


def check_measure(measure: str) -> None:
    if measure not in measures.DEFAULT or measure == "Judged@10":
        raise TuneError(f"tune: cannot choose by or keep {measure!r}; a results directory holds "
                        f"{', '.join(m for m in measures.DEFAULT if m != 'Judged@10')}")


def tune(candidates: Sequence[str] | CheckedArms, tuned: QuerySetOn, held_out: QuerySetOn, out: Path,
         measure: str = "nDCG@10(doc)", baseline: str = "hybrid(keyword=global-index)",
         rules: Path | str | None = None, k: int = 100, progress: bool = True,
         keep: dict[str, float] | None = None) -> Tuned:
    """Run ``candidates`` on ``tuned`` (``out/tuned-<corpus>``), choose the best by ``measure`` (with ``keep``,
    among those that keep each kept measure within its margin of the baseline's there: :func:`choose`), then
    run it and ``baseline`` on ``held_out`` (``out/held-out-<corpus>``) and gate it there with ``rules``.
    Directories that hold these runs already are resumed, so nothing is asked twice. ``candidates`` that
    :func:`~evalkit.runner.check_arms` accepted already (the CLI checks them before it opens a corpus) are not
    checked again."""
    check_held_out(tuned, held_out)
    keep = keep or {}
    for m in (measure, *keep):
        check_measure(m)
    specs = list(candidates.specs if isinstance(candidates, CheckedArms) else candidates)
    if not specs:
        raise TuneError("tune: no candidate arm to sweep")
    base_label = arms.make(baseline, tuned.corpus, tuned.store).label
    # with --keep the baseline is swept too, unless a candidate is it: told from the specs (against the
    # baseline as written and as labelled, which has the configured defaults filled in), not by building each
    swept_already = any(arms.same_arm([c, b]) for c in specs for b in (baseline, base_label))
    swept = specs + ([baseline] if keep and not swept_already else [])
    sweep = candidates if isinstance(candidates, CheckedArms) and swept == specs else swept  # run checks the rest
    sweep_dir = run(tuned.corpus, tuned.store, tuned.queries, sweep, out / f"tuned-{tuned.corpus.name}", k,
                    resume=True, progress=progress)
    results = Results.load(sweep_dir)
    table = pd.concat([means(results, m) for m in dict.fromkeys([measure, *keep])], axis=1)
    chosen = choose(table, measure, keep, base_label) if keep else str(table[measure].idxmax())
    specs = [baseline] if chosen == base_label else [baseline, chosen]
    held_dir = run(held_out.corpus, held_out.store, held_out.queries, specs, out / f"held-out-{held_out.corpus.name}",
                   k, resume=True, progress=progress)
    verdict = None
    if chosen != base_label:  # the latency rule re-times both arms side by side, as `evalkit gate` does
        base_side, cand_side = side(held_dir, base_label), side(held_dir, chosen)
        timed = timing.for_gate(base_side, cand_side, rules, held_out.store.path)
        verdict = gating.evaluate(base_side, cand_side, rules, timing=timed)
        gating.record(verdict, held_dir)
    return Tuned(measure, tuned.name, held_out.name, table, chosen, base_label, verdict, sweep_dir, held_dir, keep)

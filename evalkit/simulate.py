"""Judging replayed: how many pages does a decision need? The recorded judgments are the assessor.

For each pooling strategy (:mod:`evalkit.pooling`), every query's pool is read in the order the strategy
asks for, each page judged with its recorded gain; a page the query set never judged counts as gain 0
(the oracle knows only what was read; such pages are counted and reported). After every per-query budget
of pages the arms' answers (``runs/*.jsonl`` of a results directory) are rescored with the judgments
found so far and compared with their scores under the full judgments: the share of gain >= 2 pages found,
Kendall tau of the arms' order on nDCG@10 and nDCG@10(doc), the largest change of any arm's mean, and
whether the gate (``gate.toml``'s rules, :func:`evalkit.gating.evaluate`) still decides every ordered pair
of arms the same way. Leave-one-arm-out builds the pool without one arm and scores that arm, which is how
a new retriever is treated by a pool it did not help build.

Entry point: ``simulate(qs, results, strategies, rules) -> Simulation``; ``fig_simulation(sim)`` draws it.
Nothing here imports the runner or PyMuPDF.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from . import comparison, gating, pooling
from .defaults import STRATEGIES
from .effort import ReadingModel
from .pooling import GOLD, RELEVANT, TAU, PageKey, kendall_tau
from .qrels import QuerySet
from .recorded import Rejudged, answers, check_run, gains, rankings, rescore
from .records import Answer
from .results import Results
from .rules import load as load_rules

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REFERENCE = "depth(k=10)"  # today's pool: every arm's top 10, read whole
BUDGETS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 23, 26, 30, 35, 40, 50, 60, 70)
LEVELS = {"page": "nDCG@10", "doc": "nDCG@10(doc)"}
LOO_MEASURES = (*LEVELS.values(), "Judged@10")
SIGNALS = ("stop", "knee")  # the stopping estimate's signal, the knee method's


Decision = tuple[bool, tuple[str, ...]]  # the gate passed, and every rule's status


class Gatekeeper:
    """The gate's decision for every ordered pair of a run's arms under rescored rows, remembered by the
    two arms' rows: a pair whose rows did not change is not decided again (the gate's resampling is what
    a simulation spends its time on)."""

    def __init__(self, results: Results, rules: Path | str):
        self.results, self.rules = results, rules
        self.needs = [m for m in dict.fromkeys(getattr(r, "measure", None) for r in load_rules(rules).rules) if m]
        self._seen: dict[tuple, Decision] = {}

    def decide(self, frame: pd.DataFrame) -> dict[tuple[str, str], Decision]:
        view = Rejudged(self.results.path, frame)
        keys = {a: pd.util.hash_pandas_object(frame[frame["arm"] == a][self.needs], index=False).sum()
                for a in self.results.arms}
        out = {}
        for a in self.results.arms:
            for b in self.results.arms:
                if a != b:
                    key = (a, b, keys[a], keys[b])
                    if key not in self._seen:
                        v = gating.evaluate(comparison.Side(view, a), comparison.Side(view, b), self.rules)
                        self._seen[key] = (v.passed, tuple(o.status for o in v.outcomes))
                    out[(a, b)] = self._seen[key]
        return out


def arm_means(frame: pd.DataFrame, measure: str) -> pd.Series:
    answerable = frame[frame["class"] != "abstain"]
    return answerable.groupby("arm")[measure].mean()


@dataclass(frozen=True)
class Replay:
    """One strategy's reading order for every query (pages with the oracle's gains), and how many of the
    pages it read the query set never judged (counted as gain 0)."""

    strategy: str
    orders: dict[str, tuple[tuple[PageKey, int], ...]]
    unjudged: int

    def at(self, budget: int | None) -> dict[str, dict[PageKey, int]]:
        return {q: dict(o[:budget]) for q, o in self.orders.items()}

    def pages(self, budget: int | None) -> int:
        return sum(len(o[:budget]) for o in self.orders.values())


def _gain(known: Mapping[PageKey, int], page: PageKey) -> int:
    """The assessor of a replay: the recorded gain, 0 for a page nobody judged."""
    return known.get(page, 0)


def replay(qs: QuerySet, ans: Mapping[str, Mapping[str, Answer]], spec: str,
           without: str | None = None) -> Replay:
    """Read every query's pool to the end in ``spec``'s order (``without``: leave that arm out of the pool)."""
    strat = pooling.strategy(spec)
    orders, unjudged = {}, 0
    for q in qs.queries:
        known = gains(q)
        r = {a: x for a, x in rankings(ans, q.id).items() if a != without}
        orders[q.id] = pooling.replay(strat.for_query(q.id), r, partial(_gain, known))
        unjudged += sum(p not in known for p, _ in orders[q.id])
    return Replay(strat.label, orders, unjudged)


@dataclass(frozen=True)
class Truth:
    """What the full judgments say: the rescored rows, each arm's means, the gate's decisions."""

    frame: pd.DataFrame
    means: dict[str, pd.Series]
    decisions: dict[tuple[str, str], Decision]
    gold: int  # pages of gain >= 2 in the answerable queries' judgments


def truth(qs: QuerySet, results: Results, ans, names: Sequence[str], keeper: Gatekeeper | None) -> Truth:
    frame = rescore(qs, ans, results.per_query, {q.id: gains(q) for q in qs.queries}, [*LEVELS.values(), *names])
    return Truth(frame, {lvl: arm_means(frame, m) for lvl, m in LEVELS.items()},
                 keeper.decide(frame) if keeper else {},
                 sum(j.gain >= GOLD for q in qs.queries if q.answerable for j in q.judgments))


def point(qs: QuerySet, results: Results, ans, full: Truth, rep: Replay, budget: int, names: Sequence[str],
          depth: int) -> tuple[dict, pd.DataFrame]:
    """One point of a strategy's curve after ``budget`` pages per query: its figures and rescored rows."""
    found = rep.at(budget)
    frame = rescore(qs, ans, results.per_query, found, names)
    row = {"strategy": rep.strategy, "budget": budget, "pages": rep.pages(budget),
           "gold_found": sum(g >= GOLD for q in qs.queries if q.answerable
                             for g in found[q.id].values()) / max(full.gold, 1)}
    for lvl, m in LEVELS.items():
        now = arm_means(frame, m).reindex(full.means[lvl].index)
        row[f"tau_{lvl}"] = kendall_tau(list(now), list(full.means[lvl]))
        row[f"shift_{lvl}"] = float((now - full.means[lvl]).abs().max())
    row.update(_stopping(qs, ans, found, depth))
    return row, frame


def gate_scan(points: list[tuple[dict, pd.DataFrame]], keeper: Gatekeeper, references: Mapping[str, Mapping]) -> None:
    """Count the gate decisions that differ from each reference (``gate_<name>``: the full judgments, the
    whole depth-10 pool) from the largest budget down, as long as tau holds and some reference is still
    matched (below that the target fails anyway), and at the stop signal; other points stay NaN."""
    def check(row: dict, frame: pd.DataFrame) -> bool:
        d = keeper.decide(frame)
        for name, ref in references.items():
            row[f"gate_{name}"] = sum(d[k][0] != ref[k][0] for k in d)
        return all(row[f"gate_{name}"] for name in references)

    for row, frame in reversed(points):
        if row["tau_page"] < TAU or row["tau_doc"] < TAU or check(row, frame):
            break
    for signal in SIGNALS:
        stop = next(((r, f) for r, f in points if r[signal]), None)
        if stop and f"gate_{next(iter(references))}" not in stop[0]:
            check(*stop)
    for row, _ in points:
        for name in references:
            row.setdefault(f"gate_{name}", math.nan)


def _stopping(qs: QuerySet, ans, found: Mapping[str, Mapping[PageKey, int]], depth: int) -> dict:
    """The stopping estimate at this point, beside the truth it estimates (relevant pages of the pool not
    yet read, by the recorded judgments)."""
    answerable = [q for q in qs.queries if q.answerable]
    per = {q.id: (rankings(ans, q.id), list(found[q.id].items())) for q in answerable}
    est = pooling.set_estimate(per, depth)
    missing = {RELEVANT: 0, GOLD: 0}
    for q in answerable:
        known, pool = gains(q), pooling.votes(per[q.id][0], depth)
        for level in missing:
            missing[level] += sum(known.get(p, 0) >= level for p in pool if p not in found[q.id])
    k = pooling.knee({q.id: list(found[q.id].items()) for q in qs.queries})
    return {"est_missing_rel": est.missing_rel, "true_missing_rel": missing[RELEVANT],
            "est_missing_gold": est.missing_gold, "true_missing_gold": missing[GOLD],
            "est_tau": est.tau, "est_shift": est.shift, "stop": est.stable, "knee_ratio": k.ratio, "knee": k.stop}


def leave_one_out(qs: QuerySet, ans: Mapping[str, Mapping[str, Answer]], pooled: pd.DataFrame,
                  spec: str = REFERENCE) -> pd.DataFrame:
    """For every arm: read the whole pool of the *other* arms (``spec``) and score the left-out arm on what
    was found, against its score under the pool of every arm (``pooled``: the rows rescored with it).
    Judged@10: the share of its top 10 the smaller pool judged; bias: its mean under the smaller pool
    minus its mean under the whole pool (what a new retriever loses, or gains, by not having pooled)."""
    rows = []
    for arm in ans:
        rep = replay(qs, ans, spec, without=arm)
        own = pooled[pooled["arm"] == arm]
        frame = rescore(qs, {arm: ans[arm]}, own, rep.at(None), LOO_MEASURES)
        answerable, base = frame[frame["class"] != "abstain"], own[own["class"] != "abstain"]
        row = {"arm": arm, "pool": f"{spec} without it", "pages": rep.pages(None),
               "Judged@10": answerable["Judged@10"].mean(), "Judged@10 (every arm)": base["Judged@10"].mean()}
        for m in LEVELS.values():
            row[m] = base[m].mean()
            row[f"{m} bias"] = answerable[m].mean() - base[m].mean()
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False)
class Simulation:
    """The curves (one row per strategy and per-query budget), leave-one-arm-out, and what they were run on."""

    curves: pd.DataFrame
    loo: pd.DataFrame
    unjudged: dict[str, int]  # per strategy: pool pages the query set never judged (read as gain 0)
    depth_pages: int  # pages of the reference pool, every arm's top 10
    name: str

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Per strategy: the fewest pages from which on tau >= TAU on both levels and no gate decision
        changed (against the full judgments; against the whole depth-10 pool) hold at every later budget,
        also as a share of the depth-10 pool; and the points where the stopping estimate and the knee
        method first said stop, with what they reached there."""
        rows = []
        for strat, c in self.curves.groupby("strategy", sort=False):
            tau = (c["tau_page"] >= TAU) & (c["tau_doc"] >= TAU)
            row: dict = {"strategy": strat}
            for ref in [None, *[col for col in c.columns if col.startswith("gate_")]]:
                ok = tau & (c[ref] == 0) if ref else tau
                first = c[ok[::-1].cummin()[::-1]]  # true from a point on
                pages = int(first["pages"].iloc[0]) if len(first) else math.nan
                label = f" ({ref.replace('gate_', '').replace('_', ' ')})" if ref else " (tau alone)"
                row[f"pages to target{label}"] = pages
                row[f"share of depth-10 pool{label}"] = pages / self.depth_pages
            for signal in SIGNALS:
                stop = c[c[signal].astype(bool)].head(1)
                row[f"pages at {signal}"] = int(stop["pages"].iloc[0]) if len(stop) else math.nan
                for col in ("tau_page", "tau_doc", *[x for x in c.columns if x.startswith("gate_")]):
                    row[f"{col} at {signal}"] = stop[col].iloc[0] if len(stop) else math.nan
            row["never-judged pages read"] = self.unjudged[strat]
            rows.append(row)
        return pd.DataFrame(rows).set_index("strategy")


def simulate(qs: QuerySet, results: Results | Path | str, strategies: Sequence[str] = STRATEGIES,
             rules: Path | str | None = None, budgets: Sequence[int] = BUDGETS,
             loo: str | None = "depth(k=10)") -> Simulation:
    """Replay judging for each strategy over ``budgets`` pages per query (and the whole pool), scoring the
    results directory's arms at each point; ``rules``: the gate.toml whose decisions must not change
    (None: gate not checked); ``loo``: the pool spec for leave-one-arm-out (None: skipped)."""
    results = results if isinstance(results, Results) else Results.load(results)
    check_run(qs, results)
    ans = answers(results)
    keeper = Gatekeeper(results, rules) if rules else None
    names = [*LEVELS.values(), "Judged@10", *(keeper.needs if keeper else ())]
    full = truth(qs, results, ans, names, keeper)
    reference = replay(qs, ans, REFERENCE)
    pooled = rescore(qs, ans, results.per_query, reference.at(None), names)
    refs = {"vs_full": full.decisions, "vs_pool": keeper.decide(pooled)} if keeper else {}
    rows, unjudged = [], {}
    for spec in strategies:
        rep = replay(qs, ans, spec)
        unjudged[rep.strategy] = rep.unjudged
        longest = max((len(o) for o in rep.orders.values()), default=0)
        points = [point(qs, results, ans, full, rep, b, names, pooling.strategy(spec).depth)
                  for b in sorted({*(b for b in budgets if b < longest), longest})]
        if keeper:
            gate_scan(points, keeper, refs)
        rows += [row for row, _ in points]
    return Simulation(pd.DataFrame(rows), leave_one_out(qs, ans, pooled, loo) if loo else pd.DataFrame(), unjudged,
                      reference.pages(None), f"{qs.name} × {len(ans)} arms of {results.path}")


def fig_simulation(sim: Simulation) -> Figure:
    """Four panels against pages read (share of the depth-10 pool): gold pages found, Kendall tau on
    nDCG@10 and nDCG@10(doc), and gate decisions changed; the stop signal of each strategy is a dot.
    pyplot is loaded here: the judge and the answerability arm import this module for its replay, not its
    figure."""
    from matplotlib import pyplot as plt

    panels = [("gold_found", "share of gain >= 2 pages found"), ("tau_page", "Kendall tau, nDCG@10"),
              ("tau_doc", "Kendall tau, nDCG@10(doc)")]
    if "gate_vs_full" in sim.curves:
        panels.append(("gate_vs_full", "gate decisions changed\n(solid: vs full judgments, dashed: vs whole pool)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), sharex=True, squeeze=False)
    axes = axes[0]
    for i, (strat, c) in enumerate(sim.curves.groupby("strategy", sort=False)):
        x = c["pages"] / sim.depth_pages
        for ax, (col, _) in zip(axes, panels, strict=True):
            ax.plot(x, c[col], color=f"C{i}", label=strat, marker=".", ms=3)
            if col == "gate_vs_full":
                ax.plot(x, c["gate_vs_pool"], color=f"C{i}", ls="--", marker=".", ms=3)
            for signal, marker in zip(SIGNALS, "o^", strict=True):
                stop = c[c[signal].astype(bool)]
                if len(stop):
                    ax.plot(stop["pages"].iloc[0] / sim.depth_pages, stop[col].iloc[0], marker, color=f"C{i}",
                            mec="black")
    for ax, (col, title) in zip(axes, panels, strict=True):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("pages read / depth-10 pool")
        if col.startswith("tau"):
            ax.axhline(TAU, color="grey", lw=0.8, ls=":")
        ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Judging replayed: {sim.name} (depth-10 pool: {sim.depth_pages} pages; dot: stopping estimate, "
                 "triangle: knee method)", fontsize=10)
    fig.tight_layout()
    return fig


def write(sim: Simulation, out: Path) -> list[Path]:
    """simulation.csv (the curves), loo.csv, summary.csv and simulation.png into ``out``."""
    from matplotlib import pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "simulation.csv", out / "summary.csv", out / "loo.csv", out / "simulation.png"]
    sim.curves.to_csv(paths[0], index=False)
    sim.summary.to_csv(paths[1])
    sim.loo.to_csv(paths[2], index=False)
    fig = fig_simulation(sim)
    fig.savefig(paths[3], dpi=110)
    plt.close(fig)
    return paths


def hours(sim: Simulation, model: ReadingModel) -> list[str]:
    """Per strategy, its pages to the target priced in person-hours under ``model`` (stated first)."""
    lines = [model.statement, f"  the depth-10 pool read whole: {sim.depth_pages} pages = "
                              f"{model.hours(sim.depth_pages):.2f} h"]
    for strat, row in sim.summary.iterrows():
        to = [(col.removeprefix("pages to target "), n) for col, n in row.items()
              if str(col).startswith("pages to target") and n == n]
        lines.append(f"  {strat}: " + ("; ".join(f"{int(n)} pages {ref} = {model.hours(n):.2f} h" for ref, n in to)
                                       or "target not reached"))
    return lines


def render(sim: Simulation, rules: Path | str | None, model: ReadingModel | None = None) -> str:
    """The text `evalkit qrels simulate` prints: the summary, leave-one-arm-out, what the oracle assumed, and
    with a reading model, the pages to the target in person-hours."""
    def fmt(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = [f"{sim.name}; the reference pool (every arm's top 10) holds {sim.depth_pages} pages",
             f"target: tau >= {TAU} on nDCG@10 and nDCG@10(doc)"
             + (f" and no gate decision of any ordered pair of arms changed ({rules})" if rules
                else " (gate not checked)"),
             "", sim.summary.T.to_string(float_format=fmt), ""]
    if len(sim.loo):
        lines += ["leave-one-arm-out: the pool of every other arm, read whole; the arm scored on what it found",
                  sim.loo.to_string(index=False, float_format=fmt), ""]
    lines.append("A page the query set never judged is read as gain 0 (the oracle knows only what was read); "
                 "'never-judged pages read' counts them.")
    return "\n".join(lines + (["", *hours(sim, model)] if model else []))

"""The gate on a partially graded query set: the person has graded some queries whole, a judge predicted every
pooled page (:mod:`evalkit.estimates`), and every rule that rests on a measure answers pass, fail or
*undecided*, naming the queries to grade next.

A query counts as **graded by a person** when it carries at least one grade and every page the workbench
pooled for it (its ``pooled`` list in the query file) is graded: its measures are then exact. Every other
query enters only through the judge's prediction and the PPI correction measured on the graded ones; an
uncorrected judge label never decides. A rule whose slice of queries is graded whole is evaluated exactly as
the plain gate does (its bootstrap and tests), so a fully graded set gets the plain gate's verdict.

Per rule, the prediction-powered interval (stratified by class, power-tuned, :func:`evalkit.estimates.of_values`)
of the quantity the rule bounds is set against the rule's threshold: *pass* when the whole interval is on
the good side, *fail* when the whole interval is on the bad side, *undecided* otherwise, with how many more
queries (:meth:`evalkit.estimates.Estimate.more_to_grade`) drawn at random from the ungraded ones
(reproducibly: ``[gate] seed``) the person should grade whole to decide it, and which.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import comparison, estimates, rules
from .qrels import QuerySet
from .results import Results
from .resultsdir import ResultsError
from .rules import Detail, Outcome, Status

SHOWN = 10  # queries named in a line; the full list is in the outcome's numbers


def graded_queries(qs: QuerySet) -> frozenset[str]:
    """The queries graded whole by a person: at least one grade, and no page of its ``pooled`` list ungraded."""
    return frozenset(q.id for q in qs.queries
                     if q.judgments and set(qs.pooled.get(q.id, ())) <= {(j.doc, j.page) for j in q.judgments})


def sha256(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Judge:
    """The judge's side of a gate: its predictions file (path, sha256, the model named in its ``model``
    column, if any), the queries a person graded whole with their pages, and the judge's expected measures
    per query for the baseline's and the candidate's arm (indexed by query, columns
    :data:`evalkit.estimates.MEASURES`)."""

    path: str
    sha256: str
    model: str
    graded: dict[str, tuple[str, ...]]  # query id -> its person-graded pages
    base: pd.DataFrame = field(repr=False)
    cand: pd.DataFrame = field(repr=False)
    queries: str = ""  # the query file the graded queries were read from

    def record(self, outcomes: tuple[Outcome, ...]) -> dict:
        """What ``gate.json`` keeps: the judge's identity, who graded what, and the judge-person correlation
        each judged rule measured (per class)."""
        agreement = {o.rule: o.numbers["judge_r"] for o in outcomes if "judge_r" in o.numbers}
        return {"predictions": self.path, "sha256": self.sha256, "model": self.model, "queries": self.queries,
                "graded_queries": sorted(self.graded), "graded_pages": {q: list(p)
                                                                        for q, p in sorted(self.graded.items())},
                "agreement": agreement}

    def note(self) -> str:
        return (f"judge {self.path} (sha256 {self.sha256[:12]}{f', model {self.model}' if self.model else ''}): rules "
                f"on measures decided from the {len(self.graded)} queries a person graded whole plus the judge's "
                "predictions (PPI)")

    def outcomes(self, parsed: rules.Rules, ctx: rules.Context) -> tuple[Outcome, ...]:
        """Every rule's outcome in file order: the judged rules by :func:`judged_outcome`, the others (refusal,
        latency, robustness: no grades involved) as the plain gate evaluates them."""
        out = []
        for rule in parsed.rules:
            judged = judged_outcome(rule, ctx, self)
            out.append(judged or rules.evaluate(rules.Rules(parsed.path, parsed.sha256, parsed.settings, (rule,)),
                                                ctx.pair, ctx=ctx)[0])
        return tuple(out)


def load(predictions: Path | str, qs: QuerySet, pair: comparison.Pair) -> Judge:
    """The :class:`Judge` of a gate from the judge's predictions file and the query file the runs were scored
    with; ValueError naming the file when either cannot be used."""
    for s in (pair.base, pair.cand):
        if s.results.manifest["qrels"]["digest"] != qs.digest:
            raise ValueError(f"{qs.path}: not the query file {s.results.path} was scored with (digest "
                             f"{s.results.manifest['qrels']['digest'][:12]}, the file's {qs.digest[:12]}): rerun it")
    return build(predictions, qs, pair)


def build(predictions: Path | str, qs: QuerySet, pair: comparison.Pair) -> Judge:
    """:func:`load` for a pair whose measures are known to come from ``qs`` (rescored from it)."""
    from .recorded import judge_rows  # reads the arms' recorded answers

    path = Path(predictions)
    table = estimates.read_predictions(path)
    model = ", ".join(sorted({str(m) for m in table["model"].dropna()})) if "model" in table.columns else ""

    def expected(s: comparison.Side) -> pd.DataFrame:
        rows = judge_rows(path, s.results.per_query, s.results.path, estimates.MEASURES[0])
        return rows[rows["arm"] == s.arm].set_index("query")[list(estimates.MEASURES)]

    graded = {q.id: tuple(f"{j.doc}#{j.page}" for j in q.judgments) for q in qs.queries if q.id in graded_queries(qs)}
    # recorded resolved: the report re-evaluates the verdict from wherever it runs (a notebook's folder)
    return Judge(str(path.resolve()), sha256(path), model, graded, expected(pair.base), expected(pair.cand),
                 str(Path(qs.path).resolve()) if qs.path else "")


# --------------------------------------------------------------------------------------------------------
# The judged rules


@dataclass(frozen=True)
class Slice:
    """One rule's queries (answerable, one class or all) with the per-query value it bounds: ``truth`` from
    the person's grades (exact where ``graded``), ``predicted`` the judge's expectation of it."""

    ids: np.ndarray
    classes: np.ndarray
    graded: np.ndarray
    truth: np.ndarray
    predicted: np.ndarray


def _slice(p: comparison.Pair, judge: Judge, cls: str, measure: str,
           value: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Slice:
    """``value(baseline, candidate)`` per query of class ``cls``, under the person's grades and the judge's."""
    if measure not in estimates.MEASURES:
        raise rules.RulesError(f"measure {measure!r}: a judge's predictions give {', '.join(estimates.MEASURES)} "
                               "only; gate it without --judge, on a query set graded whole")
    mask = p.mask(cls)
    if not mask.any():
        raise comparison.CompareError(f"class {cls!r} has no answerable queries in these runs")
    ids = p.base_rows.index[mask]
    base, cand = (rows[measure][mask].to_numpy(float) for rows in (p.base_rows, p.cand_rows))
    pb, pc = (j.reindex(ids)[measure].fillna(0.0).to_numpy(float) for j in (judge.base, judge.cand))
    graded = np.array([q in judge.graded for q in ids], dtype=bool)
    return Slice(np.asarray(ids), p.query_class[mask].to_numpy(str), graded, value(base, cand), value(pb, pc))


def _decide(s: Slice, threshold: float, confidence: float, seed: int, what: str,
            measure: str) -> tuple[Status, str, dict]:
    """pass / fail / undecided for "the mean of the slice's value exceeds ``threshold``", with the line and
    numbers that say why and, when undecided, which queries to grade next."""
    e = estimates.of_values(s.truth, s.predicted, s.graded, s.classes, measure, "candidate", confidence=confidence)
    i = e.interval
    st: Status = "pass" if i.low > threshold else "fail" if i.high < threshold else "undecided"
    line = (f"{what} {i.mean:+.3f} [{i.low:+.3f}, {i.high:+.3f}] ({round(100 * confidence)}%, judge + person), "
            f"{i.n} of {i.n + i.unlabeled} queries graded, judge-person r {e.correlation:.2f}, "
            f"{e.gain:+.0%} narrower than the person alone")
    numbers = {"mean": i.mean, "low": i.low, "high": i.high, "graded": i.n, "n": i.n + i.unlabeled,
               "judge_r": e.correlation, "lam": i.lam}
    if st != "undecided":
        return st, line, numbers
    k = e.more_to_grade(threshold)
    rest = s.ids[~s.graded]
    if k > len(rest):
        return st, f"{line}; undecided: grading every query would not decide it", {**numbers, "grade_next": []}
    pick = [str(q) for q in np.random.default_rng(seed).permutation(sorted(rest))[:k]]
    more = "" if k <= SHOWN else f", ... ({k - SHOWN} more in the JSON)"
    return st, (f"{line}; undecided: grade {k} more queries whole to decide (drawn at random, seed {seed}): "
                f"{', '.join(pick[:SHOWN])}{more}"), {**numbers, "grade_next": pick}


def _exact(s: Slice) -> bool:
    return bool(s.graded.all())


def _diff(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    return cand - base


def _noninferiority(rule: rules.NonInferiority, ctx: rules.Context, judge: Judge) -> Outcome | None:
    s = _slice(ctx.pair, judge, rule.cls, rule.measure, _diff)
    if _exact(s):
        return None
    st, line, numbers = _decide(s, -rule.margin, ctx.settings.confidence, ctx.settings.seed, "Δ", rule.measure)
    return rule.outcome(st, f"{line}; non-inferiority at -{rule.margin:g}", margin=rule.margin, **numbers)


def _floor(rule: rules.Floor, ctx: rules.Context, judge: Judge) -> Outcome | None:
    s = _slice(ctx.pair, judge, rule.cls, rule.measure, lambda b, c: c)
    if _exact(s):
        return None
    st, line, numbers = _decide(s, rule.min, ctx.settings.confidence, ctx.settings.seed, "candidate", rule.measure)
    return rule.outcome(st, f"{line}; floor {rule.min:g}", min=rule.min, **numbers)


def _lost(rule: rules.LostQueries, ctx: rules.Context, judge: Judge) -> Outcome | None:
    """The share of queries the candidate loses (1 under the baseline, 0 under the candidate; predicted as
    P(baseline finds) x P(candidate misses), any predictor being valid under PPI), against max_queries / n."""
    s = _slice(ctx.pair, judge, comparison.ALL, rule.measure, lambda b, c: -(b * (1 - c)))
    if _exact(s):
        return None
    n = len(s.ids)
    st, line, numbers = _decide(s, -(rule.max_queries + 0.5) / n, ctx.settings.confidence, ctx.settings.seed,
                                "minus the share lost", rule.measure)
    return rule.outcome(st, f"{line}; at most {rule.max_queries} of {n} may be lost "
                            f"(share {rule.max_queries / n:.3f})", max_queries=rule.max_queries, **numbers)


def _class_drop(rule: rules.ClassDrop, ctx: rules.Context, judge: Judge) -> Outcome | None:
    """Per class: fail when the interval lies below -max_drop, pass when above, else undecided; the
    intervals at confidence 1 - alpha / classes (Bonferroni: the plain rule's Holm needs p values)."""
    classes = list(rule.classes) or ctx.pair.classes
    slices = [_slice(ctx.pair, judge, c, rule.measure, _diff) for c in classes]
    if all(map(_exact, slices)):
        return None
    conf = 1 - ctx.settings.alpha / len(classes)
    details, per_class = [], {}
    for c, s in zip(classes, slices, strict=True):
        st, line, numbers = _decide(s, -rule.max_drop, conf, ctx.settings.seed, "Δ", rule.measure)
        details.append(Detail(c, st, line))
        per_class[c] = {**numbers, "status": st}
    worst = next(st for st in ("fail", "undecided", "pass") if any(d.status == st for d in details))
    summary = (f"per class: {', '.join(f'{d.label} {d.status}' for d in details)} against a drop of {rule.max_drop:g} "
               f"(Bonferroni over {len(classes)} classes)")
    return rule.outcome(worst, summary, details, classes=per_class, max_drop=rule.max_drop,  # type: ignore[arg-type]
                        judge_r={c: v["judge_r"] for c, v in per_class.items()})


def judged_outcome(rule: rules.Rule, ctx: rules.Context, judge: Judge) -> Outcome | None:
    """A rule resting on measures, decided with the judge; None for a rule that does not rest on grades or
    whose queries are all graded by the person (the plain gate decides it)."""
    how: dict[type, Callable] = {rules.NonInferiority: _noninferiority, rules.Floor: _floor,
                                 rules.LostQueries: _lost, rules.ClassDrop: _class_drop}
    f = how.get(type(rule))
    try:
        return f(rule, ctx, judge) if f else None
    except rules.RulesError:
        raise
    except comparison.CompareError as e:
        raise rules.RulesError(f"{ctx.pair.cand.label} rule {rule.title!r}: {e}") from None


# --------------------------------------------------------------------------------------------------------
# compare --judge


def compare(pair: comparison.Pair, judge: Judge, measures: tuple[str, ...] = estimates.MEASURES,
            confidence: float = 0.95) -> list[estimates.Estimate]:
    """The candidate-minus-baseline :class:`evalkit.estimates.Estimate` of each measure the judge predicts,
    over all answerable queries and per class."""
    return [estimates.of_values(s.truth, s.predicted, s.graded, s.classes, m, pair.cand.arm, pair.base.arm, cls,
                                confidence)
            for m in measures if m in estimates.MEASURES for cls in (comparison.ALL, *pair.classes)
            for s in (_slice(pair, judge, cls, m, _diff),)]


def table(found: list[estimates.Estimate]) -> pd.DataFrame:
    """One row per estimate: the interval, graded and total queries, judge-person r, the narrowing against
    the person alone, the verdict and how many more queries to grade whole to decide the sign."""
    return pd.DataFrame([{"candidate": e.b, "measure": e.measure, "class": e.cls, "delta": e.interval.mean,
                          "low": e.interval.low, "high": e.interval.high, "graded": e.interval.n,
                          "n": e.interval.n + e.interval.unlabeled, "judge_r": e.correlation, "gain": e.gain,
                          "verdict": e.verdict, "more_to_grade": e.more_to_grade()} for e in found])


def render(pair: comparison.Pair, found: list[estimates.Estimate], measures: tuple[str, ...]) -> str:
    """``compare --judge``'s text: per measure and class, :meth:`evalkit.estimates.Estimate.text`."""
    lines = [f"{pair.cand.label} - {pair.base.label}, from the person's graded queries plus the judge (PPI):"]
    lines += [f"  {e.measure:<13} {e.cls:<10} {e.text()}" for e in found]
    if skipped := [m for m in measures if m not in estimates.MEASURES]:
        lines.append(f"  not estimated (a judge's predictions give {', '.join(estimates.MEASURES)}): "
                     f"{', '.join(skipped)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------
# The workbench's "can I decide yet?"


def decidable(results: Path | str, baseline: str, candidate: str, predictions: Path | str, qs: QuerySet,
              rules_path: Path | str | None = None) -> str:
    """One line after each grade: what the gate can say now about ``candidate`` against ``baseline`` (two
    arms of the run in ``results``) and which page to grade next to decide. The runs' measures are rescored
    from ``qs`` as it stands (the grades just given count; the run need not be redone); no latency rule is
    timed here."""
    from . import dirs
    from .recorded import Rejudged, answers, gains, rescore

    res = Results.load(results)
    view = Rejudged(res.path, rescore(qs, answers(res), res.per_query, {q.id: gains(q) for q in qs.queries}))
    try:
        pair = comparison.pair(comparison.Side(view, res.arm(baseline)), comparison.Side(view, res.arm(candidate)))
    except ResultsError as e:
        raise comparison.CompareError(str(e)) from None
    parsed = rules.load(rules_path or dirs.rules_path())
    return line(build(predictions, qs, pair).outcomes(parsed, rules.Context(pair, parsed.settings)), qs)


def _grade_next(o: Outcome) -> list[str]:
    """The queries an undecided outcome asks for (class-drop: its first undecided class's)."""
    by_class = [c.get("grade_next", []) for c in o.numbers.get("classes", {}).values()
                if c.get("status") == "undecided"]
    return list(o.numbers.get("grade_next") or next((g for g in by_class if g), []))


def line(outcomes: tuple[Outcome, ...], qs: QuerySet) -> str:
    """"can I decide yet?" from a gate's outcomes: decided (fail, else pass), or which rules are undecided
    and the next page to grade: the first ungraded pooled page of the first query the first of them asks for."""
    if failed := [o.rule for o in outcomes if o.status == "fail"]:
        return f"decided: FAIL ({'; '.join(failed)})"
    open_ = [o for o in outcomes if o.status == "undecided"]
    if not open_:
        return "decided: PASS"
    head = f"not yet: {len(open_)} rule(s) undecided ({'; '.join(o.rule for o in open_)})"
    ask = next((q for o in open_ for q in _grade_next(o)), None)
    if ask is None:
        return f"{head}; grading every query would not decide them"
    done = {(j.doc, j.page) for j in qs[ask].judgments}
    left = [p for p in qs.pooled.get(ask, ()) if p not in done]
    page = f"page {left[0][0]}#{left[0][1]} ({len(left)} of its {len(qs.pooled[ask])} pooled pages left)" if left \
        else "its pool (no pooled pages recorded: pool it first)"
    return f"{head}; grade next: query {ask}, {page}"

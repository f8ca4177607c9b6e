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

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import comparison, estimates, rules
from .corpora import sha256_file as sha256
from .qrels import QuerySet
from .results import Results
from .resultsdir import ResultsError
from .rules import Detail, Outcome, Status

SHOWN = 10  # queries named in a line; the full list is in the outcome's numbers


def graded_queries(qs: QuerySet) -> frozenset[str]:
    """The queries graded whole by a person: at least one grade, and no page of its ``pooled`` list ungraded."""
    return frozenset(q.id for q in qs.queries
                     if q.judgments and set(qs.pooled.get(q.id, ())) <= {(j.doc, j.page) for j in q.judgments})


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
    left: dict[str, int | None] = field(default_factory=dict)  # ungraded query -> its pooled pages not graded yet
    refused: tuple[str, ...] = ()  # classes `evalkit qrels judge` refused the judge's grades for (its judge.json)

    def pages(self, queries: Sequence[str]) -> tuple[int | None, bool]:
        """The pages a person reads to grade ``queries`` whole, and whether that is estimated: counted from
        their pools, a query not pooled yet counted at the mean of the ungraded queries that are (None: none is)."""
        known = [n for q in queries if (n := self.left.get(q)) is not None]
        if len(known) == len(queries):
            return sum(known), False
        mean = self.per_query()
        return (None, False) if mean is None else (round(sum(known) + (len(queries) - len(known)) * mean), True)

    def per_query(self) -> float | None:
        """The pages an ungraded query's pool leaves to read, on average (None: no ungraded query is pooled)."""
        pooled = [n for n in self.left.values() if n is not None]
        return sum(pooled) / len(pooled) if pooled else None

    def record(self, outcomes: tuple[Outcome, ...]) -> dict:
        """What ``gate.json`` keeps: the judge's identity, who graded what, the judge-person correlation
        each judged rule measured (per class), and what deciding each undecided rule (per class) takes."""
        agreement = {o.rule: o.numbers["judge_r"] for o in outcomes if "judge_r" in o.numbers}
        return {"predictions": self.path, "sha256": self.sha256, "model": self.model, "queries": self.queries,
                "graded_queries": sorted(self.graded), "graded_pages": {q: list(p)
                                                                        for q, p in sorted(self.graded.items())},
                "agreement": agreement,
                "undecided": {label: {k: n[k] for k in ("to_grade", "grade_next", "pages_next") if k in n}
                              for o in outcomes for label, n in asks(o)}}

    def note(self) -> str:
        """The judge beside the verdict; where `evalkit qrels judge` refused its grades for a class, so too,
        with what that means here (the gate reads the judge's chances, corrected by the person's grades)."""
        return (f"judge {self.path} (sha256 {self.sha256[:12]}{short_model(self.model)}): rules "
                f"on measures decided from the {len(self.graded)} queries a person graded whole plus the judge's "
                "predictions (PPI)" + (f"; evalkit qrels judge refused its grades for {', '.join(self.refused)}: "
                                       "the intervals still hold, whatever the judge's quality, but where it "
                                       "agrees poorly with you they are little narrower than your grades alone"
                                       if self.refused else ""))

    def outcomes(self, parsed: rules.Rules, ctx: rules.Context) -> tuple[Outcome, ...]:
        """Every rule's outcome in file order: the judged rules by :func:`judged_outcome`, the others (refusal,
        latency, robustness: no grades involved) as the plain gate evaluates them."""
        out = []
        for rule in parsed.rules:
            judged = judged_outcome(rule, ctx, self)
            out.append(judged or rules.evaluate(rules.Rules(parsed.path, parsed.sha256, parsed.settings, (rule,)),
                                                ctx.pair, ctx=ctx)[0])
        return tuple(out)


def short_model(model: str) -> str:
    """", model <the first model's id> (+n more)": a cross-fitted judge's predictions name one model per fold."""
    models = [m for m in model.split(", ") if m]
    return f", model {models[0][:16]}" + (f" (+{len(models) - 1} more)" if len(models) > 1 else "") if models else ""


def load(predictions: Path | str, qs: QuerySet, pair: comparison.Pair) -> Judge:
    """The :class:`Judge` of a gate from the judge's predictions file and the query file the runs were scored
    with; ValueError naming the file when either cannot be used."""
    for s in (pair.base, pair.cand):
        scored_with(qs, s.results)
    return build(predictions, qs, pair)


def scored_with(qs: QuerySet, results: Results) -> None:
    """ValueError unless ``results`` was scored with the query file ``qs``."""
    if results.manifest["qrels"]["digest"] != qs.digest:
        raise ValueError(f"{qs.path}: not the query file {results.path} was scored with (digest "
                         f"{results.manifest['qrels']['digest'][:12]}, the file's {qs.digest[:12]}): rerun it")


def with_ungraded(side: comparison.Side, qs: QuerySet) -> comparison.Side:
    """``side`` with the rows of its run's ungraded queries put back, scored from the arm's recorded answers: the
    plain measures leave a query without judgment out, the judge speaks for it (its ranking, through the
    judge's predictions of its pooled pages; its outcome and latency as recorded). ValueError unless the run
    was scored with ``qs``."""
    from .recorded import Rejudged

    measured = side.results.per_query
    if not set(side.results.ungraded) - set(measured["query"]):
        return side
    scored_with(qs, side.results)
    return comparison.Side(Rejudged(side.results.path, with_rows(side.results, measured, (side.arm,), qs)), side.arm)


def with_rows(results: Results, frame: pd.DataFrame, arms: Sequence[str], qs: QuerySet) -> pd.DataFrame:
    """``frame`` (per-query rows of ``results``) with rows for the run's ungraded queries it lacks, for ``arms``,
    scored from their recorded answers under ``qs`` as it stands."""
    from .recorded import per_query  # reads the arms' recorded answers

    left = set(results.ungraded) - set(frame["query"])
    infos = [a for a in results.manifest["arms"] if a["label"] in arms]
    rows = per_query(replace(qs, queries=tuple(q for q in qs.queries if q.id in left)), infos, results.path / "runs")
    return pd.concat([frame, rows], ignore_index=True) if len(rows) else frame


@dataclass(frozen=True)
class Loader:
    """A gate's judge before the pair is made: the predictions file and the query file the runs were scored
    with. It widens the two sides to every query (:func:`with_ungraded`), then loads the :class:`Judge` of
    their pair; CompareError naming the file that cannot be used."""

    predictions: Path | str
    qs: QuerySet
    refused: tuple[str, ...] = ()  # what the judge's record says (autojudge.record.refused_classes)

    def sides(self, base: comparison.Side, cand: comparison.Side) -> tuple[comparison.Side, comparison.Side]:
        try:
            return with_ungraded(base, self.qs), with_ungraded(cand, self.qs)
        except ValueError as e:
            raise comparison.CompareError(str(e)) from None

    def __call__(self, pair: comparison.Pair) -> Judge:
        try:
            return replace(load(self.predictions, self.qs, pair), refused=self.refused)
        except (ValueError, OSError) as e:
            raise comparison.CompareError(str(e)) from None


def build(predictions: Path | str, qs: QuerySet, pair: comparison.Pair, table: pd.DataFrame | None = None,
          ans: Mapping[str, Mapping[str, Any]] | None = None) -> Judge:
    """:func:`load` for a pair whose measures are known to come from ``qs`` (rescored from it). ``table`` (the
    predictions) and ``ans`` (both arms' recorded answers, of one run) when the caller has read them already."""
    from .recorded import answers, expected_rows  # reads the arms' recorded answers

    path = Path(predictions)
    table = estimates.read_predictions(path) if table is None else table
    model = ", ".join(sorted({str(m) for m in table["model"].dropna()})) if "model" in table.columns else ""

    rows: dict[str, pd.DataFrame] = {}  # per results directory: both arms of one run are predicted at once

    def expected(s: comparison.Side) -> pd.DataFrame:
        if (key := str(s.results.path)) not in rows:
            mine = ans if ans is not None else {a: v for a, v in answers(s.results).items()
                                                 if a in {pair.base.arm, pair.cand.arm}}
            rows[key] = expected_rows(table, s.results.per_query, mine)
        return rows[key][rows[key]["arm"] == s.arm].set_index("query")[list(estimates.MEASURES)]

    # recorded resolved: the report re-evaluates the verdict from wherever it runs (a notebook's folder)
    return graded_by(Judge(str(path.resolve()), sha256(path), model, {}, expected(pair.base), expected(pair.cand)), qs)


def graded_by(judge: Judge, qs: QuerySet) -> Judge:
    """``judge`` with the person's side read from ``qs`` as it stands: the queries graded whole (with their
    pages) and, for every other query, the pooled pages it has left to grade (None: not pooled yet)."""
    whole = graded_queries(qs)
    graded = {q.id: tuple(f"{j.doc}#{j.page}" for j in q.judgments) for q in qs.queries if q.id in whole}
    left = {q.id: len(set(qs.pooled[q.id]) - {(j.doc, j.page) for j in q.judgments}) if q.id in qs.pooled else None
            for q in qs.queries if q.id not in whole}
    return replace(judge, graded=graded, left=left, queries=str(Path(qs.path).resolve()) if qs.path else "")


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


def _decide(s: Slice, threshold: float, confidence: float, seed: int, what: str, measure: str,
            judge: Judge) -> tuple[Status, str, dict]:
    """pass / fail / undecided for "the mean of the slice's value exceeds ``threshold``", with the line and
    numbers that say why and, when undecided, which queries to grade next."""
    e = estimates.of_values(s.truth, s.predicted, s.graded, s.classes, measure, "candidate", confidence=confidence)
    i = e.interval
    st: Status = "pass" if i.low > threshold else "fail" if i.high < threshold else "undecided"
    line = (f"{what} {estimates.interval_text(i)} ({round(100 * confidence)}%, judge + person), "
            f"{i.n} of {i.n + i.unlabeled} queries graded{e.agreement()}")
    numbers = {"mean": i.mean, "low": i.low, "high": i.high, "graded": i.n, "n": i.n + i.unlabeled,
               "judge_r": e.correlation, "lam": i.lam}
    if st != "undecided":
        return st, line, numbers
    k = e.more_to_grade(threshold, alpha=1 - confidence)
    rest = s.ids[~s.graded]
    if k > len(rest):
        return st, f"{line}; {estimates.NOT_DECIDABLE}", {**numbers, "grade_next": [],
                                                           "to_grade": estimates.NOT_DECIDABLE}
    pick = [str(q) for q in np.random.default_rng(seed).permutation(sorted(rest))[:k]]
    pages, approx = judge.pages(pick)
    ask = estimates.to_grade(k, pages, approx, pick, SHOWN)
    return st, f"{line}; {ask}", {**numbers, "grade_next": pick, "pages_next": pages, "to_grade": ask}


def _exact(s: Slice) -> bool:
    return bool(s.graded.all())


def _diff(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    return cand - base


def _noninferiority(rule: rules.NonInferiority, ctx: rules.Context, judge: Judge) -> Outcome | None:
    s = _slice(ctx.pair, judge, rule.cls, rule.measure, _diff)
    if _exact(s):
        return None
    st, line, numbers = _decide(s, -rule.margin, ctx.settings.confidence, ctx.settings.seed, "Δ", rule.measure, judge)
    return rule.outcome(st, f"{line}; non-inferiority at -{rule.margin:g}", margin=rule.margin, **numbers)


def _floor(rule: rules.Floor, ctx: rules.Context, judge: Judge) -> Outcome | None:
    s = _slice(ctx.pair, judge, rule.cls, rule.measure, lambda b, c: c)
    if _exact(s):
        return None
    st, line, numbers = _decide(s, rule.min, ctx.settings.confidence, ctx.settings.seed, "candidate", rule.measure,
                                judge)
    return rule.outcome(st, f"{line}; floor {rule.min:g}", min=rule.min, **numbers)


def _lost(rule: rules.LostQueries, ctx: rules.Context, judge: Judge) -> Outcome | None:
    """The share of queries the candidate loses (1 under the baseline, 0 under the candidate; predicted as
    P(baseline finds) x P(candidate misses), any predictor being valid under PPI), against max_queries / n."""
    s = _slice(ctx.pair, judge, comparison.ALL, rule.measure, lambda b, c: -(b * (1 - c)))
    if _exact(s):
        return None
    n = len(s.ids)
    st, line, numbers = _decide(s, -(rule.max_queries + 0.5) / n, ctx.settings.confidence, ctx.settings.seed,
                                "minus the share lost", rule.measure, judge)
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
        st, line, numbers = _decide(s, -rule.max_drop, conf, ctx.settings.seed, "Δ", rule.measure, judge)
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
    over all answerable queries and per class, with the pages an ungraded query leaves to read."""
    return [replace(estimates.of_values(s.truth, s.predicted, s.graded, s.classes, m, pair.cand.arm, pair.base.arm,
                                        cls, confidence), pages_per_query=judge.per_query())
            for m in measures if m in estimates.MEASURES for cls in (comparison.ALL, *pair.classes)
            for s in (_slice(pair, judge, cls, m, _diff),)]


def table(found: list[estimates.Estimate]) -> pd.DataFrame:
    """One row per estimate: the interval, graded and total queries, judge-person r, the narrowing against
    the person alone, the verdict and how many more queries to grade whole to decide the sign (and about how
    many pages that is to read)."""
    return pd.DataFrame([{"candidate": e.b, "measure": e.measure, "class": e.cls, "delta": e.interval.mean,
                          "low": e.interval.low, "high": e.interval.high, "graded": e.interval.n,
                          "n": e.interval.n + e.interval.unlabeled, "judge_r": e.correlation, "gain": e.gain,
                          "verdict": e.verdict, "more_to_grade": e.more_to_grade(),
                          "pages_to_grade": e.pages_to_grade()} for e in found])


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


def asks(o: Outcome) -> Iterator[tuple[str, dict]]:
    """(label, numbers) of each undecided part of an outcome: the rule, or each undecided class of a class-drop
    rule (labelled ``rule [class]``)."""
    if o.status != "undecided":
        return
    classes = o.numbers.get("classes", {})
    if not classes:
        yield o.rule, o.numbers
    yield from ((f"{o.rule} [{c}]", n) for c, n in classes.items() if n.get("status") == "undecided")


@dataclass(frozen=True)
class Decision:
    """"Can I decide yet?": the gate's answer now (pass, fail or undecided), each rule's, and, while undecided,
    what deciding every rule takes and the page to grade next."""

    status: Status
    rules: tuple[tuple[str, str], ...]  # (rule, its status)
    grade: str = ""  # :func:`evalkit.estimates.to_grade` over the queries the undecided rules ask for
    next: str = ""  # "query q12, page a.pdf#3 (5 of its 6 pooled pages left)"

    def text(self) -> str:
        head = {"pass": "decided: PASS", "fail": "decided: FAIL", "undecided": "not yet"}[self.status]
        rules_ = " · ".join(f"{r}: {st}" for r, st in self.rules)
        return "; ".join(x for x in (f"{head} ({rules_})", self.grade, self.next and f"grade next: {self.next}") if x)


def decision(outcomes: tuple[Outcome, ...], judge: Judge, qs: QuerySet) -> Decision:
    """A gate's outcomes as a :class:`Decision`: failed when a rule fails, passed when every rule passes, else
    the queries the undecided rules ask for (in the order asked, each once) and the next page: the first
    ungraded pooled page of the first of them."""
    rules_ = tuple((o.rule, o.status) for o in outcomes)
    status: Status = "fail" if any(o.status == "fail" for o in outcomes) else \
        "undecided" if any(o.status == "undecided" for o in outcomes) else "pass"
    if status != "undecided":
        return Decision(status, rules_)
    ask = list(dict.fromkeys(q for o in outcomes for _, n in asks(o) for q in n.get("grade_next", [])))
    if not ask:
        return Decision(status, rules_, estimates.NOT_DECIDABLE)
    pages, approx = judge.pages(ask)
    done = {(j.doc, j.page) for j in qs[ask[0]].judgments}
    left = [p for p in qs.pooled.get(ask[0], ()) if p not in done]
    page = f"page {left[0][0]}#{left[0][1]} ({len(left)} of its {len(qs.pooled[ask[0]])} pooled pages left)" \
        if left else "its pool (no pooled pages recorded: pool it first)"
    return Decision(status, rules_, estimates.to_grade(len(ask), pages, approx, ask, SHOWN), f"query {ask[0]}, {page}")


class Decider:
    """The gate of two arms of one run, answered again after each grade: what does not change while a
    person grades is read once (the two arms' recorded answers, the rules, the judge's expected measures),
    and each :meth:`decide` rescores only the queries whose grades changed since the last one."""

    def __init__(self, results: Path | str, baseline: str, candidate: str, predictions: Path | str,
                 rules_path: Path | str | None = None):
        from . import dirs
        from .recorded import answers

        self.results = Results.load(results)
        try:
            self.arms = (self.results.arm(baseline), self.results.arm(candidate))
        except ResultsError as e:
            raise comparison.CompareError(str(e)) from None
        self.answers = {a: v for a, v in answers(self.results).items() if a in self.arms}
        self.frame = self.results.per_query[self.results.per_query["arm"].isin(self.arms)].copy()
        self.rules = rules.load(rules_path or dirs.rules_path())
        self.predictions = Path(predictions)
        try:  # read once: the workbench's view shows its opinions from the same table
            self.table = estimates.read_predictions(self.predictions)
        except ValueError as e:
            raise comparison.CompareError(str(e)) from None
        self.gains: dict[str, dict] = {}  # per query, the grades self.frame is scored with
        self.judge: Judge | None = None

    def _rescored(self, qs: QuerySet) -> comparison.Pair:
        from .recorded import Rejudged, gains, rescore

        if set(self.results.ungraded) - set(self.frame["query"]):  # the run measured them not: no judgment then
            self.frame = with_rows(self.results, self.frame, self.arms, qs)
        now = {q.id: gains(q) for q in qs.queries}
        changed = [q for q in qs.queries if self.gains.get(q.id) != now[q.id]]
        if changed:
            rows = self.frame["query"].isin({q.id for q in changed})
            fresh = rescore(replace(qs, queries=tuple(changed)), self.answers, self.frame[rows], now)
            self.frame.loc[rows, fresh.columns] = fresh
            self.gains = now
        view = Rejudged(self.results.path, self.frame)
        return comparison.pair(comparison.Side(view, self.arms[0]), comparison.Side(view, self.arms[1]))

    def outcomes(self, qs: QuerySet) -> tuple[tuple[Outcome, ...], Judge]:
        """Every rule's outcome on ``qs`` as it stands, with the judge they were decided with."""
        pair = self._rescored(qs)
        self.judge = graded_by(self.judge, qs) if self.judge else build(self.predictions, qs, pair, self.table,
                                                                                   self.answers)
        return self.judge.outcomes(self.rules, rules.Context(pair, self.rules.settings)), self.judge

    def decide(self, qs: QuerySet) -> Decision:
        return decision(*self.outcomes(qs), qs)


def decidable(results: Path | str, baseline: str, candidate: str, predictions: Path | str, qs: QuerySet,
              rules_path: Path | str | None = None) -> str:
    """One line after each grade: what the gate can say now about ``candidate`` against ``baseline`` (two
    arms of the run in ``results``), per rule, and what to grade next to decide. The runs' measures are
    rescored from ``qs`` as it stands (the grades just given count; the run need not be redone); no latency
    rule is timed here. The workbench keeps a :class:`Decider` instead, so that a grade costs one query's
    rescoring."""
    return Decider(results, baseline, candidate, predictions, rules_path).decide(qs).text()

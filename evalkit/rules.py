"""Gate rules: the decision written down before the run (``gate.toml``), one small class per rule type.

A rules file holds ``[gate]`` settings and a list of ``[[rule]]`` tables, each with a ``type`` from
:data:`RULES`. Every rule type is a frozen dataclass whose fields are the table's keys: the parser checks
names and types from the dataclass itself, so a new rule type needs no parser code. A rule evaluates
against a :class:`Context` (the paired runs and the settings) into an :class:`Outcome` whose status is
pass, fail, underpowered (the query set cannot tell) or skipped (the rule does not apply here).
The reasoning behind each rule's statistics is in its docstring and in the shipped ``gate.toml``.
"""
from __future__ import annotations

import hashlib
import json
import math
import tomllib
import typing
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from . import comparison, measures, stats
from .latency import PairedTiming, Untimed, fewest_timed, paired_ratio
from .resultsdir import slug

Status = Literal["pass", "fail", "underpowered", "skipped", "undecided"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "underpowered", "skipped", "undecided")  # undecided: with a judge


class RulesError(comparison.CompareError):
    """A rules file that cannot be used, or a rule that cannot be evaluated; the message names the file,
    the rule and the field (exit 2)."""


class FieldError(ValueError):
    """A rule field with a value it cannot take (raised while a rule is built, reported by the parser)."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.field = name


@dataclass(frozen=True)
class Detail:
    """One line under a rule: a class of the class-drop rule, or a query the per-query rule lists."""

    label: str
    status: Status | str
    text: str


@dataclass(frozen=True)
class Outcome:
    """A rule's verdict with the numbers behind it (``numbers`` is what JSON consumers read)."""

    rule: str
    type: str
    status: Status
    summary: str
    details: tuple[Detail, ...] = ()
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """``[gate]``: the statistics every rule shares. ``underpowered_blocks`` decides whether an underpowered
    rule fails the gate; it does not by default, because a 22-query class cannot detect a 0.05 drop and
    would block every change -- the overall non-inferiority rule is the one with the power to decide."""

    confidence: float = 0.95
    alpha: float = stats.ALPHA
    power: float = stats.POWER
    resamples: int = stats.RESAMPLES
    seed: int = 0
    underpowered_blocks: bool = False

    def __post_init__(self):
        for name in ("confidence", "alpha", "power"):
            if not 0 < getattr(self, name) < 1:
                raise FieldError(name, "must lie strictly between 0 and 1")
        if self.resamples < 1000:
            raise FieldError("resamples", "must be at least 1000")


class Context:
    """The paired runs a gate decides on, with the paired statistics computed once per measure, and the
    side-by-side timing of both arms when one was taken (:mod:`evalkit.timing`)."""

    def __init__(self, pair: comparison.Pair, settings: Settings, timing: PairedTiming | Untimed | None = None):
        self.pair, self.settings, self.timing = pair, settings, timing
        self._tables: dict[str, pd.DataFrame] = {}

    def table(self, measure: str) -> pd.DataFrame:
        if measure not in self._tables:
            s = self.settings
            self._tables[measure] = comparison.table(self.pair, (measure,), confidence=s.confidence,
                                                  n_resamples=s.resamples, seed=s.seed, alpha=s.alpha,
                                                  target_power=s.power).set_index("class")
        return self._tables[measure]

    def row(self, measure: str, cls: str) -> pd.Series:
        t = self.table(measure)
        if cls not in t.index:
            self.pair.values(measure, cls)  # raises, naming the class without queries
        return t.loc[cls]


def _ci(r: pd.Series) -> str:
    return "Δ " + stats.delta_text(r["delta"], r["low"], r["high"])


def _check_measure(name: str) -> measures.Measure:
    try:
        return measures.measure(name)
    except ValueError as e:
        raise FieldError("measure", str(e)) from None


def _check_class(name: str, key: str = "class") -> None:
    if name not in (comparison.ALL, *comparison.ANSWERABLE):
        raise FieldError(key, f"{name!r} is not {comparison.ALL!r} or an answerable class "
                              f"({', '.join(comparison.ANSWERABLE)}); abstain queries are judged by refusal rules")


def _nonnegative(rule, *names: str) -> None:
    for n in names:
        if getattr(rule, n) < 0:
            raise FieldError(n, "must not be negative")


@dataclass(frozen=True, kw_only=True)
class Rule:
    """Base of every rule type. ``name`` labels the rule in every output (default: its type and numbers)."""

    type: ClassVar[str] = ""
    name: str = ""

    @property
    def title(self) -> str:
        return self.name or self.default_title()

    def default_title(self) -> str:  # pragma: no cover - every rule type overrides it
        return self.type

    def evaluate(self, ctx: Context) -> Outcome:  # pragma: no cover - the protocol
        raise NotImplementedError

    def outcome(self, status: Status, summary: str, details=(), **numbers) -> Outcome:
        return Outcome(self.title, self.type, status, summary, tuple(details), numbers)


@dataclass(frozen=True, kw_only=True)
class NonInferiority(Rule):
    """The lower bound of the bootstrap CI of Δ = candidate - baseline must lie above -margin. The burden
    of proof is on the candidate: a CI too wide to show non-inferiority fails, because "we could not see a
    regression" is not "there is none"."""

    type: ClassVar[str] = "non-inferiority"
    measure: str = "nDCG@10(doc)"
    margin: float = 0.02
    cls: str = comparison.ALL

    def __post_init__(self):
        _check_measure(self.measure)
        _check_class(self.cls)
        _nonnegative(self, "margin")

    def default_title(self) -> str:
        return f"non-inferiority {self.measure} ({self.cls}) > -{self.margin:g}"

    def evaluate(self, ctx: Context) -> Outcome:
        r = ctx.row(self.measure, self.cls)
        ok = r["low"] > -self.margin
        pct = round(100 * ctx.settings.confidence)
        summary = (f"{_ci(r)}, n {int(r['n'])}: {pct}% lower bound {r['low']:+.3f} "
                   f"{'>' if ok else '<='} -{self.margin:g}{'' if ok else ', non-inferiority not shown'}")
        return self.outcome("pass" if ok else "fail", summary, n=int(r["n"]), base=r["base"], cand=r["cand"],
                            delta=r["delta"], low=r["low"], high=r["high"], mdd=r["mdd"], margin=self.margin)


@dataclass(frozen=True, kw_only=True)
class ClassDrop(Rule):
    """No answerable class may drop by more than ``max_drop`` (mean Δ). Per class: *fail* when Δ < -max_drop
    and the drop is significant (two-sided sign-flip p, Holm-adjusted over this rule's classes, below alpha);
    *pass* when the class could have detected a drop of max_drop (its MDD at the set power is at most
    max_drop); *underpowered* otherwise. The rule takes its worst class's status."""

    type: ClassVar[str] = "class-drop"
    measure: str = "nDCG@10(doc)"
    max_drop: float = 0.05
    classes: tuple[str, ...] = ()  # empty: every answerable class present

    def __post_init__(self):
        _check_measure(self.measure)
        _nonnegative(self, "max_drop")
        for c in self.classes:
            _check_class(c, "classes")

    def default_title(self) -> str:
        return f"class-drop {self.measure} per class >= -{self.max_drop:g}"

    def evaluate(self, ctx: Context) -> Outcome:
        s = ctx.settings
        classes = list(self.classes) or ctx.pair.classes
        rows = [ctx.row(self.measure, c) for c in classes]
        p_holm = stats.holm([r["p"] for r in rows])
        details, per_class = [], {}
        for c, r, ph in zip(classes, rows, p_holm, strict=True):
            pw = stats.power(self.max_drop, r["sd_delta"], int(r["n"]), s.alpha)
            if r["delta"] < -self.max_drop and ph < s.alpha:
                st: Status = "fail"
            elif r["mdd"] <= self.max_drop:
                st = "pass"
            else:
                st = "underpowered"
            details.append(Detail(c, st, f"{_ci(r)}, n {int(r['n'])}, p(Holm) {ph:.4f}, "
                                         f"{stats.mdd_text(r['mdd'], r['sd_delta'])}, "
                                         f"power at {self.max_drop:g} {stats.power_text(pw)}"))
            per_class[c] = {"n": int(r["n"]), "delta": r["delta"], "low": r["low"], "high": r["high"],
                            "p": r["p"], "p_holm": ph, "mdd": r["mdd"], "power": pw, "status": st}
        severity: tuple[Status, ...] = ("fail", "underpowered", "pass")
        worst = next(st for st in severity if any(d.status == st for d in details))
        family = f"Holm over {len(classes)} classes ({', '.join(classes)})"
        if worst == "fail":
            failed = [d for d in details if d.status == "fail"]
            summary = "; ".join(f"{d.label} dropped {-per_class[d.label]['delta']:.3f} > {self.max_drop:g} "
                                f"(p(Holm) {per_class[d.label]['p_holm']:.4f})" for d in failed)
        elif worst == "underpowered":
            weak = [d.label for d in details if d.status == "underpowered"]
            summary = (f"no significant drop beyond {self.max_drop:g}, but {', '.join(weak)} cannot detect it "
                       f"(MDD > {self.max_drop:g})")
        else:
            summary = f"every class could detect a drop of {self.max_drop:g} and none shows one"
        return self.outcome(worst, f"{summary}; {family}", details, classes=per_class, family=family,
                            max_drop=self.max_drop)


_HIT_MEASURES = (measures.gold_doc, measures.gold_hit, measures.success)


@dataclass(frozen=True, kw_only=True)
class LostQueries(Rule):
    """At most ``max_queries`` answerable queries may lose what the baseline found: 1 under the baseline
    and 0 under the candidate on a 0/1 measure (GoldDoc@k: the gold document left the first k documents).
    A count, not a test: every such query is a user who got a worse answer, whatever the average did."""

    type: ClassVar[str] = "lost-queries"
    measure: str = "GoldDoc@3"
    max_queries: int = 3

    def __post_init__(self):
        if _check_measure(self.measure).fn not in _HIT_MEASURES:
            raise FieldError("measure", f"{self.measure!r} is not a 0/1 measure (GoldDoc@k, GoldHit@k, Success@k)")
        _nonnegative(self, "max_queries")

    def default_title(self) -> str:
        return f"lost-queries {self.measure} <= {self.max_queries}"

    def evaluate(self, ctx: Context) -> Outcome:
        p = ctx.pair
        b, c = (r[self.measure][p.mask()] for r in (p.base_rows, p.cand_rows))
        lost, gained = b.index[(b == 1) & (c == 0)], b.index[(b == 0) & (c == 1)]
        ok = len(lost) <= self.max_queries
        by_class = p.query_class[lost]
        details = [Detail(c, "lost", f"{len(ids)}: {', '.join(ids)}")
                   for c in comparison.ANSWERABLE if len(ids := list(by_class.index[by_class == c]))]
        summary = (f"lost by {len(lost)} of {len(b)} queries, gained by {len(gained)}; "
                   f"at most {self.max_queries} may be lost")
        return self.outcome("pass" if ok else "fail", summary, details, lost=list(lost), gained=list(gained),
                            n=len(b), max_queries=self.max_queries)


@dataclass(frozen=True, kw_only=True)
class Refusal(Rule):
    """``rate = "wrongful"``: answerable queries refused (or answered with nothing) may not rise;
    ``rate = "correct"``: abstain queries refused may not fall. Paired on each query's outcome: of the
    queries whose outcome changed, *worse* changed for the worse. Fails when the exact one-sided McNemar
    test (worse ~ Binomial(worse + better, 1/2)) is significant at alpha; a change for the worse that is not
    significant is underpowered (it takes 5 more wrongful refusals than fixed ones to reach p < 0.05)."""

    type: ClassVar[str] = "refusal"
    rate: str = ""

    def __post_init__(self):
        if self.rate not in ("wrongful", "correct"):
            raise FieldError("rate", f"is 'wrongful' or 'correct', not {self.rate!r}")

    def default_title(self) -> str:
        if self.rate == "wrongful":
            return "refusal: wrongful refusal may not rise"
        return "refusal: correct refusal may not fall"

    def evaluate(self, ctx: Context) -> Outcome:
        r = comparison.refusal_changes(ctx.pair).set_index("rate").loc[f"{self.rate} refusal"]
        if not int(r["n"]):  # nothing to refuse, or nothing to answer: the rate is undefined, not kept
            return self.outcome("skipped", comparison.no_queries(str(r.name)), n=0)
        worse, better, p = int(r["worse"]), int(r["better"]), float(r["p_worse"])
        st: Status = "fail" if p < ctx.settings.alpha else "underpowered" if worse > better else "pass"
        summary = (f"{self.rate} refusal {r['base']:.3f} -> {r['cand']:.3f} over {int(r['n'])} queries; "
                   f"{worse} worse, {better} better, exact McNemar p {p:.4f}")
        return self.outcome(st, summary, n=int(r["n"]), base=r["base"], cand=r["cand"], worse=worse,
                            better=better, p=p)


@dataclass(frozen=True, kw_only=True)
class Floor(Rule):
    """The candidate's mean of ``measure`` (over all answerable queries, or one class) must be at least
    ``min``: an absolute product requirement on the point estimate, with its bootstrap CI shown."""

    type: ClassVar[str] = "floor"
    measure: str = "GoldDoc@3"
    min: float
    cls: str = comparison.ALL

    def __post_init__(self):
        _check_measure(self.measure)
        _check_class(self.cls)

    def default_title(self) -> str:
        return f"floor {self.measure} ({self.cls}) >= {self.min:g}"

    def evaluate(self, ctx: Context) -> Outcome:
        _, cand = ctx.pair.values(self.measure, self.cls)
        s = ctx.settings
        mean, low, high = stats.bootstrap_ci(cand, s.confidence, s.resamples, s.seed)
        ok = mean >= self.min
        summary = (f"candidate {mean:.3f} [{low:.3f}, {high:.3f}] over {cand.size} queries "
                   f"{'>=' if ok else '<'} {self.min:g}")
        return self.outcome("pass" if ok else "fail", summary, mean=mean, low=low, high=high, n=int(cand.size),
                            min=self.min)


@dataclass(frozen=True, kw_only=True)
class Latency(Rule):
    """Candidate over baseline seconds per query, at most ``max_ratio``, measured side by side: both arms
    re-timed in one process, interleaved query by query (:mod:`evalkit.timing`), the median of the
    per-query ratios (wall clock less the time each search waited for a core: :mod:`evalkit.latency`) with
    its distribution-free interval (:func:`evalkit.latency.paired_ratio`). *pass* when the upper bound is at
    most max_ratio, *fail* when the lower bound is above it, *underpowered* when the interval straddles it
    or too few queries were re-timed for an interval at the gate's confidence (five or fewer at 95%). The
    runs' recorded latencies were taken at other moments under other loads: they are reported, never decide.
    Skipped, saying why, when no paired timing could be taken."""

    type: ClassVar[str] = "latency"
    max_ratio: float = 1.2

    def __post_init__(self):
        _nonnegative(self, "max_ratio")

    def default_title(self) -> str:
        return f"latency ratio <= {self.max_ratio:g} (side by side)"

    def evaluate(self, ctx: Context) -> Outcome:
        rec = comparison.latency(ctx.pair)
        recorded = (f"recorded in the runs {rec['base'] * 1000:.1f} ms -> {rec['cand'] * 1000:.1f} ms, ratio "
                    f"{rec['ratio']:.2f} (other moments{'' if rec['comparable'] else ', other environments'}: "
                    "not deciding)")
        t = ctx.timing
        if not isinstance(t, PairedTiming):
            why = t.reason if isinstance(t, Untimed) else "no side-by-side timing was taken (evalkit.timing.retime)"
            return self.outcome("skipped", f"cannot re-time: {why}; {recorded}", recorded=rec)
        s = ctx.settings
        base_s, cand_s = t.times()
        ratio, low, high = paired_ratio(base_s, cand_s, s.confidence)
        st: Status = "pass" if high <= self.max_ratio else "fail" if low > self.max_ratio else "underpowered"
        pct = round(100 * s.confidence)
        mb, mc = float(np.median(base_s)), float(np.median(cand_s))
        clock = "wall clock less waits for a core" if t.clock == "unqueued" else "wall clock"
        verdict = (f"[{low:.2f}, {high:.2f}] ({pct}%) "
                   f"{'<=' if st == 'pass' else '>' if st == 'fail' else 'straddles'} {self.max_ratio:g}"
                   if not math.isnan(low) else
                   f"with too few queries for a {pct}% interval (it takes {fewest_timed(s.confidence)})")
        summary = (f"re-timed side by side over {t.n} queries (after {t.warmup} untimed), {clock}: "
                   f"median {1000 * mb:.2f} ms -> {1000 * mc:.2f} ms, paired ratio {ratio:.2f} {verdict}; {recorded}")
        return self.outcome(st, summary, ratio=ratio, low=low, high=high, n=t.n, warmup=t.warmup, clock=t.clock,
                            base_median_s=mb, cand_median_s=mc, load_average=list(t.load_average),
                            max_ratio=self.max_ratio, recorded=rec)


ROBUSTNESS_FILE = "robustness.json"


def robustness_report(results: Path, arm: str) -> Path:
    """Where ``evalkit robustness`` puts an arm's report by default: ``<results>/robustness/<arm>/``."""
    return results / "robustness" / slug(arm) / ROBUSTNESS_FILE


@dataclass(frozen=True, kw_only=True)
class Robustness(Rule):
    """How far ``measure`` may move when every document is renamed at random (seeded): the largest absolute
    shift over the permutations in the candidate's :func:`robustness_report` (written by ``evalkit robustness``)
    must be at most ``max_shift``. A ranking that depends on file names is decided by a tie-break."""

    type: ClassVar[str] = "robustness"
    measure: str = "nDCG@10"
    max_shift: float

    def __post_init__(self):
        _check_measure(self.measure)
        _nonnegative(self, "max_shift")

    def default_title(self) -> str:
        return f"robustness {self.measure} shift under renaming <= {self.max_shift:g}"

    def evaluate(self, ctx: Context) -> Outcome:
        cand = ctx.pair.cand
        path = robustness_report(cand.results.path, cand.arm)
        m = cand.results.manifest
        how = (f"run `evalkit robustness --corpus {m['corpus']['name']} --qrels {m['qrels'].get('path') or 'QRELS'} "
               f"--arm '{cand.arm}' --out {path.parent}` first")
        if not path.exists():
            raise RulesError(f"rule {self.title!r}: {path} not found: {how}")
        try:
            data = json.loads(path.read_text())
            shifts = data["measures"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise RulesError(f"rule {self.title!r}: {path} is not a robustness report ({e})") from None
        if data.get("arm") != cand.arm:
            raise RulesError(f"rule {self.title!r}: {path} is for arm {data.get('arm')!r}, not {cand.arm!r}: {how}")
        if self.measure not in shifts:
            raise RulesError(f"rule {self.title!r}: {path} has no measure {self.measure!r} "
                             f"(it has {', '.join(shifts)})")
        r = shifts[self.measure]
        ok = r["max_abs_shift"] <= self.max_shift
        summary = (f"{data.get('permutations', '?')} seeded renamings: {r['original']:.3f} moved to "
                   f"[{r['min']:.3f}, {r['max']:.3f}], largest shift {r['max_abs_shift']:.3f} "
                   f"{'<=' if ok else '>'} {self.max_shift:g}")
        return self.outcome("pass" if ok else "fail", summary, permutations=data.get("permutations"),
                            seed=data.get("seed"), **r, max_shift=self.max_shift)


RULES: dict[str, type[Rule]] = {r.type: r for r in (NonInferiority, ClassDrop, LostQueries, Refusal, Floor,
                                                    Latency, Robustness)}
ALIASES = {"class": "cls"}  # TOML key -> field (``class`` is a Python keyword)


@dataclass(frozen=True)
class Rules:
    """A parsed rules file and the sha256 of its bytes (part of every verdict)."""

    path: str
    sha256: str
    settings: Settings
    rules: tuple[Rule, ...]


def _coerce(value: Any, kind: Any, where: str) -> Any:
    origin = typing.get_origin(kind)
    if origin is tuple:
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise RulesError(f"{where}: expected a list of strings, got {value!r}")
        return tuple(value)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):  # TOML writes nan and inf; no threshold compares sensibly with them
            raise RulesError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise RulesError(f"{where}: expected {kind.__name__}, got {value!r}")


def _build(cls: type, table: dict, where: str) -> Any:
    """An instance of the dataclass ``cls`` from a TOML table, naming ``where`` in every error."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    keys = {ALIASES.get(k, k): k for k in table if k != "type"}
    unknown = sorted(k for f, k in keys.items() if f not in names)
    if unknown:
        known = ", ".join(next((a for a, f in ALIASES.items() if f == n), n) for n in sorted(names))
        raise RulesError(f"{where}: unknown field {unknown[0]!r} (fields: {known})")
    kwargs = {}
    for f in fields(cls):
        key = keys.get(f.name)
        if key is None:
            if f.default is MISSING and f.default_factory is MISSING:
                raise RulesError(f"{where}: missing field "
                                 f"{next((a for a, n in ALIASES.items() if n == f.name), f.name)!r}")
            continue
        kwargs[f.name] = _coerce(table[key], hints[f.name], f"{where}: field {key!r}")
    try:
        return cls(**kwargs)
    except FieldError as e:
        raise RulesError(f"{where}: field "
                         f"{next((a for a, n in ALIASES.items() if n == e.field), e.field)!r} {e}") from None


def load(path: Path | str) -> Rules:
    """Parse a rules file; any problem raises :class:`RulesError` naming the file, the rule and the field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RulesError(f"rules file {path}: {e.strerror}") from None
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RulesError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(doc) - {"gate", "rule"})
    if unknown:
        raise RulesError(f"{path}: unknown table {unknown[0]!r} (expected [gate] and [[rule]])")
    settings = _build(Settings, doc.get("gate", {}), f"{path} [gate]")
    tables = doc.get("rule", [])
    if not isinstance(tables, list) or not tables:
        raise RulesError(f"{path}: no [[rule]] tables: a gate needs at least one rule")
    rules = []
    for i, t in enumerate(tables, 1):
        kind = t.get("type")
        where = f"{path} rule {i}" + (f" ({kind})" if isinstance(kind, str) else "")
        if kind not in RULES:
            what = "missing field 'type'" if kind is None else f"unknown type {kind!r}"
            raise RulesError(f"{where}: {what} (types: {', '.join(RULES)})")
        rules.append(_build(RULES[kind], t, where))
    titles = [r.title for r in rules]
    dup = next((t for t in titles if titles.count(t) > 1), None)
    if dup:
        raise RulesError(f"{path}: two rules are called {dup!r}; give one a name")
    return Rules(str(path), hashlib.sha256(raw).hexdigest(), settings, tuple(rules))


def evaluate(rules: Rules, pair: comparison.Pair, timing: PairedTiming | Untimed | None = None,
             ctx: Context | None = None) -> tuple[Outcome, ...]:
    """Every rule's outcome, in file order (``timing``: the side-by-side timing the latency rule decides
    on; ``ctx``: the pair's statistics, when they are shared with :func:`detectable`). A rule that cannot be
    evaluated raises :class:`RulesError` naming it."""
    ctx = ctx or Context(pair, rules.settings, timing)
    out = []
    for rule in rules.rules:
        try:
            out.append(rule.evaluate(ctx))
        except RulesError:
            raise
        except comparison.CompareError as e:
            raise RulesError(f"{rules.path} rule {rule.title!r}: {e}") from None
    return tuple(out)


def detectable(rules: Rules, ctx: Context) -> tuple[str, ...]:
    """What the query set can detect, said before any rule's verdict: for each measure a rule tests by its
    mean Δ (non-inferiority, class-drop), the MDD and n of all answerable queries and of each class."""
    lines = []
    for m in dict.fromkeys(r.measure for r in rules.rules if isinstance(r, (NonInferiority, ClassDrop))):
        parts = [f"{cls} {stats.mdd_text(r['mdd'], r['sd_delta'])} (n {int(r['n'])})"
                 for cls, r in ctx.table(m).iterrows()]
        lines.append(f"{m} at {ctx.settings.power:.0%} power: {'; '.join(parts)}")
    return tuple(lines)


def finite(value: Any) -> Any:
    """NaN and infinities as None, recursively: JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value

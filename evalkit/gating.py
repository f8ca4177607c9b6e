"""The gate: may the candidate replace the baseline? One verdict record, rendered as a terminal table, JSON,
JUnit XML (one test case per rule, so CI pages list them), Markdown (``$GITHUB_STEP_SUMMARY``) and HTML
(Jupyter). Exit codes: 0 every rule passed, 1 a rule failed, 2 the gate could not be evaluated (raised as
:class:`evalkit.comparison.CompareError` before any verdict exists). With a judge (:mod:`evalkit.judged`) a rule
may be *undecided*: it exits 1 like a failure (CI must not ship on a verdict nobody could reach) unless the
caller chose ``undecided="pass"``.

JUnit XML is written with the standard library's ElementTree: the format is four elements, and the
``junit-xml`` package would add a dependency (unreleased since 2020) for no gain.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

from . import comparison, dirs, judged, oserrors, qrels, rules
from . import escape as esc
from .atomic import replacing
from .latency import PairedTiming, Untimed
from .rules import Detail, Outcome, Status
from .version import __version__

GATE_FILE = "gate.json"  # written into the candidate's results directory, read by the report notebook
MARK = {"pass": "PASS", "fail": "FAIL", "underpowered": "UNDERPOWERED", "skipped": "SKIPPED", "undecided": "UNDECIDED"}
COLOUR = {"pass": "#1a7f37", "fail": "#cf222e", "underpowered": "#9a6700", "skipped": "#6e7781", "undecided": "#9a6700"}
UNDECIDED = ("fail", "pass")  # what an undecided rule does to the exit code


@dataclass(frozen=True)
class Verdict:
    """Every rule's outcome for one baseline/candidate pair under one rules file (named by its sha256)."""

    baseline: str
    candidate: str
    rules_file: str
    rules_sha256: str
    settings: dict
    corpus: str
    query_set: str
    queries: int
    outcomes: tuple[Outcome, ...]
    notes: tuple[str, ...] = ()
    evalkit: str = __version__
    computed_on: dict = field(default_factory=dict)  # "baseline"/"candidate" -> computed_on(side)
    detectable: tuple[str, ...] = ()  # what the set can detect (MDD, n), said before the rules' lines
    timing: dict = field(default_factory=dict)  # the side-by-side timing the latency rule decided on (timing_record)
    judge: dict = field(default_factory=dict)  # with a judge: judged.Judge.record (identity, who graded what)
    undecided: str = "fail"  # an undecided rule blocks ("fail") or not ("pass")

    @property
    def blocking(self) -> tuple[Outcome, ...]:
        """The outcomes that fail the gate: failures, and underpowered rules when the rules say they block."""
        bad = {"fail", "underpowered"} if self.settings.get("underpowered_blocks") else {"fail"}
        bad |= {"undecided"} if self.undecided == "fail" else set()
        return tuple(o for o in self.outcomes if o.status in bad)

    @property
    def passed(self) -> bool:
        return not self.blocking

    @property
    def status(self) -> Status:
        """The verdict in one word: pass; undecided when every blocking rule is undecided (a judge's
        predictions could not settle it: grade more), else fail. Each form of the verdict says the same."""
        if self.passed:
            return "pass"
        return "undecided" if all(o.status == "undecided" for o in self.blocking) else "fail"

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def counts(self) -> str:
        n = {s: sum(o.status == s for o in self.outcomes) for s in rules.STATUSES}
        return f"{len(self.outcomes)} rules: " + ", ".join(f"{v} {k}" for k, v in n.items() if v)

    def headline(self) -> str:
        if self.passed:
            return f"evalkit gate: PASS (exit 0) — {self.counts()}"
        if self.status == "undecided":
            return (f"evalkit gate: UNDECIDED (exit 1: an undecided rule blocks unless --undecided pass) — "
                    f"{self.counts()}. Undecided: {self.named({'undecided'})}")
        failed, undecided = self.named({"fail", "underpowered"}), self.named({"undecided"})
        return (f"evalkit gate: FAIL (exit 1) — {self.counts()}. Failed: {failed}"
                + (f". Undecided: {undecided}" if undecided else ""))

    def named(self, statuses: set[str]) -> str:
        """The blocking rules of ``statuses`` by name, each with its failed classes."""
        return "; ".join(esc.terminal(o.rule) + (f" [{', '.join(map(esc.terminal, bad))}]" if (
            bad := [d.label for d in o.details if d.status == "fail"]) else "")
            for o in self.blocking if o.status in statuses)

    def judge_lines(self) -> list[str]:
        """The judge record beside the verdict, in words: which judge, which queries a person graded, the
        judge-person correlation per rule (per class), and what deciding each undecided rule takes."""
        j = self.judge
        if not j:
            return []
        graded = list(j.get("graded_queries", []))
        named = ", ".join(graded[:judged.SHOWN]) + (", …" if len(graded) > judged.SHOWN else "")
        r = "; ".join(f"{rule} {_correlation(v)}" for rule, v in j.get("agreement", {}).items())
        model = judged.short_model(str(j.get("model") or ""))
        return [f"judge: predictions {j.get('predictions')} (sha256 {str(j.get('sha256'))[:16]}{model})",
                f"graded by a person: {len(graded)} queries whole{': ' + named if graded else ''}",
                *([f"judge-person r: {r}"] if r else []),
                *(f"{label}: {v.get('to_grade', '')}" for label, v in j.get("undecided", {}).items())]

    # ---- JSON ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return rules.finite({**asdict(self), "status": self.status, "passed": self.passed, "exit_code": self.exit_code})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "Verdict":
        outcomes = tuple(Outcome(**{**o, "details": tuple(Detail(**x) for x in o["details"])}) for o in d["outcomes"])
        keep = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**{**keep, "outcomes": outcomes, "notes": tuple(d.get("notes", ())),
                      "detectable": tuple(d.get("detectable", ()))})

    # ---- terminal --------------------------------------------------------------------------------------
    def text(self) -> str:
        """The terminal table; every field on its own line, control characters from data escaped."""
        t = esc.terminal
        width = max(len(t(o.rule)) for o in self.outcomes)
        lines = [f"baseline  {t(self.baseline)}", f"candidate {t(self.candidate)}",
                 f"rules     {t(self.rules_file)}  sha256 {t(self.rules_sha256)}",
                 f"corpus    {t(self.corpus)}, query set {t(self.query_set)}, {self.queries} queries",
                 *(f"detects   {t(d)}" for d in self.detectable), ""]
        for o in self.outcomes:
            lines.append(f"{MARK.get(o.status, t(o.status)):<13} {t(o.rule):<{width}}  {t(o.summary)}")
            lines += [f"{'':<15}{t(d.label):<10} {t(d.status):<13} {t(d.text)}" for d in o.details]
        lines += ["", *(f"note: {t(n)}" for n in self.notes), *(t(x) for x in self.judge_lines()), self.headline()]
        return "\n".join(lines)

    # ---- Markdown --------------------------------------------------------------------------------------
    def markdown(self) -> str:
        cell = esc.markdown
        out = [f"### evalkit gate: {MARK[self.status]}", "",
               esc.markdown_fill("Baseline {baseline!c}, candidate {candidate!c}; corpus {corpus}, query set {qrels}, "
                                 "{queries} queries. Rules {rules!c}, sha256 {sha!c}.", baseline=self.baseline,
                                 candidate=self.candidate, corpus=self.corpus, qrels=self.query_set,
                                 queries=self.queries, rules=self.rules_file, sha=self.rules_sha256),
               *(f"\nWhat this set can detect: {cell(d)}" for d in self.detectable),
               "", "| verdict | rule | numbers |", "|---|---|---|"]
        out += [f"| **{cell(MARK.get(o.status, o.status))}** | {cell(o.rule)} | {cell(o.summary)} |"
                for o in self.outcomes]
        for o in self.outcomes:
            if o.details:
                out += ["", f"<details><summary>{esc.html(o.rule)}</summary>", "",
                        "| | verdict | numbers |", "|---|---|---|"]
                out += [f"| {cell(d.label)} | {cell(d.status)} | {cell(d.text)} |" for d in o.details]
                out += ["", "</details>"]
        out += ["", *(f"> {cell(n)}" for n in self.notes), *(f"- {cell(x)}" for x in self.judge_lines()), "",
                f"{self.counts()}; exit {self.exit_code}.", ""]
        return "\n".join(out)

    # ---- JUnit XML -------------------------------------------------------------------------------------
    def junit(self) -> str:
        """One ``testcase`` per rule: a failure for a blocking rule, ``skipped`` for a skipped one and for
        an underpowered one that does not block (CI pages show both apart from passes). Every string passes
        :func:`evalkit.escape.xml`: ElementTree escapes markup but writes control characters XML forbids."""
        x = esc.xml
        blocking = {id(o) for o in self.blocking}
        suites = ET.Element("testsuites")
        suite = ET.SubElement(suites, "testsuite", name="evalkit gate", tests=str(len(self.outcomes)),
                              failures=str(len(blocking)), errors="0",
                              skipped=str(sum(o.status != "pass" and id(o) not in blocking for o in self.outcomes)))
        props = ET.SubElement(suite, "properties")
        for k, v in (("baseline", self.baseline), ("candidate", self.candidate), ("rules_file", self.rules_file),
                     ("rules_sha256", self.rules_sha256), ("evalkit", self.evalkit)):
            ET.SubElement(props, "property", name=k, value=x(v))
        for o in self.outcomes:
            case = ET.SubElement(suite, "testcase", classname=x(f"evalkit.gate.{o.type}"), name=x(o.rule))
            body = x("\n".join([o.summary, *(f"{d.label}: {d.status}: {d.text}" for d in o.details)]))
            if id(o) in blocking:
                ET.SubElement(case, "failure", message=x(o.summary), type=x(o.status)).text = body
                continue
            if o.status != "pass":
                ET.SubElement(case, "skipped", message=x(f"{o.status}: {o.summary}"))
            ET.SubElement(case, "system-out").text = body
        ET.indent(suites)
        return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"

    # ---- Jupyter ---------------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        def badge(status: str) -> str:
            return f'<b style="color:{COLOUR.get(status, "inherit")}">{esc.html(MARK.get(status, status))}</b>'

        rows = []
        for o in self.outcomes:
            rows.append(f"<tr><td>{badge(o.status)}</td><td>{esc.html(o.rule)}</td>"
                        f"<td style='text-align:left'>{esc.html(o.summary)}</td></tr>")
            rows += [f"<tr><td></td><td style='padding-left:2em'>{esc.html(d.label)} {badge(d.status)}</td>"
                     f"<td style='text-align:left'>{esc.html(d.text)}</td></tr>" for d in o.details]
        notes = "".join(f"<p>note: {esc.html(n)}</p>" for n in self.notes)
        if lines := self.judge_lines():
            notes += "<ul class='ek-gate-judge'>" + "".join(f"<li>{esc.html(x)}</li>" for x in lines) + "</ul>"
        detects = "".join(f"<p>what this set can detect: {esc.html(d)}</p>" for d in self.detectable)
        return (f"<p>{badge(self.status)} {esc.html(self.counts())} — baseline "
                f"<code>{esc.html(self.baseline)}</code>, candidate <code>{esc.html(self.candidate)}</code>; "
                f"rules <code>{esc.html(self.rules_file)}</code> sha256 "
                f"<code>{esc.html(self.rules_sha256)}</code></p>{detects}"
                f"<table><tr><th>verdict</th><th>rule</th><th>numbers</th></tr>{''.join(rows)}</table>{notes}")

    def __repr__(self) -> str:
        return self.text()


def _correlation(v: object) -> str:
    """A judge-person r as gate.json holds it: one number, or one per class."""
    if isinstance(v, dict):
        return "(" + ", ".join(f"{c} {_correlation(x)}" for c, x in v.items()) + ")"
    return f"{v:.2f}" if isinstance(v, (int, float)) and not math.isnan(v) else "—"


def evaluate(baseline: comparison.Side, candidate: comparison.Side, rules_path: Path | str | None = None,
             allow_different_queries: bool = False, timing: PairedTiming | Untimed | None = None,
             judge: judged.Loader | None = None, undecided: str = "fail") -> Verdict:
    """Pair the two sides and evaluate every rule of ``rules_path`` (default: :func:`evalkit.dirs.rules_path`,
    ./gate.toml else the rules shipped with evalkit); the latency rule decides on ``timing``, both arms
    re-timed side by side (:func:`evalkit.timing.for_gate`), and is skipped without it. Anything that stops the
    evaluation (another corpus or query set, runs of different depths, a bad rules file, a missing robustness report)
    raises CompareError. A depth mismatch stops it because documents are ranked from the pages a run kept,
    so every document-level measure moves with depth alone. ``judge`` (``judged.Loader(predictions, query_set)``):
    the pair holds every query, ungraded ones included, and the rules resting on measures are decided from the
    person's grades plus the judge's predictions (:mod:`evalkit.judged`); ``undecided``: "fail" or "pass", what an
    undecided rule does to the exit code."""
    if undecided not in UNDECIDED:
        raise comparison.CompareError(f"undecided={undecided!r}: want one of {', '.join(UNDECIDED)}")
    parsed = rules.load(rules_path or dirs.rules_path())
    if judge:
        baseline, candidate = judge.sides(baseline, candidate)
    pair = comparison.pair(baseline, candidate, allow_different_queries)
    if pair.depths[0] != pair.depths[1]:
        raise comparison.CompareError(f"the runs kept {pair.depths[0]} and {pair.depths[1]} hits per query "
                                   f"({baseline.label}, {candidate.label}): rerun one with -k {max(pair.depths)}")
    ctx = rules.Context(pair, parsed.settings, timing)
    j = judge(pair) if judge else None
    outcomes = j.outcomes(parsed, ctx) if j else rules.evaluate(parsed, pair, ctx=ctx)
    m = candidate.results.manifest
    return Verdict(baseline=baseline.label, candidate=candidate.label, rules_file=parsed.path,
                   rules_sha256=parsed.sha256, settings=asdict(parsed.settings), corpus=m["corpus"]["name"],
                   query_set=f"{m['qrels']['name']} ({m['qrels']['digest'][:12]})", queries=len(pair.base_rows),
                   outcomes=outcomes, notes=tuple(comparison.notes(pair)) + ((j.note(),) if j else ()),
                   detectable=() if j else rules.detectable(parsed, ctx),
                   computed_on={"baseline": computed_on(baseline), "candidate": computed_on(candidate)},
                   judge=j.record(outcomes) if j else {}, undecided=undecided, timing=timing_record(timing))


def timing_record(timing: PairedTiming | Untimed | None) -> dict:
    """A side-by-side timing as a verdict records it (:func:`recorded_timing` reads it back)."""
    if isinstance(timing, PairedTiming):
        return {"paired": asdict(timing)}
    return {"untimed": timing.reason} if isinstance(timing, Untimed) else {}


def recorded_timing(record: dict) -> PairedTiming | Untimed | None:
    """The timing :func:`timing_record` wrote (JSON lists as tuples, null as NaN)."""
    if "paired" in record:
        fields: dict[str, Any] = {k: tuple(math.nan if x is None else x for x in v) if isinstance(v, list) else v
                                  for k, v in record["paired"].items()}
        return PairedTiming(**fields)
    return Untimed(record["untimed"]) if "untimed" in record else None


def computed_on(side: comparison.Side) -> dict:
    """What a verdict was computed on for one side: its directory, arm, corpus and query-set digests and the
    sha256 of its measures (``per_query.parquet``). The report shows a verdict only while these still hold."""
    m = side.results.manifest
    pq = (side.results.path / "per_query.parquet").read_bytes()
    return {"path": str(side.results.path.resolve()), "arm": side.arm, "corpus": m["corpus"]["digest"],
            "qrels": m["qrels"]["digest"], "per_query": hashlib.sha256(pq).hexdigest()}


def _changed(recorded: dict, directory: Path) -> str | None:
    """Why ``directory`` no longer holds what ``recorded`` says a verdict was computed on (None: it does)."""
    try:
        now = computed_on(comparison.side(directory, recorded["arm"]))
    except (comparison.CompareError, OSError, KeyError, TypeError) as e:
        return f"{directory} cannot be checked ({e})"
    differ = [k for k in ("corpus", "qrels", "per_query") if now[k] != recorded.get(k)]
    return f"{directory}: its {', '.join(differ)} changed since the verdict" if differ else None


def judge_changed(verdict: Verdict) -> str | None:
    """Why a verdict decided with a judge no longer holds: its predictions file is gone or changed (None: it
    holds, or no judge was used)."""
    if not verdict.judge:
        return None
    path = Path(verdict.judge.get("predictions", ""))
    try:
        now = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as e:
        return f"the judge's predictions {path} cannot be read ({e.strerror}): the verdict rests on them"
    if now != verdict.judge.get("sha256"):
        return (f"the judge changed since the verdict: {path} has sha256 {now[:12]}, the verdict used "
                f"{str(verdict.judge.get('sha256'))[:12]}")
    return None


def stale_judge(results_dir: Path) -> str | None:
    """Why the verdict stored in ``results_dir`` rests on a judge that changed (None: it does not, or there
    is no readable verdict: the report says so itself)."""
    try:
        return judge_changed(read(Path(results_dir) / GATE_FILE))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def current(verdict: Verdict, candidate_dir: Path) -> Verdict | str:
    """``verdict`` if both runs still hold what it was computed on, its judge, if any, is unchanged, and its
    rules, evaluated on them again, give what it records (:func:`rederived`); else why not."""
    if why := judge_changed(verdict):
        return why
    if not {"baseline", "candidate"} <= set(verdict.computed_on):
        return "it records no digests of the runs it was computed on (an older evalkit wrote it)"
    if why := _changed(verdict.computed_on["candidate"], Path(candidate_dir)):
        return why
    base = Path(verdict.computed_on["baseline"].get("path", ""))
    if not (base / "manifest.json").exists():
        return f"its baseline {base} is not on this machine, so the verdict cannot be evaluated again"
    return _changed(verdict.computed_on["baseline"], base) or rederived(verdict, base, Path(candidate_dir))


def _plain(value: object) -> object:
    """A record as its JSON reads back (tuples as lists, NaN as null), so a stored and a fresh one compare."""
    return json.loads(json.dumps(rules.finite(asdict(value) if isinstance(value, Outcome) else value)))


def rederived(verdict: Verdict, base_dir: Path, cand_dir: Path) -> Verdict | str:
    """``verdict`` when its rules file (unchanged: same sha256), evaluated again on both runs and on the
    side-by-side timing it records, gives the outcomes it records; else why not. gate.json is data: an edited
    one (a FAIL turned PASS) must not pass for the gate's verdict. A relative rules path is the caller's
    (``EVALKIT_WORKDIR`` inside the report's kernel)."""
    path = Path(verdict.rules_file)
    path = path if path.is_absolute() else Path(os.environ.get("EVALKIT_WORKDIR") or Path.cwd()) / path
    on = verdict.computed_on
    try:
        if hashlib.sha256(path.read_bytes()).hexdigest() != verdict.rules_sha256:
            return f"its rules file {path} changed since the verdict, so the verdict cannot be evaluated again"
        judge = judged.Loader(verdict.judge["predictions"], qrels.load(verdict.judge["queries"])) \
            if verdict.judge else None
        again = evaluate(comparison.side(base_dir, on["baseline"]["arm"]),
                         comparison.side(cand_dir, on["candidate"]["arm"]),
                         path, on["baseline"].get("qrels") != on["candidate"].get("qrels"),
                         recorded_timing(verdict.timing),
                         judge, verdict.undecided)
    except OSError as e:
        return f"its rules file {path} cannot be read ({e.strerror}), so the verdict cannot be evaluated again"
    except (comparison.CompareError, qrels.QrelsError, TypeError, ValueError, KeyError) as e:
        return f"it cannot be evaluated again ({e})"
    for fresh, stored in zip_longest(again.outcomes, verdict.outcomes):
        if not isinstance(stored, Outcome) or _plain(fresh) != _plain(stored):
            rule = fresh.rule if fresh else stored.rule
            said = f"records {stored.status!r}" if isinstance(stored, Outcome) else "does not record it"
            again_ = f"evaluated again {fresh.status if fresh else 'absent'!r}"
            if isinstance(stored, Outcome) and fresh and fresh.status == stored.status:
                again_ = "evaluated again the same, with other figures or words"
            return (f"{GATE_FILE} does not match what its rules give on these runs (rule {rule!r}: it {said}, "
                    f"{again_}): it was edited, or written by another evalkit; run `evalkit gate` again")
    return verdict if _plain(again.settings) == _plain(verdict.settings) else \
        f"{GATE_FILE} does not match what its rules give on these runs (its [gate] settings differ): run " \
        "`evalkit gate` again"


def read(path: Path | str) -> Verdict:
    return Verdict.from_dict(json.loads(Path(path).read_text()))


class NotRecorded(UserWarning):
    """A verdict that stands but could not be written to ``gate.json`` (a read-only folder, a full disk)."""


def record(verdict: Verdict, results_dir: Path | str) -> None:
    """Write ``verdict`` to ``results_dir/gate.json`` for the report. A folder that cannot take it does not
    take the verdict away (CI gates read-only checkouts): the warning :class:`NotRecorded` names the file and
    why, and the caller's exit code is still the verdict's."""
    path = Path(results_dir) / GATE_FILE
    try:
        with replacing(path) as tmp:
            tmp.write_text(verdict.to_json())
    except OSError as e:
        warnings.warn(NotRecorded(f"{oserrors.describe(e, path)}: the verdict stands, but the report of "
                                  f"{results_dir} will not show it"), stacklevel=2)


@dataclass(frozen=True)
class NoVerdict:
    """What the report shows when a results directory holds no gate verdict."""

    path: str
    why: str = f"{GATE_FILE} is absent"

    def __repr__(self) -> str:
        return (f"No gate verdict in {self.path} ({self.why}): run `evalkit gate --baseline DIR:ARM "
                f"--candidate {self.path}:ARM --rules gate.toml` to make one.")

    def _repr_html_(self) -> str:
        return f"<p>{esc.html(repr(self))}</p>"


def show(results_dir: Path | str) -> Verdict | NoVerdict:
    """The gate verdict stored in a results directory, for a notebook cell, while the runs it was computed on
    are unchanged; says so when there is none, or none that still holds."""
    path = Path(results_dir) / GATE_FILE
    if not path.exists():
        return NoVerdict(str(results_dir))
    try:
        held = current(read(path), Path(results_dir))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:  # a gate.json evalkit did not write
        return NoVerdict(str(results_dir), f"{GATE_FILE} cannot be read: {type(e).__name__}: {e}")
    return held if isinstance(held, Verdict) else NoVerdict(str(results_dir),
                                                            f"the stored verdict no longer holds: {held}")

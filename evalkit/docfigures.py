"""The measured tables of the docs (docs/figures/<name>.md), each computed by evalkit's own functions from the
results its command wrote, never typed: a figure file's first line names that command, its second the machine,
load and date the numbers come from, then the table. ``benchmarks/docs_figures.py`` (``make docs-figures``)
runs the commands that take minutes and reads the results of those that take an hour or need services; a
figure whose results are not there says, in one line, which command to run first.

This module reads results only: commands are run by the script, as a user runs them, and the bench and refusal
readers (which load the arms) are imported by the tables that need them, so the rest loads neither the runner
nor PyMuPDF (tests/test_layering.py).
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from . import benchdir, calibration, comparison, gating, stats
from .escape import markdown_fill as fill
from .escape import markdown_inline as md
from .results import Results

GENERATOR = "make docs-figures"


class FigureMissing(Exception):
    """The results a figure reads are not there; the message names the command that makes them."""


# ---- Markdown ------------------------------------------------------------------------------------------

def cell(v: object, digits: int = 3) -> str:
    """One table cell: floats to ``digits`` decimals, NaN as n/a, anything else as inert Markdown."""
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.{digits}f}"
    return md(v)


def markdown_table(frame: pd.DataFrame, digits: int = 3, index: bool = True) -> str:
    """A pipe table of ``frame`` (its index as the first columns when ``index``)."""
    f = frame.reset_index() if index else frame
    head = "| " + " | ".join(md(c) for c in f.columns) + " |"
    rule = "|" + "---|" * len(f.columns)
    rows = ["| " + " | ".join(cell(v, digits) for v in row) + " |" for row in f.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


# ---- where and when ------------------------------------------------------------------------------------

def moment() -> dict:
    """This machine now: CPU model, cores, load average, UTC time (what a re-run figure records twice)."""
    return {"cpu": calibration.cpu_model(), "cores": os.cpu_count(), "load": calibration.load_average(),
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _load(values: Sequence[float]) -> str:
    """Load averages as ``1.00 / 2.00 / 3.00`` (a value that is not a number, from a hand-edited record, as is)."""
    return " / ".join(fill("{v:.2f}", v=v) for v in values) if isinstance(values, (list, tuple)) else fill("{v}",
                                                                                                           v=values)


def machine_line(start: dict, end: dict) -> str:
    """The second line of a figure its command produced just now."""
    return (fill("Machine: {cpu}, {cores} cores; load average (1 / 5 / 15 min) ", cpu=start["cpu"],
                 cores=start["cores"])
            + f"{_load(start['load'])} at the start, {_load(end['load'])} at the end; "
            + fill("{begin} to {end} UTC.", begin=start["time"][:16].replace("T", " "), end=end["time"][11:16]))


def machine_of(env: dict) -> str:
    """The machine an environment record (a manifest's or a bench's) names: CPU and cores, else platform."""
    cal = env.get("calibration") or {}
    m = env.get("machine") or {}
    cpu = cal.get("cpu_model") or m.get("processor") or "unknown CPU"
    return f"{cpu}, {cal.get('cores') or m.get('cpus', '?')} cores ({m.get('platform', 'platform not recorded')})"


def recorded_line(env: dict, when: str) -> str:
    """The second line of a figure read from results: when and on what they were measured, and the load
    average when the record has one (records from before calibration do not)."""
    cal = env.get("calibration") or {}
    load = ""
    if cal.get("start") and cal.get("end"):
        load = (f"; load average (1 / 5 / 15 min) {_load(cal['start']['load_average'])} at the start, "
                f"{_load(cal['end']['load_average'])} at the end")
    elif not cal:
        load = "; no load average recorded (results from before evalkit recorded one)"
    when = str(when)
    stamp = f"{when[:16].replace('T', ' ')} UTC" if when[:4].isdigit() else when
    return fill("Measured {stamp} on {machine} (the results' environment record)", stamp=stamp,
                machine=machine_of(env)) + f"{load}."


def run_record(path: Path) -> tuple[dict, str]:
    """(environment, when) of a results directory (``manifest.json``) or a bench directory (``environment.json``)."""
    if (path / "manifest.json").exists():
        m = json.loads((path / "manifest.json").read_text())
        return m.get("environment") or {}, m.get("finished") or m.get("started") or "date not recorded"
    env = json.loads((path / "environment.json").read_text())
    return env, ((env.get("calibration") or {}).get("start") or {}).get("time", "date not recorded")


# ---- figures -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Figure:
    """One docs figure. ``commands`` are shown with ``{results}`` and ``{out}`` as ``results`` (what a user with
    the defaults runs); ``mode`` says who produces the numbers: ``run`` (the script runs the commands, minutes),
    ``compute`` (the table function is the command, in-process, seconds) or ``read`` (the results were made
    earlier by ``first``; the figure says when and on what). ``table(results, out)`` returns Markdown and
    raises :class:`FigureMissing` when what it reads is not there; ``record`` names the directory whose
    environment record a ``read`` figure quotes."""

    name: str
    commands: tuple[str, ...]
    table: Callable[[Path, Path], str]
    mode: str = "read"
    first: str = ""
    record: str = ""


def shown(command: str) -> str:
    return command.format(results="results", out="results")


def command_line(fig: Figure) -> str:
    cmds = "; ".join(f"`{shown(c)}`" for c in fig.commands)
    after = f" (after `{fig.first}`)" if fig.first else ""
    return f"Command: {cmds}{after}; written by `{GENERATOR}`."


def render(fig: Figure, table: str, when: str) -> str:
    """A figure file: the command line, the machine/date line and the table, each its own paragraph."""
    return f"{command_line(fig)}\n\n{when}\n\n{table.rstrip()}\n"


def missing(fig: Figure, why: str) -> str:
    """The file of a figure whose results are not there: which command to run first, in one line."""
    return f"{command_line(fig)}\n\nNot measured yet: {why}; then `{GENERATOR}`.\n"


def need(path: Path, first: str = "") -> Path:
    """``path`` if it exists, else :class:`FigureMissing` naming the command that makes it (``first``; without
    it, the figure's own commands)."""
    if not path.exists():
        raise FigureMissing(f"run `{first}`" if first else "run the commands on the line above")
    return path


def splice(text: str, name: str, content: str) -> str:
    """``text`` (the README) with ``content`` between its ``<!-- BEGIN name -->`` and ``<!-- END name -->``
    lines; unchanged when it has no such pair."""
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    head, found, rest = text.partition(begin)
    _, closed, tail = rest.partition(end)
    if not (found and closed):
        return text
    return f"{head}{begin}\n{content.rstrip()}\n{end}{tail}"


# ---- tables --------------------------------------------------------------------------------------------

def summary_table(path: Path, by_class: bool = False, arms: Callable[[str], bool] | None = None) -> str:
    """``evalkit summary`` as a pipe table: its title line, then one row per arm (and class)."""
    res = Results.load(path)
    table = res.table(by_class=by_class)
    if arms:
        keep = [a for a in table.index.get_level_values("arm") if arms(a)]
        if not keep:
            raise FigureMissing(f"{path} holds none of the arms this figure shows")
        table = table[table.index.get_level_values("arm").isin(keep)]
    m = res.manifest
    title = fill("{corpus} × {qrels} ({queries} queries)", line_start=True, corpus=m["corpus"]["name"],
                 qrels=m["qrels"]["name"], queries=m["qrels"]["queries"])
    return f"{title}\n\n{markdown_table(table)}"


def compare_table(base: str, cand: str, measures: tuple[str, ...]) -> str:
    """``evalkit compare BASE CAND --measures ...``: the paired table (Δ, CI, p, Holm, W/T/L, MDD), then the
    refusal and latency lines, as :func:`evalkit.comparison.render` computes them."""
    pair = comparison.pair(comparison.side(base), comparison.side(cand))
    frame = comparison.formatted(comparison.with_holm(comparison.table(pair, measures)))
    lat = comparison.latency(pair)
    lines = [f"{int(pair.mask(comparison.ALL).sum())} answerable queries paired by id (abstain queries: "
             "refusal rates).", "",
             markdown_table(frame, index=False), ""]
    lines += [f"- {comparison.refusal_text(r, '→')}" for r in comparison.refusal_changes(pair).itertuples()]
    lines.append(f"- latency (median s/query): {lat['base']:.4f} → {lat['cand']:.4f}, ratio {lat['ratio']:.2f}")
    return "\n".join(lines)


def verdict_table(v: gating.Verdict) -> str:
    """A gate verdict as one pipe table: each rule, then its per-class lines, then the headline."""
    rows = []
    for o in v.outcomes:
        rows.append({"verdict": gating.MARK.get(o.status, o.status), "rule": o.rule, "class": "", "numbers": o.summary})
        rows += [{"verdict": d.status, "rule": "", "class": d.label, "numbers": d.text} for d in o.details]
    head = [fill("Corpus {corpus}, query set {qrels}, {queries} queries; rules sha256 {sha}.", corpus=v.corpus,
                 qrels=v.query_set, queries=v.queries, sha=str(v.rules_sha256)[:12]), ""]
    head += [fill("What the set can detect: {d}.", d=d) for d in v.detectable]
    return "\n".join([*head, "", markdown_table(pd.DataFrame(rows), index=False), "",
                      fill("**{headline}**", headline=v.headline())])


SIMULATION_COLUMNS = {  # summary.csv column -> heading
    "pages to target (tau alone)": "pages to tau >= 0.9 (both levels)",
    "pages to target (vs full)": "pages to target vs full judgments",
    "pages to target (vs pool)": "pages to target vs whole pool",
    "share of depth-10 pool (vs pool)": "share of depth-10 pool",
    "pages at knee": "knee method stops at", "tau_page at knee": "tau page there", "tau_doc at knee": "tau doc there",
    "gate_vs_full at knee": "gate changes there vs full", "gate_vs_pool at knee": "vs pool",
}


SIMULATION_FORMATS = (  # column prefix, format, what a missing value means there
    ("pages to target", "{:,.0f}", "not reached"), ("share", "{:.0%}", "not reached"),
    ("pages at knee", "{:,.0f}", "never"), ("tau_", "{:.3f}", "–"), ("gate_", "{:.0f}", "–"))


def simulation_tables(out: Path) -> str:
    """``evalkit qrels simulate``'s summary (pages each strategy needs, knee stops) and leave-one-arm-out, from
    the ``summary.csv`` and ``loo.csv`` it wrote."""
    s = pd.read_csv(need(out / "summary.csv", "evalkit qrels simulate"), index_col="strategy")
    s = s[[c for c in SIMULATION_COLUMNS if c in s.columns]]
    for col, fmt, absent in SIMULATION_FORMATS:
        for c in [c for c in s.columns if c.startswith(col)]:
            s[c] = s[c].map(lambda v: absent if pd.isna(v) else fmt.format(v))  # noqa: B023 (called in this iteration only)
    s = s.rename(columns=SIMULATION_COLUMNS)
    loo = pd.read_csv(out / "loo.csv")
    return f"{markdown_table(s)}\n\nLeave one arm out:\n\n{markdown_table(loo, index=False)}"


BENCH_COLUMNS = {"section": "section", "what": "what", "value": "figure", "unit": "unit",
                 "calibrated": "per reference", "calibrated_unit": "reference unit", "note": "note"}


def _number(v: object, digits: int = 4) -> str:
    return "" if pd.isna(v) else f"{v:.{digits}g}"


def latency_frame(figures: pd.DataFrame) -> pd.DataFrame:
    """``bench.csv``'s latency rows (``ARM, k=K, STATISTIC``) as one row per arm and k: wall median and p95,
    CPU median, and the CPU median per reference (the figure that travels between machines)."""
    lat = figures[figures["section"] == "latency"]
    parts = lat["what"].str.rsplit(", ", n=2, expand=True)
    wide = lat.assign(arm=parts[0], k=parts[1].str.removeprefix("k="), stat=parts[2]).pivot_table(
        index=["arm", "k"], columns="stat", values=["value", "calibrated"], aggfunc="first", sort=False)
    out = pd.DataFrame({"median (ms)": wide[("value", "median")], "p95 (ms)": wide[("value", "p95")],
                        "CPU median (ms)": wide[("value", "CPU median")],
                        "CPU median per reference": wide[("calibrated", "CPU median")]})
    return out.map(_number)


def bench_table(path: Path) -> str:
    """``evalkit bench``'s figures: latency per arm and k (:func:`latency_frame`), then every other figure with
    its unit and per reference, and the run's calibration line."""
    loaded = benchdir.load(need(path / "bench.csv", "evalkit bench").parent)
    f: pd.DataFrame = loaded["figures"]
    notes = f.loc[f["section"] == "latency", "note"].dropna().unique()
    rest = f[f["section"] != "latency"]
    rest = rest[[c for c in BENCH_COLUMNS if c in rest.columns]].rename(columns=BENCH_COLUMNS)
    rest = rest.assign(**{"figure": rest["figure"].map(_number), "per reference": rest["per reference"].map(
        lambda v: _number(v, 3))}).astype(object).fillna("")
    return (f"Latency ({md('; '.join(notes))}):\n\n{markdown_table(latency_frame(f))}\n\n"
            f"Extraction, embedding, measures and memory:\n\n{markdown_table(rest, index=False)}\n\n"
            f"Calibration: {md(calibration.summary(loaded['environment']))}.")


def cost_curve_table(path: Path, first: str) -> str:
    """``evalkit bench --scale``: median latency per arm and subset size, the index build time and size, and the
    growth exponents and 400 ÷ 100 ratios (:func:`evalkit.bench.exponents`)."""
    loaded = benchdir.load(need(path / "scale.csv", first).parent)
    scale: pd.DataFrame = loaded["scale"]
    fit: pd.DataFrame = loaded["fit"]
    wide = scale.pivot_table(index=["documents", "pages"], columns="arm", values="median_ms", sort=False)
    idx = scale.drop_duplicates("documents").set_index(["documents", "pages"])
    wide["global index build (s)"] = idx["global_index_s"]
    wide["global index (MiB)"] = idx["global_index_bytes"] / 2**20
    fits = fit.set_index("arm")[["exponent", "ratio_to_quarter"]].rename(
        columns={"exponent": "growth exponent", "ratio_to_quarter": "largest ÷ quarter"})
    return (f"Median ms per query:\n\n{markdown_table(wide, digits=2)}\n\n"
            f"Growth (latency ≈ a · documents^b):\n\n{markdown_table(fits, digits=2)}")


ROBUSTNESS_MEASURES = ("nDCG@10", "nDCG@10(doc)", "GoldDoc@3", "RR")


def robustness_table(paths: Sequence[Path]) -> str:
    """One row per ``robustness.json``: the arm's original means, the largest shift of any measure under the
    renamings, and how many queries' first hits changed."""
    rows = []
    for p in paths:
        r = json.loads(need(p / "robustness.json", "evalkit robustness").read_text())
        row = {"arm": r["arm"], **{m: r["measures"][m]["original"] for m in ROBUSTNESS_MEASURES if m in r["measures"]}}
        row["largest shift, any measure"] = max(v["max_abs_shift"] for v in r["measures"].values())
        changed = r["rankings_changed"]
        row[f"top {changed['top']} changed"] = f"{changed['queries']} of {r['queries']} queries"
        row["renamings (seed)"] = f"{r['permutations']} ({r['seed']})"
        rows.append(row)
    return markdown_table(pd.DataFrame(rows), digits=4, index=False)


def refusal_tables(paths: dict[str, Path], first: str) -> str:
    """Per results directory (labelled by what it reports on): every ``admit(...)`` arm's refusal rates with
    Wilson intervals, per abstain kind, AUROC, AURC and nAUC (:func:`evalkit.refusal_report.table`)."""
    from . import refusal_report

    parts = []
    for label, p in paths.items():
        t = refusal_report.table(Results.load(need(p / "manifest.json", first).parent))
        parts.append(f"{md(label)}:\n\n{markdown_table(t) if len(t) else 'no arm records a confidence'}")
    return "\n\n".join(parts)


def _arm(v: gating.Verdict, side: str) -> str:
    """A verdict side's arm, without the results directory (a machine's path) its label starts with."""
    return (v.computed_on.get(side) or {}).get("arm") or getattr(v, side)


def tune_table(verdicts: dict[str, Path], first: str) -> str:
    """Per tuning direction, the held-out gate verdict ``evalkit tune`` recorded: the Δ and CI of the gate's
    first rule (non-inferiority on nDCG@10(doc) in the shipped rules), the verdict's counts, what the gate
    does not rule on (page-level nDCG@10 on the same held-out run, chosen − baseline), then what was chosen
    and against what. Numbers first: the arm specs are long, and a wide table scrolls."""
    rows = []
    for label, p in verdicts.items():
        v = gating.read(need(p, first))
        chosen, baseline = _arm(v, "candidate"), _arm(v, "baseline")
        page = Results.load(p.parent).compare(baseline, chosen, "nDCG@10")
        rule = v.outcomes[0] if v.outcomes else None
        n = rule.numbers if rule else {}
        ruled = stats.delta_text(n["delta"], n["low"], n["high"]) if {"delta", "low", "high"} <= set(n) else ""
        rows.append({"tuned → held out": label, "Δ of the gate's first rule [95% CI]": ruled,
                     "gate": f"{gating.MARK[v.status]} ({v.counts()})",
                     "Δ nDCG@10 (page) [95% CI]": stats.delta_text(page.mean_delta, page.low, page.high),
                     "chosen": chosen, "baseline": baseline, "gate's first rule": rule.rule if rule else ""})
    return markdown_table(pd.DataFrame(rows), index=False)

"""The report of a results directory: the helpers behind the report notebook (``evalkit/data/report.ipynb``),
and :func:`render`, which executes that notebook headless into ``report.ipynb``, ``report.html`` and
``figures/*.png`` next to the run.

Every helper reads a :class:`~evalkit.results.Results` and returns plain pandas or matplotlib objects, so the
notebook is a list of calls and each helper can be tested on its own. One mapping, :func:`arm_colours`, gives
every arm its colour, so an arm looks the same in every figure of a report.
"""
from __future__ import annotations

import inspect
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, PercentFormatter
from matplotlib.transforms import ScaledTranslation
from pandas.io.formats.style import Styler

from . import calibration, comparison, dirs, notebooks, planning, resultsdir, stats
from . import escape as esc
from . import qrels as _qrels
from .display import Markdown
from .records import CLASSES
from .results import DEFINITIONS, HEADLINE, Results
from .text import split_top

NOTEBOOK = dirs.shipped("report.ipynb")
# Figures the report saves (figures/<name>.png); "deltas" needs two arms.
FIGURES = ("class_bars", "deltas", "latency", "refusals", "ties")
# Saved only when the run has what they show: "refusal_tradeoff" needs an arm that records confidences.
OPTIONAL_FIGURES = ("refusal_tradeoff",)
# Fewer queries than this get a mean but no bootstrap interval: resampling a handful of values gives a
# whisker that looks like evidence and is not (with 2 queries it spans at most the two values themselves).
MIN_CI_QUERIES = 10

# Okabe-Ito (colour-blind safe, yellow left out: unreadable on white), then a few distinct extras.
# Vermillion comes after black: next to orange it read as the same colour in a 7-arm run.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#7F7F7F", "#000000", "#D55E00", "#8C564B",
           "#BCBD22")
# Query classes (Dark2): used where a figure colours by class rather than by arm.
CLASS_COLOURS = {"needle": "#1B9E77", "spread": "#7570B3", "trap": "#E7298A", "described": "#66A61E",
                 "abstain": "#A6761D"}
# Refusal outcomes: green where the arm did the right thing, red where it did not.
OUTCOME_COLOURS = {"answered": "#7FC97F", "wrongful_refusal": "#E8604C",
                   "correct_refusal": "#7FC97F", "answered_abstain": "#E8604C"}
OUTCOME_LABELS = {"answered": "answered", "wrongful_refusal": "refused (wrongly)",
                  "correct_refusal": "refused (correctly)", "answered_abstain": "answered (should refuse)"}
MEASURE_LABELS = {"nDCG@10": "nDCG@10 page", "nDCG@10(doc)": "nDCG@10 doc"}
ALL = "all answerable"


# ---- colours and parameters ------------------------------------------------------------------------------

def arm_colours(arms: Iterable[str]) -> dict[str, str]:
    """Arm label -> colour, by the arms' order (the manifest's): the same arms always get the same colours."""
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(dict.fromkeys(arms))}


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


def figures_dir(results: Results, figures: str | Path | None = None) -> Path:
    """Where figures are saved (created): ``figures``, else ``<results>/figures``."""
    d = Path(figures) if figures else results.path / "figures"
    d.mkdir(parents=True, exist_ok=True)
    return d


def save(fig: Figure, name: str, figures: str | Path | None) -> Path | None:
    """Save ``fig`` as ``<figures>/<name>.png`` (nothing without a directory); returns the file."""
    if not figures:
        return None
    path = Path(figures) / f"{name}.png"
    fig.savefig(path, dpi=150, bbox_inches="tight", facecolor="white")
    return path


# ---- the query set behind a run -----------------------------------------------------------------------------

def qrels_file(results: Results) -> Path | None:
    """The query file the run names (``manifest["qrels"]["path"]``), looked up as given, then relative to the
    working directory (the caller's, ``EVALKIT_WORKDIR``, inside the report's kernel) and to the results
    directory (never to the installation); None if it is not found."""
    name = results.manifest.get("qrels", {}).get("path") or ""
    if not name or "\0" in name:  # no file has a NUL in its name
        return None
    p = Path(name)
    here = Path(os.environ.get("EVALKIT_WORKDIR") or Path.cwd())  # the report's kernel runs in a clean folder
    for cand in ([p] if p.is_absolute() else [here / p, results.path / p]):
        if cand.is_file():
            return cand
    return None


def query_set(results: Results) -> _qrels.QuerySet | None:
    """The run's query set, only if its file is found and is byte-identical to the one the run used."""
    path = qrels_file(results)
    if path is None:
        return None
    try:
        qs = _qrels.load(path)
    except _qrels.QrelsError:
        return None
    return qs if qs.digest == results.manifest["qrels"].get("digest") else None


def gains(results: Results) -> dict[int, str]:
    """The gain legend the run recorded, else its query file's, else :data:`evalkit.qrels.DEFAULT_GAINS`."""
    if recorded := results.manifest.get("qrels", {}).get("gains"):
        return {int(g): d for g, d in recorded.items()}
    path = qrels_file(results)
    if path is not None:
        try:
            return dict(_qrels.load(path).gains)
        except _qrels.QrelsError:
            pass
    return dict(_qrels.DEFAULT_GAINS)


# ---- tables -------------------------------------------------------------------------------------------------

def _answerable(results: Results) -> pd.DataFrame:
    pq = results.per_query
    return pq[pq["class"] != "abstain"]


def _classes(frame: pd.DataFrame) -> list[str]:
    present = set(frame["class"])
    return [c for c in CLASSES if c in present] + sorted(present - set(CLASSES))


def overview(results: Results) -> Markdown:
    """One paragraph: corpus, query set, classes, arms, when and whether the run finished; and the files
    in the results directory that evalkit did not write (listed, never read)."""
    m = results.manifest
    counts = results.per_query.drop_duplicates("query")["class"].value_counts()
    classes = ", ".join(f"{esc.markdown(c)} {counts[c]}" for c in _classes(results.per_query.drop_duplicates("query")))
    when = str(m.get("finished") or m.get("started") or "?").replace("T", " ")
    text = (f"**Corpus** {esc.code(m['corpus']['name'])} ({len(m['corpus'].get('documents', {}))} documents) · "
            f"**queries** {esc.code(m['qrels']['name'])} ({esc.markdown(m['qrels']['queries'])}: {classes}) · "
            f"**arms** {', '.join(esc.code(a) for a in results.arms)} · "
            f"**run** {esc.markdown(when)} ({esc.markdown(m.get('status', '?'))}) · "
            f"**results** {esc.code(results.path.name)}")
    if foreign := resultsdir.foreign(results.path):
        text += (f"\n\n_Not written by evalkit, so not read: {', '.join(esc.code(n) for n in foreign)}._")
    return Markdown(text)


_LOWER_IS_BETTER = {"wrongful refusal", "errors", "s/query (median)"}
_NOT_RANKED = {"Judged@10"}  # describes the judgments under an arm, not the arm: no "best" to bold


def headline(results: Results):
    """:meth:`Results.table`, formatted (a pandas Styler); the best value of each column in bold."""
    t = results.table()
    fmt = {c: "{:.3f}" for c in t.columns}
    fmt["s/query (median)"] = "{:.4f}"
    fmt["errors"] = "{:.0f}"
    st = styled(t.style.format(fmt, na_rep="n/a"))
    if len(t) > 1:
        ranked = separating(t)
        hi = [c for c in ranked if c not in _LOWER_IS_BETTER | _NOT_RANKED]
        lo = [c for c in ranked if c in _LOWER_IS_BETTER]
        st = (st.highlight_max(subset=hi, props="font-weight: bold", axis=0)
                .highlight_min(subset=lo, props="font-weight: bold", axis=0))
    return st.set_caption(f"{esc.html(results.manifest['corpus']['name'])} × {esc.html(results.manifest['qrels']['name'])}: "
                          "ranking measures over answerable queries; best in bold where the arms differ")


def separating(table: pd.DataFrame) -> list[str]:
    """The columns whose values differ between arms: a column where every arm scores the same (no refusals,
    no errors) has no best to highlight."""
    return [c for c in table.columns if table[c].dropna().round(12).nunique() > 1]


def styled(st: Styler) -> Styler:
    """``st`` with its row and column labels HTML-escaped: pandas' Styler writes labels (and captions) into
    the page as markup, unlike ``DataFrame.to_html``, and labels here are arm names and classes from data."""
    return st.format_index(escape="html", axis=0).format_index(escape="html", axis=1)


def legend(results: Results) -> Markdown:
    """What the headline columns mean, what the query classes are, what the gains mean."""
    counts = results.per_query.drop_duplicates("query")["class"].value_counts()
    lines = ["**Measures**", ""]
    lines += [f"- **{name}**: {DEFINITIONS[name]}" for name in HEADLINE.values() if name in DEFINITIONS]
    lines += ["", "**Query classes** (queries in this run)", ""]
    lines += [f"- **{c}** ({counts.get(c, 0)}): {d}" for c, d in _qrels.CLASS_LEGEND.items()]
    lines += ["", "**Gains** (graded judgments of a page)", ""]
    lines += [f"- **{g}**: {esc.markdown(d)}" for g, d in sorted(gains(results).items(), reverse=True)]
    path = qrels_file(results)
    if path is None:
        lines += ["", f"_The query file {esc.code(results.manifest['qrels'].get('path') or '(unnamed)')} was not "
                      "found: default gain legend shown._"]
    elif query_set(results) is None:
        lines += ["", f"_The query file {esc.code(results.manifest['qrels']['path'])} has changed since this run._"]
    return Markdown("\n".join(lines))


def class_ci(results: Results, measure: str = "nDCG@10", confidence: float = 0.95,
             n_resamples: int = 10_000) -> pd.DataFrame:
    """Per arm and answerable class (and ``all answerable``): n, mean and the percentile-bootstrap CI of the
    mean (:func:`evalkit.stats.bootstrap_ci`, seeded); no CI (NaN) below :data:`MIN_CI_QUERIES` queries."""
    f = _answerable(results)
    rows = []
    for arm in results.arms:
        a = f[f["arm"] == arm]
        for cls in [*_classes(f), ALL]:
            v = a[measure] if cls == ALL else a.loc[a["class"] == cls, measure]
            mean, low, high = stats.bootstrap_ci(v.to_numpy(), confidence=confidence, n_resamples=n_resamples)
            if len(v) < MIN_CI_QUERIES:
                low = high = math.nan
            rows.append({"arm": arm, "class": cls, "n": len(v), "mean": mean, "low": low, "high": high})
    return pd.DataFrame(rows)


def class_ci_table(results: Results, measures: Sequence[str] = ("nDCG@10", "nDCG@10(doc)")) -> pd.DataFrame:
    """The numbers behind :func:`plot_class_bars`: "mean [low, high]" per arm (rows) and class (columns)."""
    parts = {}
    for m in measures:
        ci = class_ci(results, m)
        ci["cell"] = [f"{r.mean:.3f} [{r.low:.2f}, {r.high:.2f}]" if not math.isnan(r.low)
                      else f"{r.mean:.3f} (n {r.n}: no CI)" for r in ci.itertuples()]
        wide = ci.pivot(index="arm", columns="class", values="cell")
        parts[MEASURE_LABELS.get(m, m)] = wide.reindex(index=results.arms, columns=list(dict.fromkeys(ci["class"])))
    return pd.concat(parts, axis=1)


def power_plan(results: Results, measure: str = "nDCG@10(doc)", delta: float = 0.05) -> Markdown:
    """What this run's query set can detect per class, and the queries it would need to see ``delta``
    (:func:`evalkit.planning.plan` over the run's own per-query scores, every pair of its arms)."""
    if len(results.arms) < 2:
        return Markdown("_One arm only: the spread of paired differences needs two arms to plan with._")
    table = planning.plan(results.per_query, measure, delta)
    return Markdown(f"```\n{planning.text(table, measure, delta)}\n```")


def class_ci_styled(results: Results) -> Styler:
    """:func:`class_ci_table` for the page, one block of rows per measure (side by side the two measures
    overflow the page) and each interval cell on one line (they wrapped onto three)."""
    wide = class_ci_table(results)
    measures = list(dict.fromkeys(wide.columns.get_level_values(0)))
    long = pd.concat({m: wide[m] for m in measures}, names=["measure", "arm"])
    return styled(long.style.set_table_styles([{"selector": "td", "props": "white-space: nowrap"}]))


def deltas(results: Results, pair: Sequence[str], measure: str = "nDCG@10") -> pd.DataFrame:
    """Per answerable query: the two arms' scores and ``delta`` = second - first, largest gain first. Carries
    the query text when the run's query file is at hand and unchanged."""
    a, b = pair
    wide = _answerable(results).pivot(index="query", columns="arm", values=measure)
    cls = results.per_query.drop_duplicates("query").set_index("query")["class"]
    out = pd.DataFrame({"class": cls.reindex(wide.index), a: wide[a], b: wide[b], "delta": wide[b] - wide[a]})
    qs = query_set(results)
    if qs is not None:
        texts = {q.id: q.text for q in qs.queries}
        out["text"] = [texts.get(q, "") for q in out.index]
    return out.sort_values(["delta", "class"], ascending=[False, True], kind="stable")


def biggest_changes(results: Results, pair: Sequence[str], measure: str = "nDCG@10", n: int = 5) -> pd.DataFrame:
    """The ``n`` queries that gained most and the ``n`` that lost most from the first arm to the second."""
    d = deltas(results, pair, measure)
    up, down = d[d["delta"] > 0].head(n), d[d["delta"] < 0].tail(n).iloc[::-1]
    return pd.concat({"better": up, "worse": down}, names=["change", "query"])


def biggest_changes_styled(results: Results, pair: Sequence[str], measure: str = "nDCG@10", n: int = 5) -> Styler:
    """:func:`biggest_changes` for the page: arms under their short labels (the full ones made the columns
    wider than the page), Δ signed, the query text wrapped within a column of its own width; every value
    from data escaped."""
    table = biggest_changes(results, pair, measure, n).rename(columns={**short_labels(results.arms), "delta": "Δ"})
    st = table.style.format("{:.3f}", subset=[short_labels(results.arms)[a] for a in pair])
    st = st.format("{:+.3f}", subset=["Δ"]).format(escape="html", subset=[c for c in ("class", "text") if c in table])
    wrap = [{"selector": "td", "props": "white-space: nowrap"},
            {"selector": "td.col-text, td:last-child", "props": "white-space: normal; min-width: 20em; max-width: 36em; text-align: left"}]
    return styled(st.set_table_styles(wrap))


def refusal_counts(results: Results) -> pd.DataFrame:
    """Query counts per arm (rows, manifest order) and refusal outcome (columns)."""
    pq = results.per_query
    counts = pq.groupby(["arm", "outcome"]).size().unstack(fill_value=0)
    return counts.reindex(index=results.arms, columns=list(OUTCOME_LABELS), fill_value=0)


def tie_audit(results: Results) -> pd.DataFrame:
    """Per arm and class (and ``all``): queries, mean tied items among the first 10 hits (``ties@10``) and the
    share of queries with any tie in their top 10. Inside a tied band the order is the arm's tie-break,
    so a measure at 10 is only as solid as these numbers are small."""
    pq = results.per_query
    rows = []
    for arm in results.arms:
        a = pq[pq["arm"] == arm]
        for cls in [*_classes(pq), "all"]:
            g = a if cls == "all" else a[a["class"] == cls]
            rows.append({"arm": arm, "class": cls, "queries": len(g), "mean ties@10": g["ties@10"].mean(),
                         "share with a tie": (g["ties@10"] > 0).mean() if len(g) else math.nan})
    return pd.DataFrame(rows)


def tie_table(results: Results) -> pd.DataFrame:
    """:func:`tie_audit` wide: arms as rows, (statistic, class) as columns."""
    t = tie_audit(results)
    order = list(dict.fromkeys(t["class"]))
    wide = t.pivot(index="arm", columns="class", values=["mean ties@10", "share with a tie"])
    return wide.reindex(index=results.arms).reindex(columns=order, level=1)


def provenance(results: Results) -> dict[str, pd.DataFrame]:
    """The manifest as three tables: ``run`` (corpus, query set, digests, times), ``arms`` (label, spec,
    implementation, parameters, build seconds, model) and ``environment`` (interpreter, packages, machine,
    and the calibration line that says how fast the machine was at the start and end of the run)."""
    m = results.manifest
    c, q = m.get("corpus", {}), m.get("qrels", {})
    run = {"corpus": c.get("name"), "corpus digest": c.get("digest"), "documents": len(c.get("documents", {})),
           "query set": q.get("name"), "query file": q.get("path") or "", "query set digest": q.get("digest"),
           "queries": q.get("queries"), "arm specs": ", ".join(m.get("specs", [])), "depth": m.get("depth"),
           "evalkit": m.get("evalkit"), "started": m.get("started"), "finished": m.get("finished"),
           "status": m.get("status")}
    arms = pd.DataFrame([{
        "arm": a["label"], "spec": a.get("spec"), "implementation": a.get("class"),
        "params": ", ".join(f"{k}={v}" for k, v in a.get("params", {}).items()) or "(none)",
        "build s": a.get("build_seconds"),
        "model": "; ".join(f"{mo.get('name')} ({mo.get('weights')}, {mo.get('max_tokens')} tokens, "
                           f"window {mo.get('window')})" for mo in a.get("models", [])),
    } for a in m.get("arms", [])]).set_index("arm")
    if not arms["model"].astype(bool).any():
        arms = arms.drop(columns="model")
    env = m.get("environment", {})
    machine = env.get("machine", {})
    mem = machine.get("memory_bytes")
    e = {"python": f"{env.get('python')} ({env.get('implementation')})", "sqlite": env.get("sqlite"),
         "evalkit": env.get("evalkit"),
         **{f"package {k}": v for k, v in env.get("packages", {}).items()},
         "platform": machine.get("platform"), "processor": machine.get("processor"), "cpus": machine.get("cpus"),
         "memory": f"{mem / 2**30:.1f} GiB" if mem else None, "calibration": calibration.summary(env)}
    as_table = lambda d: pd.DataFrame({"value": [("" if v is None else str(v)) for v in d.values()]},
                                      index=pd.Index(list(d), name=""))
    return {"run": as_table(run), "arms": arms, "environment": as_table(e)}


# ---- figures ------------------------------------------------------------------------------------------------

def _grouped_bars(ax: Axes, values: pd.DataFrame, colours: dict[str, str], low: pd.DataFrame | None = None,
                  high: pd.DataFrame | None = None, fmt: str | None = None, label_below: float = 0.0) -> None:
    """Bars for ``values`` (rows: groups on the x axis, columns: arms), one colour per arm, CI whiskers
    from ``low`` / ``high``; values up to ``label_below`` are written on their bars with ``fmt``."""
    n_groups, n_arms = values.shape
    width = 0.8 / max(n_arms, 1)
    x = np.arange(n_groups)
    for i, arm in enumerate(values.columns):
        pos = x - 0.4 + width * (i + 0.5)
        v = values[arm].to_numpy(dtype=float)
        yerr = None
        if low is not None and high is not None:
            lo, hi = low[arm].to_numpy(dtype=float), high[arm].to_numpy(dtype=float)
            yerr = np.vstack([v - lo, hi - v])  # NaN (one query: no interval) draws no whisker
        # the edge keeps a bar of height 0 visible as a coloured line on the axis
        bars = ax.bar(pos, np.nan_to_num(v), width * 0.92, color=colours[arm], edgecolor=colours[arm],
                      linewidth=1.2, label=esc.figure(arm), yerr=yerr,
                      error_kw={"elinewidth": 1, "capsize": 2.5, "ecolor": "#333333"} if yerr is not None else None)
        # short bars (a 0 looks like a missing bar) get their value written on them
        ax.bar_label(bars, labels=["n/a" if math.isnan(x) else "0" if x == 0 else (fmt or "{:g}").format(x)
                                   if x <= label_below else "" for x in v], fontsize=7, padding=2, color="#333333")
    ax.set_xticks(x)
    ax.grid(axis="y", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def plot_class_bars(results: Results, measure: str = "nDCG@10", ax: Axes | None = None,
                    colours: dict[str, str] | None = None, ci: pd.DataFrame | None = None) -> Axes:
    """One panel: mean ``measure`` per answerable class (and all answerable) per arm, with 95% bootstrap CIs
    as whiskers where a class has at least :data:`MIN_CI_QUERIES` queries."""
    colours = colours or arm_colours(results.arms)
    ci = class_ci(results, measure) if ci is None else ci
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4))
    order = list(dict.fromkeys(ci["class"]))
    piv = {k: ci.pivot(index="class", columns="arm", values=k).reindex(index=order, columns=results.arms)
           for k in ("mean", "low", "high", "n")}
    _grouped_bars(ax, piv["mean"], colours, piv["low"], piv["high"])
    n = piv["n"].max(axis=1)
    ax.set_xticklabels([f"{esc.figure(c)}\n(n={int(n[c])})" for c in order])
    ax.set_ylim(0, 1.06)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel(f"mean {MEASURE_LABELS.get(measure, measure)}")
    ax.set_title(f"{MEASURE_LABELS.get(measure, measure)} by query class (whiskers: 95% bootstrap CI; "
                 f"none for n < {MIN_CI_QUERIES})",
                 loc="left", fontsize=11)
    return ax


def fig_class_bars(results: Results, measures: Sequence[str] = ("nDCG@10", "nDCG@10(doc)"),
                   colours: dict[str, str] | None = None) -> Figure:
    """:func:`plot_class_bars` for page- and document-level nDCG@10, one panel each, one legend."""
    colours = colours or arm_colours(results.arms)
    fig, axes = plt.subplots(len(measures), 1, figsize=(10, 3.6 * len(measures) + 0.6), sharex=True, squeeze=False,
                             layout="constrained")
    for ax, m in zip(axes[:, 0], measures):
        plot_class_bars(results, m, ax=ax, colours=colours)
    _arm_legend(fig, results.arms, colours)
    return fig


def _arm_legend(fig: Figure, arms: Sequence[str], colours: dict[str, str]) -> None:
    short = short_labels(arms)
    handles = [Patch(color=colours[a], label=wrap_label(short[a])) for a in arms]
    # "outside": constrained layout makes room for the legend, however many lines its labels take
    fig.legend(handles=handles, loc="outside upper center", ncol=min(len(arms), 4), frameon=False)


def plot_deltas(results: Results, pair: Sequence[str], measure: str = "nDCG@10", ax: Axes | None = None,
                label: int = 3) -> Axes:
    """Per-query ``measure`` of the second arm minus the first, sorted, one bar per answerable query coloured
    by class; the title counts better / same / worse queries and gives the paired mean delta with its 95%
    CI. The ``label`` largest gains and losses are labelled with their query ids."""
    a, b = pair
    d = deltas(results, pair, measure)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.6))
    x = np.arange(len(d))
    col = np.array([CLASS_COLOURS.get(c, "#999999") for c in d["class"]])
    ax.bar(x, d["delta"], width=1.0, color=col, edgecolor="white", linewidth=0.3)
    ax.axhline(0, color="#333333", linewidth=0.8)
    better, worse = int((d["delta"] > 0).sum()), int((d["delta"] < 0).sum())
    same = (d["delta"] == 0).to_numpy()
    ax.scatter(x[same], np.zeros(same.sum()), s=9, color=col[same], zorder=3, linewidths=0)  # unchanged: a dot
    if same.any():
        ax.annotate(f"{int(same.sum())} unchanged", ((better + len(d) - worse - 1) / 2, 0), xytext=(0, 5),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8, color="#555555")
    cmp = results.compare(a, b, measure)
    short = short_labels(results.arms)
    ax.set_title(f"{MEASURE_LABELS.get(measure, measure)}: {esc.figure(short[b])}  −  {esc.figure(short[a])}\n"
                 f"{better} better, {len(d) - better - worse} unchanged, {worse} worse; mean Δ {cmp.mean_delta:+.3f} "
                 f"[{cmp.low:+.3f}, {cmp.high:+.3f}] 95% CI, p = {cmp.p_value:.3g} ({cmp.verdict})",
                 loc="left", fontsize=10)
    ax.set_ylabel(f"Δ {MEASURE_LABELS.get(measure, measure)}")
    ax.set_xlabel(f"answerable queries ({len(d)}), sorted by Δ")
    ax.set_xlim(-1, max(len(d), 1))
    lim = max(0.05, float(np.nanmax(np.abs(d["delta"]))) if len(d) else 0.05)
    ax.set_ylim(-lim * 1.3, lim * 1.3)
    ax.set_xticks([])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="y", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    _label_extremes(ax, d["delta"], min(label, better), min(label, worse))
    present = [c for c in CLASS_COLOURS if c in set(d["class"])]
    ax.legend(handles=[Patch(color=CLASS_COLOURS[c], label=esc.figure(c)) for c in present], title="class", fontsize=8,
              title_fontsize=8, loc="upper right", frameon=False)
    return ax


def _label_extremes(ax: Axes, delta: pd.Series, gains: int, losses: int) -> None:
    """Name the ``gains`` largest gains and ``losses`` largest losses: their ids (and Δ) stacked one under
    the other beside those bars, each joined to its bar by a thin line. Written along the bars, as they
    were, the labels of adjacent bars of nearly equal height lay on top of each other and ran off the axes."""
    n = len(delta)
    line = {"arrowstyle": "-", "color": "#888888", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 1}
    box = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
    sides = ((range(gains), (gains + 1, delta.iloc[0] if n else 0), "left", "top", -1),
             (range(n - 1, n - losses - 1, -1), (n - losses - 2, delta.iloc[-1] if n else 0), "right", "bottom", 1))
    for bars, anchor, ha, va, step in sides:
        for k, i in enumerate(bars):
            shift = ((20 if ha == "left" else -20) / 72, step * 10 * k / 72)  # points, as inches
            at = ax.transData + ScaledTranslation(*shift, ax.figure.dpi_scale_trans)
            ax.annotate(f"{esc.figure(delta.index[i])} {delta.iloc[i]:+.3f}", (i, delta.iloc[i]), xytext=anchor,
                        textcoords=at, ha=ha, va=va, fontsize=7, color="#333333", arrowprops=line, bbox=box)


def fig_deltas(results: Results, pair: Sequence[str], measures: Sequence[str] = ("nDCG@10", "nDCG@10(doc)")) -> Figure:
    """:func:`plot_deltas` for page- and document-level nDCG@10."""
    fig, axes = plt.subplots(len(measures), 1, figsize=(10, 3.4 * len(measures)), squeeze=False)
    for ax, m in zip(axes[:, 0], measures):
        plot_deltas(results, pair, m, ax=ax)
    fig.tight_layout()
    return fig


def wrap_label(label: str, width: int = 30) -> str:
    """An arm label broken over lines at its top-level parameters when longer than ``width``, so a long
    spec like ``hybrid(keyword=keyword(idf_scope=corpus),depth=50)`` does not squeeze a figure. Figure text:
    escaped (:func:`evalkit.escape.figure`)."""
    label = esc.figure(label)
    name, paren, rest = label.partition("(")
    if len(label) <= width or not paren or not rest.endswith(")"):
        return label
    params = split_top(rest[:-1], ",")
    return f"{name}(\n  " + ",\n  ".join(params) + ")"


def _arm_ticklabels(ax: Axes, arms: Sequence[str], colours: dict[str, str]) -> None:
    """Arm names as y tick labels, in their colours."""
    short = short_labels(arms)
    ax.set_yticklabels([wrap_label(short[a]) for a in arms])
    for t, a in zip(ax.get_yticklabels(), arms):
        t.set_color(colours[a])
        t.set_fontweight("bold")


def plot_latency(results: Results, ax: Axes | None = None, colours: dict[str, str] | None = None) -> Axes:
    """Latency of every query per arm in milliseconds: a box (quartiles, whiskers to 1.5 IQR) over the points,
    median and p95 written beside it; log scale when the latencies span more than a decade."""
    colours = colours or arm_colours(results.arms)
    arms = results.arms
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.8 + 0.6 * len(arms)))
    pq = results.per_query
    data = [pq.loc[pq["arm"] == a, "latency_s"].to_numpy(dtype=float) * 1000 for a in arms]
    y = np.arange(len(arms))[::-1]  # first arm on top
    horizontal = ({"orientation": "horizontal"} if "orientation" in inspect.signature(ax.boxplot).parameters
                  else {"vert": False})  # matplotlib >= 3.10 deprecates vert
    box = ax.boxplot(data, positions=y, widths=0.55, showfliers=False, patch_artist=True,
                     medianprops={"color": "#222222", "linewidth": 1.5}, **horizontal)
    for patch, a in zip(box["boxes"], arms):
        patch.set_facecolor(colours[a])
        patch.set_alpha(0.35)
        patch.set_edgecolor(colours[a])
    rng = np.random.default_rng(0)
    for yi, v, a in zip(y, data, arms):
        ax.scatter(v, yi + rng.uniform(-0.2, 0.2, len(v)), s=7, color=colours[a], alpha=0.6, linewidths=0)
    allv = np.concatenate([v for v in data if len(v)]) if any(len(v) for v in data) else np.array([1.0])
    pos = allv[allv > 0]
    log = len(pos) > 0 and pos.max() / pos.min() > 10
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(y)
    _arm_ticklabels(ax, arms, colours)
    ax.set_xlabel("latency per query (ms" + (", log scale)" if log else ")"))
    ax.set_title("Search latency per query (index built, one pass over the queries): "
                 "box = quartiles, | = median", loc="left",
                 fontsize=11)
    for yi, v in zip(y, data):
        if len(v):
            ax.annotate(f"median {np.median(v):.3g} ms\np95 {np.percentile(v, 95):.3g} ms", (1.01, yi),
                        xycoords=("axes fraction", "data"), va="center", fontsize=8)
    ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def fig_latency(results: Results, colours: dict[str, str] | None = None) -> Figure:
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.55 * len(results.arms)))
    plot_latency(results, ax=ax, colours=colours)
    fig.tight_layout()
    return fig


def _stacked(ax: Axes, counts: pd.DataFrame, outcomes: Sequence[str]) -> None:
    arms = list(counts.index)
    y = np.arange(len(arms))[::-1]
    left = np.zeros(len(arms))
    total = counts[list(outcomes)].sum(axis=1).to_numpy(dtype=float)
    for o in outcomes:
        v = counts[o].to_numpy(dtype=float)
        ax.barh(y, v, left=left, color=OUTCOME_COLOURS[o], height=0.6, edgecolor="white")
        for yi, l, n, t in zip(y, left, v, total):
            if n > 0:  # the outcome's name where the segment has room for it
                text = f"{OUTCOME_LABELS[o]}: {int(n)} ({n / t:.0%})" if n / t >= 0.4 else f"{int(n)}"
                ax.text(l + n / 2, yi, text, ha="center", va="center", fontsize=8)
        left += v
    ax.set_yticks(y)
    ax.set_xlabel("queries")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def fig_refusals(results: Results, colours: dict[str, str] | None = None) -> Figure:
    """Refusal outcomes per arm, as stacked counts: abstain queries (refusing is right) and answerable
    queries (answering is right), side by side; green is the right call, red the wrong one."""
    colours = colours or arm_colours(results.arms)
    counts = refusal_counts(results)
    n_abs = int(counts[["correct_refusal", "answered_abstain"]].sum(axis=1).max()) if len(counts) else 0
    n_ans = int(counts[["answered", "wrongful_refusal"]].sum(axis=1).max()) if len(counts) else 0
    height = 1.9 + 0.5 * len(results.arms)
    fig, axes = plt.subplots(1, 2, figsize=(11, height), sharey=True)
    panels = ((axes[0], ("correct_refusal", "answered_abstain"), f"abstain queries (n={n_abs}): refusing is right"),
              (axes[1], ("answered", "wrongful_refusal"), f"answerable queries (n={n_ans}): answering is right"))
    for ax, outcomes, title in panels:
        _stacked(ax, counts, outcomes)
        ax.set_title(title, loc="left", fontsize=10)
        if not counts[list(outcomes)].to_numpy().sum():
            ax.text(0.5, 0.5, "no such queries in this run", transform=ax.transAxes, ha="center", color="#777777")
    _arm_ticklabels(axes[0], list(counts.index), colours)
    fig.legend(handles=[Patch(color=OUTCOME_COLOURS["correct_refusal"],
                              label="right call: refused an abstain query / answered an answerable one"),
                        Patch(color=OUTCOME_COLOURS["answered_abstain"],
                              label="wrong call: answered an abstain query / refused an answerable one")],
               loc="lower center", ncol=2, frameon=False, fontsize=8)
    fig.suptitle("Refusal outcomes per arm (an empty result counts as a refusal)", x=0.01, ha="left", fontsize=11)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    return fig


def fig_ties(results: Results, colours: dict[str, str] | None = None) -> Figure:
    """Tie audit per class and arm: mean tied items among the first 10 hits, and the share of queries with
    any tie there."""
    colours = colours or arm_colours(results.arms)
    t = tie_audit(results)
    order = list(dict.fromkeys(t["class"]))
    fig, axes = plt.subplots(2, 1, figsize=(10, 7.2), sharex=True, layout="constrained")
    for ax, col, ylabel, top, fmt in ((axes[0], "mean ties@10", "mean tied items in top 10", 10, "{:.1f}"),
                                      (axes[1], "share with a tie", "share of queries", 1, "{:.0%}")):
        piv = t.pivot(index="class", columns="arm", values=col).reindex(index=order, columns=results.arms)
        _grouped_bars(ax, piv, colours, fmt=fmt, label_below=0.15 * top)
        ax.set_ylim(0, top * 1.1)
        ax.set_ylabel(ylabel)
        if top == 1:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    n = t.pivot(index="class", columns="arm", values="queries").reindex(index=order).max(axis=1)
    axes[1].set_xticklabels([f"{esc.figure(c)}\n(n={int(n[c])})" for c in order])
    axes[0].set_title("Tied items among the first 10 hits (0-10): their order is the arm's tie-break",
                      loc="left", fontsize=11)
    axes[1].set_title("Queries with any tie in their top 10", loc="left", fontsize=11)
    _arm_legend(fig, results.arms, colours)
    return fig


# ---- render ---------------------------------------------------------------------------------------------------

def render(results_dir: str | Path, out_html: str | Path | None = None, pair: Sequence[str] | str | None = None,
           notebook: str | Path | None = None, timeout: int = 600, kernel_name: str = "python3",
           baseline: str | None = None) -> Path:
    """Execute the report notebook on ``results_dir`` and write ``<results>/report.ipynb``, the HTML report
    (``out_html``, default ``<results>/report.html``, self-contained: figures embedded, no script, style
    or font from elsewhere, so it opens offline) and ``<results>/figures/*.png``;
    returns the HTML's path. A failing cell raises nbclient's CellExecutionError naming the cell and the
    error; nothing is written then."""
    res = Results.load(Path(results_dir).resolve())
    res.per_query  # a damaged file, or measures that are not this run's, are refused here in one line
    if pair is not None:
        pair = list(resolve_pair(res, pair) or ())  # a given pair is returned checked, or refused
    baseline = resolve_baseline(res, baseline) if baseline else None  # checked, or refused
    figures = res.path / "figures"
    figures.mkdir(exist_ok=True)
    for name in FIGURES + OPTIONAL_FIGURES:  # a figure left from an earlier report must not pass for this one's
        (figures / f"{name}.png").unlink(missing_ok=True)
    m = res.manifest
    return notebooks.execute(Path(notebook or NOTEBOOK), res.path, "report",
                             f"evalkit report: {m['corpus']['name']} × {m['qrels']['name']}",
                             out_html=out_html, timeout=timeout, kernel_name=kernel_name,
                             results=str(res.path), pair=pair, figures=str(figures), baseline=baseline)


# ---- the conclusion ---------------------------------------------------------------------------------------

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
    from .gating import GATE_FILE, read

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


@dataclass(frozen=True)
class Finding:
    """One paired comparison of the conclusion: ``cand`` - ``base`` over the answerable queries."""

    base: str
    cand: str
    result: stats.Comparison
    p_holm: float


def findings(results: Results, reference: str, extra: Sequence[tuple[str, str]] = (),
             measure: str = CONCLUSION_MEASURE, n_resamples: int = stats.RESAMPLES) -> list[Finding]:
    """Every other arm against ``reference`` (and the ``extra`` pairs), paired by query through
    :mod:`evalkit.comparison`, with sign-flip p-values Holm-adjusted over all of them as one family."""
    pairs = [(reference, a) for a in arm_means(results, measure).index if a != reference] + list(extra)
    found = []
    for base, cand in pairs:
        p = comparison.pair(comparison.Side(results, base), comparison.Side(results, cand))
        found.append(stats.paired_compare(*p.values(measure), n_resamples=n_resamples))
    holm = stats.holm(np.array([c.p_value for c in found], dtype=float))
    return [Finding(b, c, r, float(h)) for (b, c), r, h in zip(pairs, found, holm)]


def _reading(f: Finding, alpha: float) -> str:
    """What the test decided, and whether the interval says otherwise: ``ahead``/``behind`` (Holm-adjusted
    p below alpha), ``interval only`` (the unadjusted bootstrap CI excludes 0 while the family's adjusted
    test does not separate the arms: a CI is not corrected for the number of comparisons), else ``untold``."""
    r = f.result
    if f.p_holm < alpha:
        return "ahead" if r.mean_delta > 0 else "behind"
    return "interval only" if r.low > 0 or r.high < 0 else "untold"


def _numbers(f: Finding, alpha: float) -> str:
    """A finding's difference and CI, and why the set cannot tell when it cannot."""
    r = f.result
    text = stats.delta_text(r.mean_delta, r.low, r.high)
    if f.p_holm < alpha:
        return text
    if _reading(f, alpha) == "interval only":
        return text + f" (p(Holm) = {f.p_holm:.2g})"
    can_detect = stats.detectable(r.mdd) if r.sd_delta > 0 else math.nan  # not 0 from identical arms
    return text + (f" (|Δ| below the {r.mdd:.3f} this set can detect)" if abs(r.mean_delta) < can_detect
                   else f" (p(Holm) = {f.p_holm:.2g})")


def _refusal_sentence(results: Results) -> str:
    """What refused and what failed, per arm, from the outcomes and error counts."""
    counts = refusal_counts(results)
    n_abs = int(counts[["correct_refusal", "answered_abstain"]].sum(axis=1).max())
    n_ans = int(counts[["answered", "wrongful_refusal"]].sum(axis=1).max())
    refusing = [f"{esc.code(a)} refused {int(r.correct_refusal)} of {n_abs} abstain and {int(r.wrongful_refusal)} "
                f"of {n_ans} answerable queries" for a, r in counts.iterrows() if r.correct_refusal + r.wrongful_refusal]
    text = "; ".join(refusing) if refusing else (f"no arm refused: all {n_abs} abstain queries were answered by every arm"
                                                 if n_abs else "no arm refused (the set has no abstain query)")
    pq = results.per_query
    errors = (pq["outcome"] == "error").groupby(pq["arm"]).sum().reindex(results.arms, fill_value=0)
    failed = [f"{esc.code(a)} {int(n)}" for a, n in errors.items() if n]
    return text + (f". Errors: {', '.join(failed)}." if failed else ". No arm failed on any query.")


def conclusion(results: Results, baseline: str | None = None, measure: str = CONCLUSION_MEASURE,
               alpha: float = stats.ALPHA, n_resamples: int = stats.RESAMPLES) -> Markdown:
    """What the run shows, in words, computed from its per-query results: the arms by mean ``measure``, which
    lead and by how much (paired differences with 95% bootstrap CIs, sign-flip p Holm-adjusted over every
    comparison stated), which differences the set cannot tell, what refused, and the stored gate verdict."""
    means = arm_means(results, measure)
    label = MEASURE_LABELS.get(measure, measure)
    if means.empty:
        return Markdown(f"**Conclusion**: no answerable query, so no {esc.markdown(label)} to rank arms by. "
                        f"Refusal: {_refusal_sentence(results)}")
    lead = str(means.index[0])
    ref = baseline or lead
    extra = [(str(means.index[1]), lead)] if baseline and lead != baseline and len(means) > 2 \
        and means.index[1] != baseline else []
    found = findings(results, ref, extra, measure, n_resamples)
    n = len(_answerable(results).drop_duplicates("query"))
    lines = [f"**Conclusion** ({esc.markdown(label)}, mean over {n} answerable queries; Δ with 95% bootstrap CI, "
             f"paired by query, not adjusted for the comparisons; sign-flip p Holm-adjusted over the {len(found)} "
             f"comparisons below, α = {alpha:g})", "",
             "- **Ranking**: " + " > ".join(f"{esc.code(short_labels(results.arms)[a])} {v:.3f}"
                                            for a, v in means.items())]
    short = short_labels(results.arms)
    name = lambda a: esc.code(short[a])
    against = [f for f in found if f.base == ref]
    for head, reading in ((f"ahead of {name(ref)}", "ahead"), (f"behind {name(ref)}", "behind"),
                          (f"CI excludes 0 against {name(ref)}, the adjusted test does not", "interval only"),
                          (f"cannot be told from {name(ref)}", "untold")):
        if chosen := [f"{name(f.cand)} {_numbers(f, alpha)}" for f in against if _reading(f, alpha) == reading]:
            lines.append(f"- **{head}**: " + "; ".join(chosen))
    for f in (f for f in found if f.base != ref):
        told = {"ahead": "a lead the set can tell", "behind": "a lead the set can tell",
                "interval only": "its CI excludes 0, but the adjusted test does not tell them apart",
                "untold": "the set cannot tell them apart"}[_reading(f, alpha)]
        lines.append(f"- **Lead**: {name(f.cand)} over {name(f.base)} by {_numbers(f, alpha)}: {told}")
    lines.append(f"- **Refusal**: {_refusal_sentence(results)}")
    lines.append(f"- **Gate**: {_gate_sentence(results)}")
    return Markdown("\n".join(lines + ([f"\n{note}"] if (note := label_note(results.arms)) else [])))


def _gate_sentence(results: Results) -> str:
    from .gating import NoVerdict, show

    v = show(results.path)
    if isinstance(v, NoVerdict):
        return f"no verdict ({esc.markdown(v.why)}); `make report` gates the best arm against its baseline"
    arm = lambda side: esc.code(short_labels([str(v.computed_on[side]["arm"])]).popitem()[1])
    failed = "; ".join(esc.markdown(o.rule) for o in v.blocking)
    return (f"{arm('candidate')} against {arm('baseline')}: **{'PASS' if v.passed else 'FAIL'}** ({esc.markdown(v.counts())})"
            + (f"; failed: {failed}" if failed else "") + " (the rules and their numbers: Gate verdict below)")


# ---- labels for display ---------------------------------------------------------------------------------------

LONG_PARAM = 24  # a parameter longer than this (a model path) is left out of an arm's display label


def short_labels(arms: Sequence[str]) -> dict[str, str]:
    """Arm label -> the label figures and prose show: parameters longer than :data:`LONG_PARAM` characters
    left out (``semantic(model=sentence-transformers/all-MiniLM-L6-v2)`` -> ``semantic``), unless two arms
    would then look alike; tables and provenance keep the full labels, :func:`label_note` says what was cut."""
    out = {}
    for a in arms:
        name, paren, rest = a.partition("(")
        kept = [p for p in split_top(rest[:-1], ",") if len(p) <= LONG_PARAM] if paren and rest.endswith(")") else None
        out[a] = a if kept is None else f"{name}({','.join(kept)})" if kept else name
    clash = [a for a in arms if list(out.values()).count(out[a]) > 1 or (out[a] != a and out[a] in arms)]
    return {a: a if a in clash else out[a] for a in arms}


def label_note(arms: Sequence[str]) -> Markdown:
    """One line saying which shortened display label stands for which arm ("" when none is shortened)."""
    cut = [(s, a) for a, s in short_labels(arms).items() if s != a]
    return Markdown(("_In figures and in this text, " + "; ".join(f"{esc.code(s)} is {esc.code(a)}" for s, a in cut)
                     + "._") if cut else "")

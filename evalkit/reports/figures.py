"""The report's figures: matplotlib figures from a :class:`~evalkit.results.Results`, and where they are
saved. One mapping, :func:`arm_colours`, gives every arm its colour, so an arm looks the same in every
figure of a report."""
from __future__ import annotations

import inspect
import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, PercentFormatter
from matplotlib.transforms import ScaledTranslation

from .. import escape as esc
from ..results import Results
from ..text import split_top
from .labels import MEASURE_LABELS, short_labels
from .tables import MIN_CI_QUERIES, OUTCOME_LABELS, class_ci, deltas, refusal_counts, tie_audit

if TYPE_CHECKING:
    from IPython.display import Image

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


def arm_colours(arms: Iterable[str]) -> dict[str, str]:
    """Arm label -> colour, by the arms' order (the manifest's): the same arms always get the same colours."""
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(dict.fromkeys(arms))}


def figures_dir(results: Results, figures: str | Path | None = None) -> Path:
    """Where figures are saved (created): ``figures``, else ``<results>/figures``."""
    d = Path(figures) if figures else results.path / "figures"
    d.mkdir(parents=True, exist_ok=True)
    return d


SAVE_DPI = 150  # the figures' files, sharper than the page shows them


def save(fig: Figure, name: str, figures: str | Path | None) -> Image:
    """``fig`` drawn once: saved as ``<figures>/<name>.png`` (no file without a directory) and returned as
    that image to show, at the size the notebook's own backend would show the figure. The figure is closed,
    so that backend does not draw it a second time."""
    from IPython.display import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=SAVE_DPI, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    png = buffer.getvalue()
    if figures:
        (Path(figures) / f"{name}.png").write_bytes(png)
    width = int.from_bytes(png[16:20], "big")  # the PNG's IHDR: width in pixels
    return Image(data=png, format="png", width=round(width * plt.rcParams["figure.dpi"] / SAVE_DPI))


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
    for ax, m in zip(axes[:, 0], measures, strict=True):
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
    for ax, m in zip(axes[:, 0], measures, strict=True):
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
    for t, a in zip(ax.get_yticklabels(), arms, strict=True):
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
    for patch, a in zip(box["boxes"], arms, strict=True):
        patch.set_facecolor(colours[a])
        patch.set_alpha(0.35)
        patch.set_edgecolor(colours[a])
    rng = np.random.default_rng(0)
    for yi, v, a in zip(y, data, arms, strict=True):
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
    for yi, v in zip(y, data, strict=True):
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
        for yi, lo, n, t in zip(y, left, v, total, strict=True):
            if n > 0:  # the outcome's name where the segment has room for it
                text = f"{OUTCOME_LABELS[o]}: {int(n)} ({n / t:.0%})" if n / t >= 0.4 else f"{int(n)}"
                ax.text(lo + n / 2, yi, text, ha="center", va="center", fontsize=8)
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

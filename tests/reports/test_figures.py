"""The report's figures: one colour per arm, class bars with their intervals, deltas, latency, refusals
and ties, drawn from the numbers the tables give."""
from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.colors import to_hex

from evalkit import stats
from evalkit.reports import figures, prose, tables
from evalkit.results import Results

from .conftest import _bars


@pytest.mark.slow
def test_arm_colours_are_stable_distinct_and_used_by_every_figure(res):
    c = figures.arm_colours(res.arms)
    assert c == figures.arm_colours(list(res.arms)) == {"keyword": figures.PALETTE[0],
                                                        "global-index": figures.PALETTE[1]}
    many = figures.arm_colours([f"arm{i}" for i in range(len(figures.PALETTE))])
    assert len(set(many.values())) == len(figures.PALETTE)
    figs = [figures.fig_class_bars(res), figures.fig_ties(res)]
    for fig in figs:
        legend = {t.get_text(): to_hex(h.get_facecolor()) for t, h in zip(fig.legends[0].get_texts(),
                                                                          fig.legends[0].legend_handles, strict=True)}
        assert legend == {a: to_hex(v) for a, v in c.items()}
        for ax in fig.axes:
            for container, arm in zip(_bars(ax), res.arms, strict=True):
                assert {to_hex(p.get_facecolor()) for p in container.patches} == {to_hex(c[arm])}
    ax = figures.fig_latency(res).axes[0]
    assert {t.get_text(): to_hex(t.get_color()) for t in ax.get_yticklabels()} == {a: to_hex(v) for a, v in c.items()}


def test_long_arm_labels_wrap_at_their_parameters():
    assert figures.wrap_label("keyword") == "keyword"
    assert figures.wrap_label("hybrid(keyword=keyword(idf_scope=corpus),depth=50)") == \
        "hybrid(\n  keyword=keyword(idf_scope=corpus),\n  depth=50)"


@pytest.mark.slow
def test_class_bars_are_class_means_with_bootstrap_ci_whiskers(res):
    ax = figures.plot_class_bars(res, "nDCG@10(doc)")
    ci = tables.class_ci(res, "nDCG@10(doc)")
    answerable = res.per_query[res.per_query["class"] != "abstain"]
    classes = ["needle", "spread", "trap", "described", tables.ALL]
    assert list(ci["class"].unique()) == classes
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == classes
    for container, arm in zip(_bars(ax), res.arms, strict=True):
        assert container.errorbar is not None  # every bar has a CI whisker
        rows = ci[ci["arm"] == arm].set_index("class").loc[classes]
        assert np.allclose([p.get_height() for p in container.patches], rows["mean"])
        whiskers = container.errorbar.lines[2][0].get_segments()
        assert len(whiskers) == len(classes)
        for seg, (cls, row) in zip(whiskers, rows.iterrows(), strict=True):
            if row["n"] < tables.MIN_CI_QUERIES:  # a handful of queries: a mean, no whisker
                assert len(seg) == 0, cls
            else:
                assert [seg[0][1], seg[1][1]] == pytest.approx([row["low"], row["high"]]), cls
        every = answerable.loc[answerable["arm"] == arm, "nDCG@10(doc)"]
        assert rows.loc[tables.ALL, "n"] == len(every) == 7
        assert rows.loc[tables.ALL, "mean"] == pytest.approx(stats.bootstrap_ci(every)[0])
        assert rows[["low", "high"]].isna().all().all()  # 7 queries at most: no interval anywhere
    assert ci.loc[ci["class"] == "needle", "n"].tolist() == [4, 4]
    table = tables.class_ci_table(res)
    assert table.loc["keyword", ("nDCG@10 doc", "needle")].endswith("(n 4: no CI)")


def test_a_handful_of_queries_gets_no_whisker_and_the_planner_says_n_too_small(two_per_class, tmp_path):
    from ..conftest import write_results

    small = Results.load(two_per_class)
    ci = tables.class_ci(small, "nDCG@10")
    assert ci[["low", "high"]].isna().all().all()
    ax = figures.plot_class_bars(small, "nDCG@10")
    assert all(len(seg) == 0 for c in _bars(ax) for seg in c.errorbar.lines[2][0].get_segments())
    assert f"none for n < {tables.MIN_CI_QUERIES}" in ax.get_title(loc="left")
    assert "n too small" in prose.power_plan(small) and "4.084" not in prose.power_plan(small)
    rng = np.random.default_rng(0)
    big = Results.load(write_results(tmp_path / "big", {a: {"nDCG@10": list(rng.uniform(0, 1, 12))} for a in "ab"},
                                     ["needle"] * 12))
    ci = tables.class_ci(big, "nDCG@10").set_index(["arm", "class"])
    assert ci.loc[("a", "needle"), "low"] < ci.loc[("a", "needle"), "mean"] < ci.loc[("a", "needle"), "high"]
    assert "MDD" in prose.power_plan(big) and prose.power_plan(Results.load(write_results(
        tmp_path / "one", {"a": {"nDCG@10": [0.5] * 12}}, ["needle"] * 12))).startswith("_One arm only")


@pytest.mark.slow
def test_refusals_latency_and_tie_audit_count_what_the_table_says(res):
    counts = tables.refusal_counts(res)
    assert list(counts.index) == res.arms and counts.sum(axis=1).tolist() == [9, 9]
    assert (counts[["correct_refusal", "answered_abstain"]].sum(axis=1) == 2).all()
    fig = figures.fig_refusals(res)
    assert "abstain queries (n=2)" in fig.axes[0].get_title(loc="left")
    assert "answerable queries (n=7)" in fig.axes[1].get_title(loc="left")
    ties = tables.tie_audit(res).set_index(["arm", "class"])
    pq = res.per_query
    for arm in res.arms:
        a = pq[pq["arm"] == arm]
        assert ties.loc[(arm, "all"), "mean ties@10"] == pytest.approx(a["ties@10"].mean())
        assert ties.loc[(arm, "all"), "share with a tie"] == pytest.approx((a["ties@10"] > 0).mean())
    assert tables.tie_table(res).shape == (2, 12)  # 2 statistics x (5 classes + all)
    ax = figures.plot_latency(res)
    ms = pq["latency_s"] * 1000
    assert ax.get_xscale() == ("log" if ms.max() / ms.min() > 10 else "linear")
    assert "ms" in ax.get_xlabel()


@pytest.mark.slow
def test_figures_are_saved_only_with_a_directory_and_shown_from_the_same_drawing(res, tmp_path):
    shown = figures.save(figures.fig_latency(res), "latency", None)
    assert shown.data[:8] == b"\x89PNG\r\n\x1a\n" and not plt.get_fignums()  # closed: not drawn again inline
    folder = figures.figures_dir(res, tmp_path / "figs")
    shown = figures.save(figures.fig_latency(res), "latency", folder)
    assert (folder / "latency.png").read_bytes() == shown.data and len(shown.data) > 10_000
    width = plt.imread(folder / "latency.png").shape[1]
    assert shown.width == round(width * plt.rcParams["figure.dpi"] / figures.SAVE_DPI)


def test_the_first_seven_arm_colours_are_far_apart():
    rgb = [np.array(matplotlib.colors.to_rgb(c)) * 255 for c in figures.PALETTE[:7]]
    orange, vermillion = (np.array(matplotlib.colors.to_rgb(c)) * 255 for c in ("#E69F00", "#D55E00"))
    closest = min(np.linalg.norm(a - b) for i, a in enumerate(rgb) for b in rgb[i + 1:])
    assert closest > np.linalg.norm(orange - vermillion)  # the two oranges a 7-arm run showed side by side


def test_the_largest_changes_are_named_without_overlapping_inside_the_figure(tmp_path):
    """120 queries whose three largest gains and losses are adjacent bars of nearly equal height: their
    labels must neither overlap one another nor leave the figure."""
    from matplotlib.text import Text

    from ..conftest import write_results

    n = 120
    base = [0.5] * n
    cand = [0.5 + 0.45 - 0.001 * i if i < 10 else 0.5 - 0.45 + 0.001 * (n - i) if i >= n - 10
            else 0.5 + (i % 7 - 3) / 100 for i in range(n)]
    res = Results.load(write_results(tmp_path / "r", {"a": {"nDCG@10": base}, "b": {"nDCG@10": cand}}, ["needle"] * n))
    fig = figures.fig_deltas(res, ("a", "b"))
    fig.canvas.draw()
    renderer, frame = fig.canvas.get_renderer(), fig.bbox
    for ax in fig.axes:
        labels = [Text.get_window_extent(t, renderer) for t in ax.texts  # the text, not its leader line
                  if re.match(r"q\d{3} [+-]", t.get_text())]
        assert len(labels) == 6
        for i, box in enumerate(labels):
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            assert not any(box.overlaps(other) for other in labels[i + 1:])
    plt.close(fig)

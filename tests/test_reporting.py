"""The report notebook, rendered headless on a small real results directory, and the helpers behind it."""
from __future__ import annotations

import json
import os
import re
import shutil

import matplotlib
import nbformat
import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer
from nbclient.exceptions import CellExecutionError

from evalkit import qrels, reporting, stats
from evalkit.results import Results
from evalkit.runner import run

from .conftest import ROOT

matplotlib.use("Agg")

# Real questions about the ten manuals of the `small` fixture, every class, two abstain queries.
QUERIES = r'''
[set]
name = "report-test"
corpus = "small"
[set.gains]
3 = "answers it"
2 = "helps"
1 = "mentions it"

[[query]]
id = "n1"
class = "needle"
text = "How do I put a little extra vertical space before the total row of a table?"
judgments = [{ doc = "booktabs.pdf", page = 5, gain = 3, evidence = "Occasionally we want to put an extra space between certain rows of a table" },
             { doc = "ctable.pdf", page = 5, gain = 1 }]
[[query]]
id = "n2"
class = "needle"
text = "Which preamble command sets double spacing for the whole document?"
judgments = [{ doc = "setspace-doc.pdf", page = 1, gain = 3, evidence = 'The commands \singlespacing, \onehalfspacing, and \doublespacing,' }]
[[query]]
id = "n3"
class = "needle"
text = "insert the pages of an external PDF document into my document"
judgments = [{ doc = "pdfpages.pdf", page = 2, gain = 3, evidence = "Inserts pages of an external PDF document." }]
[[query]]
id = "n4"
class = "needle"
text = "sort numeric citations into ascending order"
judgments = [{ doc = "cite.pdf", page = 1, gain = 3, evidence = "Citations in a list are sorted into ascending order." }]
[[query]]
id = "s1"
class = "spread"
text = "define my own new floating environment type, like a Program float"
judgments = [{ doc = "float.pdf", page = 3, gain = 3 }, { doc = "newfloat.pdf", page = 2, gain = 3 }]
[[query]]
id = "t1"
class = "trap"
text = "make each chapter's bibliography a section instead of a chapter"
judgments = [{ doc = "chapterbib.pdf", page = 3, gain = 3, evidence = "to convert your bibliographies from" }]
[[query]]
id = "d1"
class = "described"
text = "little pictures side by side inside one figure, each labelled (a), (b) underneath"
judgments = [{ doc = "subcaption.pdf", page = 4, gain = 2 }]
[[query]]
id = "a1"
class = "abstain"
text = "How do I draw a Gantt chart with pgfgantt?"
[[query]]
id = "a2"
class = "abstain"
text = "typeset a chess board diagram from a FEN string"
'''
ARMS = ["keyword", "global-index"]


@pytest.fixture(scope="module")
def results_dir(small, tmp_path_factory):
    """A real results directory: keyword and global-index over the queries above on ten real manuals."""
    c, store = small
    d = tmp_path_factory.mktemp("report")
    path = d / "report-test.toml"
    path.write_text(QUERIES)
    qs = qrels.load(path)
    assert qrels.check(qs, store.corpus_texts(c)) == []
    return run(c, store, qs, ARMS, d / "results", progress=False)


@pytest.fixture(scope="module")
def gated(results_dir, tmp_path_factory):
    """What `make report` does: a copy of the run above whose best arm is gated against keyword (gate.json
    beside it); (directory, best arm, verdict). Rendered once, for every test that reads the report."""
    import evalkit as ek

    copy = tmp_path_factory.mktemp("gated") / "results"
    shutil.copytree(results_dir, copy)
    best = reporting.best_arm(Results.load(copy), besides="keyword")
    return copy, best, ek.gate(copy, copy, baseline_arm="keyword", candidate_arm=best)


@pytest.fixture(scope="module")
def rendered(gated):
    return reporting.render(gated[0])


@pytest.fixture
def res(results_dir):
    return Results.load(results_dir)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _bars(ax):
    """The bar groups of an axes, one per arm (bars with whiskers also add an ErrorbarContainer)."""
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def _copy(results_dir, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(results_dir, dest, ignore=shutil.ignore_patterns("report.*", "figures"))
    return dest


# ---- render ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_render_writes_notebook_html_and_every_figure(rendered, gated):
    results_dir = gated[0]
    assert rendered == results_dir.resolve() / "report.html"
    for name in reporting.FIGURES:
        png = results_dir / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png.stat().st_size > 20_000, name
        h, w = plt.imread(png).shape[:2]
        assert w >= 900 and h >= 250, (name, w, h)
    nb = nbformat.read(results_dir / "report.ipynb", as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert tags.index(["injected-parameters"]) == tags.index(["parameters"]) + 1
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == len(reporting.FIGURES)


@pytest.mark.slow
def test_html_has_the_headline_table_legends_figures_and_provenance(rendered, res):
    html = rendered.read_text()
    tables = re.findall(r"<table.*?</table>", html, re.S)
    headline = [t for t in tables if "nDCG@10 page" in t and "s/query (median)" in t]
    assert headline and all(arm in headline[0] for arm in ARMS)
    assert "nDCG@10 doc" in headline[0] and "GoldDoc@3" in headline[0] and "wrongful refusal" in headline[0]
    assert len(re.findall(r'<img[^>]*src="data:image/png;base64,', html)) == len(reporting.FIGURES)  # embedded
    assert "answers it" in html  # the gain legend of the run's own query file
    assert "a lexically similar distractor document is wrong" in html  # the class legend
    assert res.manifest["corpus"]["digest"] in html and res.manifest["qrels"]["digest"] in html
    assert "<title>evalkit report: small × report-test</title>" in html


@pytest.mark.slow
def test_render_takes_a_pair_and_an_output_file(results_dir, tmp_path):
    copy = _copy(results_dir, tmp_path)
    out = reporting.render(copy, out_html=tmp_path / "out" / "r.html", pair="global-index,keyword")
    assert out == tmp_path / "out" / "r.html" and out.stat().st_size > 100_000
    assert not (copy / "report.html").exists() and (copy / "report.ipynb").exists()
    nb = nbformat.read(copy / "report.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "pair = ['global-index', 'keyword']" in injected.source
    assert (copy / "figures" / "deltas.png").stat().st_size > 20_000


@pytest.mark.slow
def test_a_failing_cell_fails_render_naming_the_cell_and_the_problem(results_dir, tmp_path):
    bad = _copy(results_dir, tmp_path)
    (bad / "per_query.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(CellExecutionError) as e:
        reporting.render(bad)
    message = str(e.value)
    assert "per_query.parquet" in message and re.search(r"cell \d+ \(In \[\d+\]\) failed", message)
    assert "res = Results.load(results)" in message  # the failing cell's code
    assert "\x1b[" not in message  # no terminal colour codes
    assert not (bad / "report.html").exists() and not (bad / "report.ipynb").exists()


@pytest.mark.slow
def test_render_refuses_a_missing_directory_and_an_unknown_arm(results_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        reporting.render(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"'semantic' is not in .*arms: keyword, global-index"):
        reporting.render(results_dir, pair="keyword,semantic")


# ---- the HTML in a real browser ------------------------------------------------------------------------
# Debian's chromium, driven by Playwright (its Python package ships the driver; its own browser download
# cannot work offline, so it launches /usr/bin/chromium, which `make test` installs).

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def browse(html, tmp_path) -> dict:
    """Open ``html`` in headless chromium with a fresh profile; every request the page makes beyond the
    file itself is recorded and refused. Returns console errors, requests and each <img>'s natural width."""
    from playwright.sync_api import sync_playwright

    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing: `make test` installs Debian's chromium"
    seen = {"errors": [], "requests": []}

    def refuse(route):
        seen["requests"].append(route.request.url)
        route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(tmp_path / "profile", executable_path=CHROMIUM,
                                                       headless=True, args=CHROMIUM_FLAGS)
        try:
            browser.route(lambda url: url != html.as_uri(), refuse)
            page = browser.new_page()
            page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.on("websocket", lambda ws: seen["requests"].append(ws.url))
            page.goto(html.as_uri(), wait_until="load")
            page.wait_for_load_state("networkidle")
            seen["images"] = page.evaluate("Array.from(document.images, i => i.complete ? i.naturalWidth : 0)")
            seen["pwned"] = page.evaluate("window.__pwned === undefined ? null : window.__pwned")
            seen["text"] = page.evaluate("document.body.innerText")
        finally:
            browser.close()
    return seen


@pytest.mark.slow
def test_the_html_report_works_offline_in_a_real_browser(rendered, tmp_path):
    seen = browse(rendered, tmp_path)
    assert seen["errors"] == [] and seen["requests"] == []
    assert len(seen["images"]) == len(reporting.FIGURES) and all(w > 0 for w in seen["images"]), seen["images"]


# Strings a committed baseline's manifest could hold: each runs script if it reaches the page as markup
# (the headline's Styler caption and index, a Markdown cell's HTML block, a figure's mathtext).
PAYLOADS = ('<img src=x onerror="window.__pwned=1">', "set\n\n<script>window.__pwned=2</script>\n\nend",
            '<svg onload="window.__pwned=3"></svg>', "$\\frac{1}{2}$ `a` | b $")


@pytest.fixture(scope="module")
def hostile_html(results_dir, tmp_path_factory):
    """The real run above with a manifest and measures renamed to hostile strings, and a ``pandas.py`` and a
    ``matplotlibrc`` committed beside them; rendered."""
    import pandas as pd

    d = tmp_path_factory.mktemp("hostile") / "results"
    shutil.copytree(results_dir, d, ignore=shutil.ignore_patterns("report.*", "figures"))
    m = json.loads((d / "manifest.json").read_text())
    labels = {a["label"]: f"{a['label']}{p}" for a, p in zip(m["arms"], PAYLOADS[2:])}
    for a in m["arms"]:
        a["label"] = labels[a["label"]]
    m["corpus"]["name"], m["qrels"]["name"] = PAYLOADS[0], PAYLOADS[1]
    m["qrels"]["gains"] = {"3": PAYLOADS[1], "1": PAYLOADS[0]}
    (d / "manifest.json").write_text(json.dumps(m))
    pq = pd.read_parquet(d / "per_query.parquet")
    pq["arm"] = pq["arm"].map(labels)
    pq["query"] = pq["query"] + PAYLOADS[0]
    pq.to_parquet(d / "per_query.parquet", index=False)
    marker = d.parent / "imported"
    (d / "pandas.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit('imported')\n")
    (d / "matplotlibrc").write_text("backend: module://no_such_backend\n")
    return reporting.render(d), marker


@pytest.mark.slow
def test_no_script_from_data_runs_and_no_code_from_the_results_directory_is_imported(hostile_html, tmp_path):
    html, marker = hostile_html
    assert not marker.exists()  # pandas.py beside the results was never imported
    seen = browse(html, tmp_path)
    assert seen["pwned"] is None and seen["errors"] == [] and seen["requests"] == [], seen
    assert PAYLOADS[0] in seen["text"] and "window.__pwned=2" in seen["text"]  # shown as text
    assert "Not written by evalkit, so not read: matplotlibrc, pandas.py" in seen["text"]


@pytest.mark.slow
def test_the_browser_check_catches_requests_console_errors_and_broken_figures(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><script src="https://cdn.invalid/x.js"></script></head><body>'
                    '<img src="data:image/png;base64,AAAA"><img src="figures/missing.png">'
                    '<script>console.error("boom")</script></body></html>')
    seen = browse(page, tmp_path)
    assert "https://cdn.invalid/x.js" in seen["requests"] and (tmp_path / "figures/missing.png").as_uri() in seen["requests"]
    assert "boom" in seen["errors"]
    assert seen["images"] == [0, 0]
    script = tmp_path / "script.html"
    script.write_text("<p>x</p><script>window.__pwned = 1</script>")
    assert browse(script, tmp_path)["pwned"] == 1  # the check sees a script that runs


def test_the_report_notebook_uses_only_evalkit_pandas_and_matplotlib():
    nb = nbformat.read(reporting.NOTEBOOK, as_version=4)
    assert not any(c.outputs for c in nb.cells if c.cell_type == "code")  # a template, saved clean
    imports = {m for c in nb.cells if c.cell_type == "code"
               for m in re.findall(r"^\s*(?:from|import)\s+([\w.]+)", c.source, re.M)}
    assert imports and all(m.split(".")[0] in {"evalkit", "pandas", "matplotlib"} for m in imports), imports


def test_getting_started_is_saved_executed_without_errors_or_machine_paths():
    nb = nbformat.read(ROOT / "notebooks" / "getting-started.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    outputs = [o for c in code for o in c.outputs]
    assert outputs and not [o for o in outputs if o.output_type == "error"]
    text = json.dumps([o for c in code for o in c.outputs])
    assert "global-index" in text and "nDCG@10 page" in text
    assert not re.search(r"/(tmp|home|root|Users|work)/", text), "outputs must not show this machine's paths"


# ---- helpers --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_arm_colours_are_stable_distinct_and_used_by_every_figure(res):
    c = reporting.arm_colours(res.arms)
    assert c == reporting.arm_colours(list(res.arms)) == {"keyword": reporting.PALETTE[0], "global-index": reporting.PALETTE[1]}
    many = reporting.arm_colours([f"arm{i}" for i in range(len(reporting.PALETTE))])
    assert len(set(many.values())) == len(reporting.PALETTE)
    figs = [reporting.fig_class_bars(res), reporting.fig_ties(res)]
    for fig in figs:
        legend = {t.get_text(): to_hex(h.get_facecolor()) for t, h in zip(fig.legends[0].get_texts(),
                                                                          fig.legends[0].legend_handles)}
        assert legend == {a: to_hex(v) for a, v in c.items()}
        for ax in fig.axes:
            for container, arm in zip(_bars(ax), res.arms, strict=True):
                assert {to_hex(p.get_facecolor()) for p in container.patches} == {to_hex(c[arm])}
    ax = reporting.fig_latency(res).axes[0]
    assert {t.get_text(): to_hex(t.get_color()) for t in ax.get_yticklabels()} == {a: to_hex(v) for a, v in c.items()}


def test_long_arm_labels_wrap_at_their_parameters():
    assert reporting.wrap_label("keyword") == "keyword"
    assert reporting.wrap_label("hybrid(keyword=keyword(idf_scope=corpus),depth=50)") == \
        "hybrid(\n  keyword=keyword(idf_scope=corpus),\n  depth=50)"


@pytest.mark.slow
def test_class_bars_are_class_means_with_bootstrap_ci_whiskers(res):
    ax = reporting.plot_class_bars(res, "nDCG@10(doc)")
    ci = reporting.class_ci(res, "nDCG@10(doc)")
    answerable = res.per_query[res.per_query["class"] != "abstain"]
    classes = ["needle", "spread", "trap", "described", reporting.ALL]
    assert list(ci["class"].unique()) == classes
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == classes
    for container, arm in zip(_bars(ax), res.arms, strict=True):
        assert container.errorbar is not None  # every bar has a CI whisker
        rows = ci[ci["arm"] == arm].set_index("class").loc[classes]
        assert np.allclose([p.get_height() for p in container.patches], rows["mean"])
        whiskers = container.errorbar.lines[2][0].get_segments()
        assert len(whiskers) == len(classes)
        for seg, (cls, row) in zip(whiskers, rows.iterrows()):
            if row["n"] < reporting.MIN_CI_QUERIES:  # a handful of queries: a mean, no whisker
                assert len(seg) == 0, cls
            else:
                assert [seg[0][1], seg[1][1]] == pytest.approx([row["low"], row["high"]]), cls
        every = answerable.loc[answerable["arm"] == arm, "nDCG@10(doc)"]
        assert rows.loc[reporting.ALL, "n"] == len(every) == 7
        assert rows.loc[reporting.ALL, "mean"] == pytest.approx(stats.bootstrap_ci(every)[0])
        assert rows[["low", "high"]].isna().all().all()  # 7 queries at most: no interval anywhere
    assert ci.loc[ci["class"] == "needle", "n"].tolist() == [4, 4]
    table = reporting.class_ci_table(res)
    assert table.loc["keyword", ("nDCG@10 doc", "needle")].endswith("(n 4: no CI)")


def test_a_handful_of_queries_gets_no_whisker_and_the_planner_says_n_too_small(two_per_class, tmp_path):
    from .conftest import write_results

    small = Results.load(two_per_class)
    ci = reporting.class_ci(small, "nDCG@10")
    assert ci[["low", "high"]].isna().all().all()
    ax = reporting.plot_class_bars(small, "nDCG@10")
    assert all(len(seg) == 0 for c in _bars(ax) for seg in c.errorbar.lines[2][0].get_segments())
    assert f"none for n < {reporting.MIN_CI_QUERIES}" in ax.get_title(loc="left")
    assert "n too small" in reporting.power_plan(small) and "4.084" not in reporting.power_plan(small)
    rng = np.random.default_rng(0)
    big = Results.load(write_results(tmp_path / "big", {a: {"nDCG@10": list(rng.uniform(0, 1, 12))} for a in "ab"},
                                     ["needle"] * 12))
    ci = reporting.class_ci(big, "nDCG@10").set_index(["arm", "class"])
    assert ci.loc[("a", "needle"), "low"] < ci.loc[("a", "needle"), "mean"] < ci.loc[("a", "needle"), "high"]
    assert "MDD" in reporting.power_plan(big) and reporting.power_plan(Results.load(write_results(
        tmp_path / "one", {"a": {"nDCG@10": [0.5] * 12}}, ["needle"] * 12))).startswith("_One arm only")


@pytest.mark.slow
def test_deltas_are_second_minus_first_over_answerable_queries(res):
    d = reporting.deltas(res, ("keyword", "global-index"), "nDCG@10")
    assert len(d) == 7 and "abstain" not in set(d["class"])
    assert np.allclose(d["delta"], d["global-index"] - d["keyword"])
    assert list(d["delta"]) == sorted(d["delta"], reverse=True)
    assert d.loc["n2", "text"].startswith("Which preamble command")  # texts from the unchanged query file
    ax = reporting.plot_deltas(res, ("keyword", "global-index"))
    assert len(ax.patches) == 7
    assert "global-index  −  keyword" in ax.get_title(loc="left")
    changes = reporting.biggest_changes(res, ("keyword", "global-index"), n=2)
    assert len(changes) <= 4 and set(changes.index.get_level_values("change")) <= {"better", "worse"}
    for change, row in changes.iterrows():
        assert (row["delta"] > 0) == (change[0] == "better")


@pytest.mark.slow
def test_resolve_pair(res):
    assert reporting.resolve_pair(res) == ("keyword", "global-index")
    assert reporting.resolve_pair(res, "global-index,keyword") == ("global-index", "keyword")
    assert reporting.resolve_pair(res, ["global-index", "keyword"]) == ("global-index", "keyword")
    with pytest.raises(ValueError, match="two different arms"):
        reporting.resolve_pair(res, "keyword,keyword")
    with pytest.raises(ValueError, match="two different arms"):
        reporting.resolve_pair(res, "keyword")


@pytest.mark.slow
def test_a_run_of_abstain_queries_only_renders(small, tmp_path):
    """A held-out set of abstain queries (qrels/held-out) has no answerable query: no nDCG, no deltas, no
    Judged@10 to warn about; the report still renders, with its refusal figures."""
    c, store = small
    path = tmp_path / "held-out.toml"
    path.write_text(QUERIES[:QUERIES.index("[[query]]")] + QUERIES[QUERIES.index('[[query]]\nid = "a1"'):])
    out = run(c, store, qrels.load(path), ARMS, tmp_path / "results", progress=False)
    res = Results.load(out)
    assert set(res.per_query["class"]) == {"abstain"} and reporting.resolve_pair(res) is None
    html = reporting.render(out).read_text()
    assert "No pair to compare" in html and "No answerable query" in html


@pytest.mark.slow
def test_refusals_latency_and_tie_audit_count_what_the_table_says(res):
    counts = reporting.refusal_counts(res)
    assert list(counts.index) == res.arms and counts.sum(axis=1).tolist() == [9, 9]
    assert (counts[["correct_refusal", "answered_abstain"]].sum(axis=1) == 2).all()
    fig = reporting.fig_refusals(res)
    assert "abstain queries (n=2)" in fig.axes[0].get_title(loc="left")
    assert "answerable queries (n=7)" in fig.axes[1].get_title(loc="left")
    ties = reporting.tie_audit(res).set_index(["arm", "class"])
    pq = res.per_query
    for arm in res.arms:
        a = pq[pq["arm"] == arm]
        assert ties.loc[(arm, "all"), "mean ties@10"] == pytest.approx(a["ties@10"].mean())
        assert ties.loc[(arm, "all"), "share with a tie"] == pytest.approx((a["ties@10"] > 0).mean())
    assert reporting.tie_table(res).shape == (2, 12)  # 2 statistics x (5 classes + all)
    ax = reporting.plot_latency(res)
    ms = pq["latency_s"] * 1000
    assert ax.get_xscale() == ("log" if ms.max() / ms.min() > 10 else "linear")
    assert "ms" in ax.get_xlabel()


@pytest.mark.slow
def test_legends_and_provenance_come_from_the_run(res, results_dir, tmp_path):
    text = reporting.legend(res)
    assert "**3**: answers it" in text and "**abstain** (2)" in text and "nDCG@10 page" in text
    prov = reporting.provenance(res)
    assert list(prov["arms"].index) == res.arms and "build s" in prov["arms"].columns
    assert prov["run"].loc["corpus digest", "value"] == res.manifest["corpus"]["digest"]
    assert prov["environment"].loc["sqlite", "value"] == res.manifest["environment"]["sqlite"]
    assert "reference workload" in prov["environment"].loc["calibration", "value"]
    # without its query file, the run's recorded gain legend still shows, and the report says what is missing
    copy = _copy(results_dir, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["qrels"]["path"] = str(tmp_path / "gone.toml")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    moved = Results.load(copy)
    assert reporting.gains(moved) == reporting.gains(res) != qrels.DEFAULT_GAINS
    assert "was not found" in reporting.legend(moved) and reporting.query_set(moved) is None
    # a manifest without a gain legend (and no query file) falls back to the default one
    del manifest["qrels"]["gains"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert reporting.gains(Results.load(copy)) == qrels.DEFAULT_GAINS
    assert "text" not in reporting.deltas(moved, ("keyword", "global-index")).columns


@pytest.mark.slow
def test_figures_are_saved_only_with_a_directory(res, tmp_path):
    fig = reporting.fig_latency(res)
    assert reporting.save(fig, "latency", None) is None
    path = reporting.save(fig, "latency", reporting.figures_dir(res, tmp_path / "figs"))
    assert path == tmp_path / "figs" / "latency.png" and path.stat().st_size > 10_000


def test_an_old_results_directory_without_calibration_still_loads_and_says_so(tmp_path):
    from .conftest import ENVIRONMENT, write_results

    d = write_results(tmp_path / "old", {"a": {"nDCG@10": [0.5] * 4}}, ["trap"] * 4, environment=dict(ENVIRONMENT))
    assert "calibration" not in json.loads((d / "manifest.json").read_text())["environment"]
    prov = reporting.provenance(Results.load(d))
    assert prov["environment"].loc["calibration", "value"].startswith("no calibration recorded")
    assert prov["environment"].loc["sqlite", "value"] == ENVIRONMENT["sqlite"]


# ---- the conclusion, highlighting, the default pair, display labels ------------------------------------------

def _known(tmp_path):
    """Four arms on 30 answerable and 2 abstain queries with chosen scores: ``good`` is 0.3 above ``base`` on
    every query, ``same`` ties ``base`` on average, ``close`` leads ``good`` by 0.005 on average (+0.06 and
    -0.05 in turn); ``same`` refuses one abstain query and fails on one answerable query."""
    from .conftest import write_results

    classes = ["needle"] * 30 + ["abstain"] * 2
    wiggle = [0.06 if i % 2 else -0.05 for i in range(32)]
    scores = {"base": [0.5] * 32, "good": [0.8] * 32, "same": [0.5 + w for w in wiggle],
              "close": [0.8 + w for w in wiggle]}
    outcomes = {"same": ["error"] + [None] * 30 + ["correct_refusal"]}
    return Results.load(write_results(tmp_path / "known", {a: {"nDCG@10": v} for a, v in scores.items()}, classes,
                                      outcomes=outcomes))


def test_the_conclusion_says_what_the_numbers_show(tmp_path):
    res = _known(tmp_path)
    text = reporting.conclusion(res, "base", n_resamples=2000)
    lines = {line.split("**")[1]: line for line in text.splitlines() if line.startswith("- **")}
    assert lines["Ranking"] == "- **Ranking**: `close` 0.805 > `good` 0.800 > `same` 0.505 > `base` 0.500"
    ahead = lines["ahead of `base`"]
    assert ahead.startswith("- **ahead of `base`**: `close` +0.305 [+0.2") and ahead.endswith(
        "; `good` +0.300 [+0.300, +0.300]")
    assert lines["cannot be told from `base`"].startswith("- **cannot be told from `base`**: `same` +0.005 [")
    assert "below the" in lines["cannot be told from `base`"]  # the MDD says why
    assert "behind `base`" not in lines
    assert lines["Lead"].startswith("- **Lead**: `close` over `good` by +0.005 [")
    assert lines["Lead"].endswith("the set cannot tell them apart")
    assert lines["Refusal"] == ("- **Refusal**: `same` refused 1 of 2 abstain and 0 of 30 answerable queries. "
                                "Errors: `same` 1.")
    assert "no verdict" in lines["Gate"]
    assert "Holm-adjusted over the 4 comparisons" in text  # 3 arms against base, and the lead
    # without a baseline every arm is set against the leader
    alone = reporting.conclusion(res, n_resamples=2000)
    assert "- **behind `close`**: `same` -0.300 [-0.300, -0.300]; `base` -0.305 [" in alone
    assert "- **cannot be told from `close`**: `good` -0.005 [" in alone and "**Lead**" not in alone


def test_an_interval_that_excludes_zero_is_not_called_indistinguishable(tmp_path):
    """Eight arms each a little above ``base`` on all 8 queries: every unadjusted CI excludes 0, while Holm
    over the 8 comparisons leaves no sign-flip p below 0.05 (the smallest possible p is about 2/256, times 8).
    The prose says that, instead of "cannot be told from" beside an interval that excludes 0 (issue 33)."""
    from .conftest import write_results

    steps = [0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09]
    scores = {"base": [0.5] * 8, **{f"c{i}": [0.5 + s + i / 1000 for s in steps] for i in range(8)}}
    res = Results.load(write_results(tmp_path / "r", {a: {"nDCG@10": v} for a, v in scores.items()}, ["needle"] * 8))
    found = reporting.findings(res, "base", n_resamples=2000)
    assert all(f.result.low > 0 and f.p_holm >= 0.05 for f in found)
    text = reporting.conclusion(res, "base", n_resamples=2000)
    assert "cannot be told from" not in text and "ahead of" not in text
    head = "- **CI excludes 0 against `base`, the adjusted test does not**: "
    line = next(x for x in text.splitlines() if x.startswith(head))
    assert line.count("p(Holm) = ") == 8 and "`c7` +0.062 [+0.0" in line


def test_the_conclusion_escapes_arm_labels(tmp_path):
    from .conftest import write_results

    res = Results.load(write_results(tmp_path / "x", {"a": {"nDCG@10": [0.1, 0.2]}, "<b>*x*</b>": {"nDCG@10": [0.3, 0.4]}},
                                     ["needle", "needle"]))
    text = reporting.conclusion(res, "a", n_resamples=200)
    assert text.count("<b>") == text.count("`<b>*x*</b>`") == 2  # only ever inside a code span: shown, not markup


def test_bold_only_where_a_column_separates_arms(tmp_path):
    res = _known(tmp_path)
    st = reporting.headline(res)
    st._compute()
    bold = {res.table().columns[c] for (_, c), props in st.ctx.items() if ("font-weight", "bold") in props}
    assert bold == {"nDCG@10 page", "nDCG@10 doc", "GoldDoc@3", "correct refusal", "errors"}
    # every arm answered every query in the same time and refused nothing wrongly: nothing to bold there
    assert not {"wrongful refusal", "s/query (median)"} & bold
    assert reporting.separating(res.table()) == [c for c in res.table().columns if c in bold | {"Judged@10"}]


def test_the_default_pair_is_the_best_arm_against_the_baseline(tmp_path):
    res = _known(tmp_path)
    assert reporting.best_arm(res) == "close"
    assert reporting.best_arm(res, besides="close") == "good"
    assert reporting.resolve_pair(res, baseline="base") == ("base", "close")
    assert reporting.resolve_pair(res, baseline="close") == ("close", "good")  # a leading baseline: the runner-up
    assert reporting.resolve_pair(res) == ("good", "close")  # no baseline: runner-up against the best
    assert reporting.resolve_baseline(res, "good") == "good" and reporting.resolve_baseline(res) is None
    with pytest.raises(ValueError, match="no arm 'nope'"):
        reporting.resolve_baseline(res, "nope")


def test_best_on_the_command_line(tmp_path, capsys):
    from evalkit.cli import main

    res = _known(tmp_path)
    assert main(["best", str(res.path), "--besides", "close"]) == 0
    assert capsys.readouterr().out == "good\n"
    assert main(["best", str(res.path), "--measure", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_display_labels_drop_long_parameters_unless_two_arms_would_look_alike():
    model = "semantic(model=sentence-transformers/all-MiniLM-L6-v2)"
    assert reporting.short_labels([model, "hybrid(keyword=global-index)", "keyword"]) == {
        model: "semantic", "hybrid(keyword=global-index)": "hybrid(keyword=global-index)", "keyword": "keyword"}
    assert reporting.short_labels(["x(a=1,model=sentence-transformers/all-MiniLM-L6-v2)"]) == {
        "x(a=1,model=sentence-transformers/all-MiniLM-L6-v2)": "x(a=1)"}
    assert reporting.short_labels([model, "semantic"]) == {model: model, "semantic": "semantic"}
    assert reporting.label_note([model]) == f"_In figures and in this text, `semantic` is `{model}`._"
    assert reporting.label_note(["keyword"]) == ""


def test_the_first_seven_arm_colours_are_far_apart():
    rgb = [np.array(matplotlib.colors.to_rgb(c)) * 255 for c in reporting.PALETTE[:7]]
    orange, vermillion = (np.array(matplotlib.colors.to_rgb(c)) * 255 for c in ("#E69F00", "#D55E00"))
    closest = min(np.linalg.norm(a - b) for i, a in enumerate(rgb) for b in rgb[i + 1:])
    assert closest > np.linalg.norm(orange - vermillion)  # the two oranges a 7-arm run showed side by side


def test_the_class_table_keeps_intervals_on_one_line(res):
    st = reporting.class_ci_styled(res)
    assert list(st.data.index.names) == ["measure", "arm"] and len(st.data) == 2 * len(res.arms)
    assert "white-space: nowrap" in st.to_html()


@pytest.mark.slow
def test_a_gated_run_reports_its_verdict_and_its_baseline_first(gated, rendered):
    """What `make report` does: gate the best arm against the baseline, then render; the conclusion on the
    first screen names the verdict, and the baseline comes from gate.json."""
    copy, best, verdict = gated
    res = Results.load(copy)
    assert reporting.resolve_baseline(res) == "keyword"
    assert reporting.resolve_pair(res, baseline="keyword") == ("keyword", best)
    gate_line = next(x for x in reporting.conclusion(res, "keyword", n_resamples=500).splitlines() if "**Gate**" in x)
    assert f"`{best}` against `keyword`: **{'PASS' if verdict.passed else 'FAIL'}** ({verdict.counts()})" in gate_line
    html = rendered.read_text()
    first = html[:html.index('id="Headline"')]
    assert "Conclusion" in first and ("PASS" if verdict.passed else "FAIL") in first
    # the verdict's own section: its rules by name and the digest of the rules file (shipped: no ./gate.toml)
    assert "Gate verdict" in html and verdict.rules_sha256 in html and "non-inferiority nDCG@10(doc)" in html


def test_the_largest_changes_are_named_without_overlapping_inside_the_figure(tmp_path):
    """120 queries whose three largest gains and losses are adjacent bars of nearly equal height: their
    labels must neither overlap one another nor leave the figure."""
    from matplotlib.text import Text

    from .conftest import write_results

    n = 120
    base = [0.5] * n
    cand = [0.5 + 0.45 - 0.001 * i if i < 10 else 0.5 - 0.45 + 0.001 * (n - i) if i >= n - 10 else 0.5 + (i % 7 - 3) / 100
            for i in range(n)]
    res = Results.load(write_results(tmp_path / "r", {"a": {"nDCG@10": base}, "b": {"nDCG@10": cand}}, ["needle"] * n))
    fig = reporting.fig_deltas(res, ("a", "b"))
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


def test_the_biggest_changes_table_uses_short_labels_signed_deltas_and_the_query_texts(tmp_path, monkeypatch):
    from .conftest import write_results

    d = write_results(tmp_path / "r", {"keyword": {"nDCG@10": [0.2, 0.9, 0.5]},
                                       "semantic(model=sentence-transformers/all-MiniLM-L6-v2)": {"nDCG@10": [0.7, 0.1, 0.5]}},
                      ["needle"] * 3)
    manifest = json.loads((d / "manifest.json").read_text())
    (tmp_path / "work" / "qrels").mkdir(parents=True)
    q = tmp_path / "work" / "qrels" / "fixture.toml"
    q.write_text('[set]\nname = "fixture-set"\n' + "".join(
        f'[[query]]\nid = "q{i:03d}"\nclass = "needle"\ntext = "query <b>{i}</b>"\njudgments = []\n' for i in range(3)))
    manifest["qrels"]["digest"] = qrels.load(q).digest
    (d / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("EVALKIT_WORKDIR", str(tmp_path / "work"))  # as `evalkit report` tells its kernel
    res = Results.load(d)
    html = reporting.biggest_changes_styled(res, list(res.arms)).to_html()
    assert "semantic</th>" in html and "sentence-transformers" not in html  # the short label
    assert "+0.500" in html and "-0.800" in html and "query &lt;b&gt;1&lt;/b&gt;" in html and "<b>1" not in html

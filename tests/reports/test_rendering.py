"""The report notebook, rendered headless on a small real results directory: the files it writes, the HTML
in a real browser, and what it refuses."""
from __future__ import annotations

import json
import os
import re
import shutil

import nbformat
import pytest
from matplotlib import pyplot as plt
from nbclient.exceptions import CellExecutionError

from evalkit import qrels
from evalkit.reports import prose, rendering, selection
from evalkit.results import Results
from evalkit.runner import run

from ..conftest import HANG_S, ROOT, query_file
from .conftest import ARMS, QUERIES, SET, _copy


@pytest.mark.slow
def test_render_writes_notebook_html_and_every_figure(gated):
    copy = gated[0]
    for name in rendering.FIGURES:
        png = copy / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png.stat().st_size > 20_000, name
        h, w = plt.imread(png).shape[:2]
        assert w >= 900 and h >= 250, (name, w, h)
    nb = nbformat.read(copy / "report.ipynb", as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert tags.index(["injected-parameters"]) == tags.index(["parameters"]) + 1
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == len(rendering.FIGURES)


@pytest.mark.slow
def test_html_has_the_headline_table_legends_figures_and_provenance(rendered, res):
    html = rendered.read_text()
    tables = re.findall(r"<table.*?</table>", html, re.S)
    headline = [t for t in tables if "nDCG@10 page" in t and "s/query (median)" in t]
    assert headline and all(arm in headline[0] for arm in ARMS)
    assert "nDCG@10 doc" in headline[0] and "GoldDoc@3" in headline[0] and "wrongful refusal" in headline[0]
    assert len(re.findall(r'<img[^>]*src="data:image/png;base64,', html)) == len(rendering.FIGURES)  # embedded
    assert "answers it" in html  # the gain legend of the run's own query file
    assert "a lexically similar distractor document is wrong" in html  # the class legend
    assert res.manifest["corpus"]["digest"] in html and res.manifest["qrels"]["digest"] in html
    assert "<title>evalkit report: small × report-test</title>" in html
    assert "The local judge" in html and "No judge in this run" in html  # and how to make one


@pytest.mark.slow
def test_a_failing_cell_fails_render_naming_the_cell_and_the_problem(results_dir, tmp_path):
    """A problem only a cell meets (render's checks up front read the results, not what a cell does with them:
    a measure column of text is refused before any cell, tests/test_resultsdir.py) fails render with the
    cell, its code and the error, and leaves no report behind: the report notebook with one more cell, right
    after the cell that loads the results (the cells after it are never run)."""
    bad = _copy(results_dir, tmp_path)
    nb = nbformat.read(rendering.NOTEBOOK, as_version=4)
    loads = next(i for i, c in enumerate(nb.cells) if "Results.load(results)" in c.source)
    nb.cells.insert(loads + 1, nbformat.v4.new_code_cell("res.per_query['nDCG@10'].sum() + ' pages'  # number + text"))
    nbformat.write(nb, tmp_path / "report.ipynb")
    with pytest.raises(CellExecutionError) as e:
        rendering.render(bad, notebook=tmp_path / "report.ipynb")
    message = str(e.value)
    assert re.search(r"cell \d+ \(In \[\d+\]\) failed", message) and "TypeError" in message
    assert "\x1b[" not in message  # no terminal colour codes
    assert not (bad / "report.html").exists() and not (bad / "report.ipynb").exists()


@pytest.mark.slow
def test_render_refuses_a_missing_directory_and_an_unknown_arm(results_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        rendering.render(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"'semantic' is not in .*arms: keyword, global-index"):
        rendering.render(results_dir, pair="keyword,semantic")


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
                                                       headless=True, args=CHROMIUM_FLAGS, timeout=HANG_S * 1000)
        try:
            browser.set_default_timeout(HANG_S * 1000)  # a bound on a hang: a loaded machine takes minutes
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
    assert len(seen["images"]) == len(rendering.FIGURES) and all(w > 0 for w in seen["images"]), seen["images"]


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
    labels = {a["label"]: f"{a['label']}{p}" for a, p in zip(m["arms"], PAYLOADS[2:], strict=True)}
    for a in m["arms"]:
        a["label"] = labels[a["label"]]
    m["corpus"]["name"], m["qrels"]["name"] = PAYLOADS[0], PAYLOADS[1]
    m["qrels"]["gains"] = {"3": PAYLOADS[1], "1": PAYLOADS[0]}
    (d / "manifest.json").write_text(json.dumps(m))
    pq = pd.read_parquet(d / "per_query.parquet")
    pq["arm"] = pq["arm"].map(labels)
    pq["query"] = pq["query"] + PAYLOADS[0]
    pq.attrs["evalkit"] = {**pq.attrs["evalkit"], "arms": [a["label"] for a in m["arms"]]}  # as its run records it
    pq.to_parquet(d / "per_query.parquet", index=False)
    marker = d.parent / "imported"
    (d / "pandas.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit('imported')\n")
    (d / "matplotlibrc").write_text("backend: module://no_such_backend\n")
    html = rendering.render(d)
    assert html == d.resolve() / "report.html"  # no output file given: beside the run
    return html, marker


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
    assert "https://cdn.invalid/x.js" in seen["requests"] and (tmp_path
                                                               / "figures/missing.png").as_uri() in seen["requests"]
    assert "boom" in seen["errors"]
    assert seen["images"] == [0, 0]
    script = tmp_path / "script.html"
    script.write_text("<p>x</p><script>window.__pwned = 1</script>")
    assert browse(script, tmp_path)["pwned"] == 1  # the check sees a script that runs


def test_the_report_notebook_uses_only_evalkit_pandas_and_matplotlib():
    nb = nbformat.read(rendering.NOTEBOOK, as_version=4)
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


@pytest.mark.slow
def test_a_run_of_abstain_queries_only_renders(small, tmp_path):
    """A held-out set of abstain queries (qrels/held-out) has no answerable query: no nDCG, no deltas, no
    Judged@10 to warn about; the report still renders, with its refusal figures."""
    c, store = small
    path = tmp_path / "held-out.toml"
    query_file(path, *(q for q in QUERIES if q["class"] == "abstain"), **SET)
    out = run(c, store, qrels.load(path), ARMS, tmp_path / "results", progress=False)
    res = Results.load(out)
    assert set(res.per_query["class"]) == {"abstain"} and selection.resolve_pair(res) is None
    html = rendering.render(out).read_text()
    assert "No pair to compare" in html and "No answerable query" in html


@pytest.mark.slow
def test_a_gated_run_rendered_with_a_pair_to_another_file_shows_its_verdict_first(gated):
    """What `make report` does: gate the best arm against the baseline, then render (here with a pair and an
    output file of its own): the conclusion on the first screen names the verdict, the baseline comes from
    gate.json, the verdict's section shows the rules it was decided by, and the pair's deltas are drawn."""
    copy, best, verdict, out = gated
    res = Results.load(copy)
    assert selection.resolve_baseline(res) == "keyword"
    assert selection.resolve_pair(res, baseline="keyword") == ("keyword", best)
    gate_line = next(x for x in prose.conclusion(res, "keyword", n_resamples=500).splitlines() if "**Gate**" in x)
    assert f"`{best}` against `keyword`: **{'PASS' if verdict.passed else 'FAIL'}** ({verdict.counts()})" in gate_line

    assert out == copy.parent / "out" / "r.html" and out.stat().st_size > 100_000
    assert not (copy / "report.html").exists() and (copy / "report.ipynb").exists()
    nb = nbformat.read(copy / "report.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "pair = ['global-index', 'keyword']" in injected.source
    assert (copy / "figures" / "deltas.png").stat().st_size > 20_000
    html = out.read_text()
    first = html[:html.index('id="Headline"')]
    assert "Conclusion" in first and ("PASS" if verdict.passed else "FAIL") in first
    assert "Gate verdict" in html and verdict.rules_sha256 in html and "non-inferiority nDCG@10(doc)" in html

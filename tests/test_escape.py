"""Escaping at every output, and a fuzz test that drives hostile strings through every field of a query set,
a lock, an MCP definition, a manifest and a gate verdict into every output evalkit writes: nothing from data
runs as script, forms markup, reaches the terminal as a control sequence, parses as figure math, or lands
outside its folder; nothing crashes with more than one line."""
from __future__ import annotations

import io
import json
import re
import shutil
import string
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib import cbook
from matplotlib import pyplot as plt
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from evalkit import completeness, corpora, docfigures, escape, gating, qrels, report_servers
from evalkit.arms import ArmError
from evalkit.arms.mcp import load_definition
from evalkit.cli import main
from evalkit.reports import figures, prose, selection, tables
from evalkit.results import Results

from .conftest import make_pdf, write_results

matplotlib.use("Agg")

# Pieces of hostile strings: markup that would run, Markdown and math that would format, TeX, terminal
# escapes, bidirectional overrides, NUL, line breaks, and path tricks. PWN marks what must never become live.
PIECES = ("<script>PWN()</script>", "\n\n<script>PWN()</script>\n\n", "<img src=x onerror=PWN()>",
          '"><svg onload=PWN()>', "[click](javascript:PWN())", "<javascript:PWN()>", "`", "``", "|", "**", "_",
          "# ", "$", "$x^2$", r"$\frac{1}{2}$", r"\textbf{x}", "{", "}", "%", "&amp;", "\x1b[2J", "\x1b[31m",
          "\x1b]0;title\x07", "\r", "\n", "\u202e", "\u2066", "\x00", "\x7f", "\x9b", "../", "..", "/etc/passwd",
          "C:\\x", "~", "é", "名", "\ufeff", " ")
hostile = st.lists(st.sampled_from(PIECES) | st.text(alphabet=string.ascii_letters, min_size=1, max_size=3),
                   min_size=1, max_size=4).map("".join)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SLOW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SAFE_TAGS = {"p", "table", "thead", "tbody", "tr", "th", "td", "b", "i", "em", "strong", "code", "caption", "style",
             "ul", "li", "ol", "details", "summary", "br", "div", "span", "a", "h3", "blockquote", "hr"}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def assert_inert_html(page: str) -> None:
    """No tag or attribute came from data: every element is one evalkit writes, no event handler, no script URL."""
    parser = _Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert tag in SAFE_TAGS, (tag, page)
        for name, value in attrs:
            assert not name.startswith("on") and "PWN" not in (value or "") and "PWN" not in name, (tag, name, page)


def assert_inert_markdown(text: str) -> None:
    assert_inert_html(markdown2html_mistune(text))
    assert "<script" not in markdown2html_mistune(text)


def assert_inert_terminal(text: str) -> None:
    bad = [c for c in text if c != "\n" and escape._control(c)]
    assert not bad, (bad, text)


def assert_no_math(fig) -> None:
    """Every text of a figure is literal: none parses as mathtext (an unbalanced $ would stop savefig)."""
    for t in fig.findobj(matplotlib.text.Text):
        assert not cbook.is_math_text(t.get_text()), t.get_text()
    fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)


# ---- the functions ----------------------------------------------------------------------------------------

def test_each_output_kind_has_its_escape():
    assert escape.html('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert escape.terminal("a\x1b[31mb\u202ec\nd") == "a\\x1b[31mb\\u202ec\\nd"
    assert escape.terminal("a\nb", newlines=True) == "a\nb"
    assert escape.xml("a\x00b\x1bc") == "a\\x00b\\x1bc" and ET.fromstring(f"<x>{escape.xml(chr(0))}</x>") is not None
    assert escape.figure("cost $5 and $x^2$") == r"cost \$5 and \$x^2\$"
    assert escape.code("a`b``c") == "```a`b``c```" and escape.code("`x") == "`` `x ``" and escape.code("ab") == "`ab`"
    for name in ("a`b``c", "`x", " y ", "<b>"):
        shown = escape.html(name).replace('&#x27;', chr(39)).replace('&quot;', chr(34))
        assert markdown2html_mistune(escape.code(name)).strip() == f"<p><code>{shown}</code></p>"
    assert markdown2html_mistune(escape.markdown("**x** <b>|")).strip() == "<p>**x** &lt;b&gt;|</p>"
    inline = escape.markdown_inline("**x** <b>| [l](u) -0.2 a_b")
    assert inline == r"\*\*x\*\* &lt;b>\| \[l\](u) -0.2 a\_b"  # readable: '-', '.', '(' stay as they are
    assert markdown2html_mistune(inline).strip() == "<p>**x** &lt;b&gt;| [l](u) -0.2 a_b</p>"
    assert markdown2html_mistune(escape.markdown_inline("# h", line_start=True)).strip() == "<p># h</p>"


def test_figure_text_under_usetex_escapes_every_tex_special():
    with matplotlib.rc_context({"text.usetex": True}):
        assert escape.figure("a_b$c%d\\e") == r"a\_b\$c\%d\textbackslash{}e"


def test_terminal_streams_escape_what_a_command_prints(capsys):
    with escape.terminal_streams():
        print("name\x1b[2J\u202e")
        print("\rprogress", end="", file=__import__("sys").stderr)
    out, err = capsys.readouterr()
    assert out == "name\\x1b[2J\\u202e\n" and err == "\rprogress"


# ---- hostile results directories: every output ------------------------------------------------------------

def hostile_results(path: Path, h: str) -> Path:
    """A results directory whose every name, id, description and message is ``h`` (plus a suffix where
    names must differ): the manifest and per_query.parquet as a committed baseline could hold them."""
    arms = [f"{h}a", f"{h}b"]
    write_results(path, {arms[0]: {"nDCG@10": [0.2, 0.4, 0.9, 0.0]}, arms[1]: {"nDCG@10": [0.5, 0.1, 0.9, 0.0]}},
                  ["needle", "trap", "needle", "abstain"], ids=[f"{h}{i}" for i in range(4)],
                  outcomes={arms[1]: [None, "error", None, None]})
    pq = pd.read_parquet(path / "per_query.parquet")
    pq["error"] = [h if o == "error" else "" for o in pq["outcome"]]
    pq.to_parquet(path / "per_query.parquet", index=False)
    m = json.loads((path / "manifest.json").read_text())
    m["corpus"]["name"], m["qrels"]["name"], m["qrels"]["path"] = h, h, h
    m["qrels"]["gains"] = {"3": h, "0": h}
    m["started"] = m["finished"] = h
    m["arms"][0]["describe"] = {"server": {"name": h, "version": h}, "definition_sha256": h}
    m["arms"][0]["params"] = {h: h}
    (path / "manifest.json").write_text(json.dumps(m))
    return path


@pytest.mark.slow
@given(h=hostile)
@SLOW
def test_hostile_results_are_inert_in_every_report_output(tmp_path_factory, h):
    d = hostile_results(tmp_path_factory.mktemp("hostile") / "r", h)
    res = Results.load(d)
    pair = selection.resolve_pair(res)
    styled = [tables.headline(res), tables.styled(tables.tie_table(res).style),
              tables.styled(completeness.judged_table(res).style), tables.biggest_changes_styled(res, pair)]
    frames = [tables.class_ci_table(res), tables.biggest_changes(res, pair), tables.refusal_counts(res),
              report_servers.servers(res), report_servers.errors(res), *tables.provenance(res).values()]
    for page in [s.to_html() for s in styled] + [f.to_html() for f in frames] + [res._repr_html_()]:
        assert_inert_html(page)
    for md in (prose.overview(res), prose.legend(res), completeness.judged_warning(res)):
        assert_inert_markdown(md)
    for fig in (figures.fig_class_bars(res), figures.fig_deltas(res, pair), figures.fig_latency(res),
                figures.fig_refusals(res), figures.fig_ties(res)):
        assert_no_math(fig)


@pytest.mark.slow
@given(h=hostile)
@SLOW
def test_hostile_verdicts_and_tables_are_inert_in_every_rendering(tmp_path_factory, capsys, h):
    tmp = tmp_path_factory.mktemp("verdict")
    d = hostile_results(tmp / "r", h)
    rules = tmp / "gate.toml"
    rules.write_text(tomli_w.dumps({"rule": [{"type": "non-inferiority", "measure": "nDCG@10", "name": h},
                                             {"type": "floor", "measure": "nDCG@10", "min": 0.9, "name": h + "f"}]}))
    out = {k: tmp / f"v.{k}" for k in ("json", "junit", "markdown")}
    argv = ["gate", "--baseline", f"{d}:{h}a", "--candidate", f"{d}:{h}b", "--rules", str(rules)]
    capsys.readouterr()
    code = main(argv + [x for k, p in out.items() for x in (f"--{k}", str(p))])
    printed = capsys.readouterr()
    assert_inert_terminal(printed.out + printed.err)
    if code == 2:  # the arm name cannot be told from the directory (a ':' in it): one line, named
        assert printed.err.count("\n") == 1 and printed.err.startswith("evalkit: "), printed.err
        return
    assert code in (0, 1), printed.err
    verdict = gating.Verdict.from_dict(json.loads(out["json"].read_text()))
    assert [o.rule for o in verdict.outcomes] == [h, h + "f"]  # the names survive, unchanged, in JSON
    cases = ET.parse(out["junit"]).getroot().iter("testcase")
    assert [c.get("name") for c in cases] == [escape.xml(h), escape.xml(h + "f")]
    assert_inert_markdown(out["markdown"].read_text())
    assert_inert_html(verdict._repr_html_())
    assert isinstance(gating.show(d), gating.Verdict)  # gate.json is the candidate's, and still holds
    for argv in (["summary", str(d)], ["compare", str(d), "--baseline", f"{h}a", "--resamples", "20"]):
        assert main(argv) in (0, 2)
        printed = capsys.readouterr()
        assert_inert_terminal(printed.out + printed.err)


@pytest.mark.slow
@given(h=hostile)
@FAST
def test_hostile_results_are_inert_in_the_docs_figures(tmp_path_factory, h):
    """Every line a docs figure writes from a results directory (its title, when and on what it was measured,
    a gate verdict read back) passes through one escape, whatever the manifest or gate.json holds."""
    d = hostile_results(tmp_path_factory.mktemp("figure") / "r", h)
    m = json.loads((d / "manifest.json").read_text())
    # strings where the manifest holds strings (a field of another type is refused when read: test_resultsdir)
    m["environment"]["calibration"] = {"cpu_model": h, "cores": 2, "start": {"load_average": [0.5, 1.0, 2.0]},
                                       "end": {"load_average": [0.5, 1.0, 2.0]}}
    (d / "manifest.json").write_text(json.dumps(m))
    verdict = gating.Verdict(baseline=h, candidate=h, rules_file=h, rules_sha256=h, settings={}, corpus=h,
                             query_set=h, queries=h, outcomes=(gating.Outcome(h, h, h, h),), detectable=(h,))  # type: ignore[arg-type]
    for text in (docfigures.recorded_line(*docfigures.run_record(d)), docfigures.summary_table(d),
                 docfigures.verdict_table(verdict), verdict.markdown(),
                 docfigures.machine_line({"cpu": h, "cores": h, "load": [h], "time": h}, {"load": h, "time": h})):
        assert_inert_markdown(text)


def test_markdown_fill_escapes_a_value_that_opens_a_line():
    """A corpus named ``# `` at the start of a figure's title made it a heading (found by Hypothesis in CI)."""
    line = escape.markdown_fill("{a} × {b} ({n} queries)", line_start=True, a="# ", b="- x", n=4)
    assert line.startswith("\\#") and "- x" in line
    assert_inert_markdown(line)
    assert escape.markdown_fill("{v:.2f}", line_start=True, v=0.5) == "0.50"  # a number is no list marker
    assert escape.markdown_fill("{v}", line_start=True, v="1. x") == "1\\. x"
    assert_inert_markdown(escape.markdown_fill("{v}", line_start=True, v="1. x"))
    # leading spaces: four made an indented code block of a corpus named "  \n\n<script>…" (Hypothesis, idle
    # run); up to three still open a heading
    for value in ("  \n\n<script>PWN()</script>\n\n", "    x", "   # x", "  1. x"):
        line = escape.markdown_fill("{a} × {b}", line_start=True, a=value, b=value)
        assert not line.startswith(" "), line
        assert_inert_markdown(line)


def test_markdown_fill_makes_every_field_inert_and_keeps_the_template():
    line = escape.markdown_fill("**{a}** at {b:.2f}, {c:.2f} in {d!c}", a="<img src=x onerror=PWN()>", b=1.234,
                                c="<b>", d="x`y")
    assert line == "**&lt;img src=x onerror=PWN()>** at 1.23, &lt;b> in ``x`y``"


# ---- hostile names in files that name other files -------------------------------------------------------

def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


@given(name=hostile, doc=hostile)
@FAST
def test_hostile_lock_names_never_reach_outside_the_data_folder(isolated, name, doc):
    src = isolated / "src.pdf"
    if not src.exists():
        make_pdf(src, ["a page"])
    data = isolated / "data"
    lock = isolated / "corpora.lock"
    lock.write_text(tomli_w.dumps({"corpus": {name: {"document": [
        {"name": doc, "sha256": corpora.sha256_file(src), "pages": 1, "source": f"file:{src}"}]}}}))
    before = set(isolated.rglob("*"))
    try:
        c = corpora.load(name)
        corpora.fetch(c)
    except corpora.CorpusError as e:
        assert "\n" not in escape.terminal(e)
    else:
        assert _inside(c.root, data / "corpora") and all(_inside(c.path(d), c.root) for d in c.documents)
    assert all(_inside(p, data) for p in set(isolated.rglob("*")) - before)  # nothing written elsewhere
    shutil.rmtree(data, ignore_errors=True)


@given(name=hostile, rel=hostile)
@FAST
def test_hostile_mcp_definitions_are_refused_or_stay_in_their_folder(tmp_path_factory, name, rel):
    config = tmp_path_factory.mktemp("mcp") / "arms.toml"
    config.write_text(tomli_w.dumps({"arm": {name: {"command": "server", "search": {"tool": "search"},
                                                     "files": {rel: "x"}}}}))
    try:
        d = load_definition(config, name)
    except ArmError as e:
        assert "\n" not in escape.terminal(e)
        return
    tmp = Path("/nonexistent/evalkit-mcp")
    assert "/" not in d.name and d.name not in (".", "..")
    assert all(not Path(r).is_absolute() and _inside(tmp / r, tmp) for r in d.files)


@given(h=hostile)
@FAST
def test_hostile_query_sets_load_unchanged_or_are_refused_in_one_line(tmp_path_factory, capsys, h):
    folder = tmp_path_factory.mktemp("qrels")
    path = folder / "set.toml"
    path.write_text(tomli_w.dumps({"set": {"name": h, "corpus": h, "gains": {"3": h}},
                                   "query": [{"id": h, "class": "needle", "text": h, "notes": h,
                                              "judgments": [{"doc": h, "page": 1, "gain": 3, "evidence": h}]}]}))
    try:
        qs = qrels.load(path)
    except qrels.QrelsError as e:
        assert re.search(r"\[set\] (name|corpus)|judgments\[1\]\.doc", str(e)) and "\n" not in escape.terminal(e)
        return
    q = qs.queries[0]
    fields = (qs.name, qs.corpus, q.id, q.text, q.notes, q.judgments[0].doc, q.judgments[0].evidence, qs.gains[3])
    assert fields == (h,) * 8
    capsys.readouterr()
    assert main(["qrels", "export", str(path)]) == 0  # TREC files: one record per line, four fields, in the folder
    assert_inert_terminal("".join(capsys.readouterr()))
    assert sorted(p.name for p in folder.iterdir()) == ["set.doc.qrels", "set.page.qrels", "set.toml", "set.topics.tsv"]
    for level in ("page", "doc"):
        lines = (folder / f"set.{level}.qrels").read_text().splitlines()
        assert len(lines) == 1 and len(lines[0].split()) == 4, lines

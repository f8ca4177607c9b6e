"""The docs figures: a figure file names its command, then where and when its numbers were measured, then a
table whose numbers are evalkit's own; a figure without its results names the command to run first."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from evalkit import comparison, docfigures as df
from evalkit.results import Results
from tests.conftest import benchmark, write_results

CLASSES = ["needle"] * 6 + ["trap"] * 6 + ["abstain"] * 2
SCORES = {"keyword": {"nDCG@10": [0.1, 0.4, 0.3, 0.9, 0.5, 0.2, 0.0, 0.6, 0.7, 0.2, 0.1, 0.3, 0, 0]},
          "global-index": {"nDCG@10": [0.5, 0.4, 0.8, 0.9, 0.6, 0.7, 0.3, 0.6, 0.9, 0.4, 0.5, 0.3, 0, 0]}}


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    write_results(root / "latex", SCORES, CLASSES)
    return root


def numbers(text: str) -> list[str]:
    return re.findall(r"\d+\.\d{3}", text)


def test_a_computed_figure_names_its_command_machine_load_and_evalkits_numbers(results):
    fig = df.Figure("summary-latex", ("evalkit summary {results}/latex",),
                    lambda r, o: df.summary_table(r / "latex"), "compute")
    text = benchmark("docs_figures").produce(fig, results, results)
    first, gap, second, blank, *rest = text.splitlines()
    assert first == "Command: `evalkit summary results/latex`; written by `make docs-figures`."
    assert re.fullmatch(r"Machine: .+, \d+ cores; load average \(1 / 5 / 15 min\) [\d.]+ / [\d.]+ / [\d.]+ at the "
                        r"start, "
                        r"[\d.]+ / [\d.]+ / [\d.]+ at the end; \d{4}-\d\d-\d\d \d\d:\d\d to \d\d:\d\d UTC\.", second)
    assert gap == blank == ""
    table = Results.load(results / "latex").table()
    rows = [line for line in rest if line.startswith("| keyword") or line.startswith("| global-index")]
    assert [numbers(r)[:4] for r in rows] == [[f"{v:.3f}" for v in table.loc[arm].iloc[:4]] for arm in table.index]


def test_a_read_figure_says_when_and_on_what_the_results_were_measured(results):
    m = json.loads((results / "latex" / "manifest.json").read_text())
    m["finished"] = "2026-11-30T09:15:02+00:00"
    m["environment"]["calibration"] = {"cpu_model": "Some CPU", "cores": 2,
                                       "start": {"load_average": [1.0, 2.0, 3.0]},
                                       "end": {"load_average": [4.0, 5.0, 6.0]}}
    (results / "latex" / "manifest.json").write_text(json.dumps(m))
    fig = df.Figure("summary-latex", ("evalkit summary {results}/latex",), lambda r, o: df.summary_table(r / "latex"),
                    first="make report", record="latex")
    second = benchmark("docs_figures").produce(fig, results, results).splitlines()[2]
    assert second == ("Measured 2026-11-30 09:15 UTC on Some CPU, 2 cores (Linux) (the results' environment record); "
                      "load average (1 / 5 / 15 min) 1.00 / 2.00 / 3.00 at the start, 4.00 / 5.00 / 6.00 at the end.")


def test_every_figure_without_its_results_names_the_command_to_run_first(tmp_path):
    s = benchmark("docs_figures")
    assert [f.name for f in s.figures()] == [
        "summary-latex", "summary-rmanuals", "your-retriever", "compare", "gate", "judging-less-latex",
        "judging-less-rmanuals", "bench", "gate-memory", "cost-curve", "long-pages", "robustness", "refusal",
        "conformal",
        "refusal-ceiling", "admit-judge", "tune", "tune-recommended",
        "mcp-keyword", "mcp-hybrid", "doc-ranking", "judge", "judge-crossencoder", "judge-crossencoder-tuned"]
    for fig in s.figures():
        if fig.mode == "run":  # their commands would run here; their tables read what the commands write
            with pytest.raises(df.FigureMissing):
                fig.table(tmp_path, tmp_path)
            continue
        lines = s.produce(fig, tmp_path, tmp_path).splitlines()
        assert lines[0].startswith("Command: `") and len(lines) == 3 and lines[1] == "", fig.name
        assert re.fullmatch(r"Not measured yet: run (`[^`]+`|the commands on the line above)"
                            r"( \(.+\))?; then `make docs-figures`\.", lines[2]), lines[2]
    summary = next(f for f in s.figures() if f.name == "summary-latex")
    assert s.produce(summary, tmp_path, tmp_path).splitlines()[2] == \
        "Not measured yet: run `make report`; then `make docs-figures`."


def test_compare_figure_holds_the_paired_statistics_evalkit_computes(results):
    latex = results / "latex"
    text = df.compare_table(f"{latex}:keyword", f"{latex}:global-index", ("nDCG@10",))
    pair = comparison.pair(comparison.side(f"{latex}:keyword"), comparison.side(f"{latex}:global-index"))
    expected = comparison.formatted(comparison.with_holm(comparison.table(pair, ("nDCG@10",))))
    for row in expected.itertuples(index=False):
        line = f"| {row.measure} | {row[1]} | {row.n} | {row.base} | {row.cand} | {row[5]} | \\{row[6][:-1]}\\] |"
        assert line in text
    assert str(latex) not in text  # the command line names the sides; no machine's paths in the docs


def test_cells_from_data_cannot_split_a_row_or_become_markup():
    t = df.markdown_table(pd.DataFrame({"arm": ["a|b <script>*x*"], "v": [0.12345]}), index=False)
    assert t.splitlines()[2] == r"| a\|b &lt;script>\*x\* | 0.123 |"


def test_robustness_table_reads_what_evalkit_robustness_writes(tmp_path):
    record = {"arm": "keyword", "permutations": 5, "seed": 0, "queries": 153,
              "measures": {"nDCG@10": {"original": 0.16391, "max_abs_shift": 0.0},
                           "RR": {"original": 0.36191, "max_abs_shift": 0.00042}},
              "rankings_changed": {"top": 10, "queries": 0}}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "robustness.json").write_text(json.dumps(record))
    t = df.robustness_table([tmp_path / "r"])
    assert "| keyword | 0.1639 | 0.3619 | 0.0004 | 0 of 153 queries | 5 (0) |" in t


def test_bench_and_cost_curve_tables_read_what_evalkit_bench_writes(tmp_path):
    from evalkit import bench

    figures = [bench.Figure("latency", f"keyword, k=10, {stat}", value, "ms", 3, "148 queries", ref, 2.0)
               for stat, value, ref in (("median", 0.42, "wall"), ("p95", 0.56, "wall"), ("CPU median", 0.4, "cpu"))]
    figures.append(bench.Figure("memory", "peak resident memory", 1058.0, "MiB"))
    scale = pd.DataFrame([{"documents": n, "pages": 20 * n, "arm": "keyword", "median_ms": 0.1 * n ** 0.5,
                           "p95_ms": 1.0, "doc_index_s": 0.1, "doc_index_bytes": 10, "global_index_s": 0.01 * n,
                           "global_index_bytes": 2**20 * n} for n in (25, 100)])
    bench.write(tmp_path, figures, {})
    scale.to_csv(tmp_path / "scale.csv", index=False)  # as bench.write does, without drawing scale.png
    bench.exponents(scale).to_csv(tmp_path / "scale_fit.csv", index=False)
    b = df.bench_table(tmp_path)
    assert "Latency (148 queries):" in b
    assert "| keyword | 10 | 0.42 | 0.56 | 0.4 | 0.2 |" in b
    assert "| memory | peak resident memory | 1058 | MiB |  |  |  |" in b
    c = df.cost_curve_table(tmp_path, "evalkit bench --scale 25,100")
    assert "| 100 | 2000 | 1.00 | 1.00 | 100.00 |" in c
    assert f"| keyword | {bench.exponents(scale).set_index('arm').loc['keyword', 'exponent']:.2f} | 2.00 |" in c


def test_simulation_tables_read_what_evalkit_qrels_simulate_writes(tmp_path):
    pd.DataFrame([{"strategy": "maxmean", "pages to target (tau alone)": 312.0, "pages to target (vs full)": None,
                   "pages to target (vs pool)": 1454.0, "share of depth-10 pool (vs pool)": 0.9185,
                   "pages at knee": 1191.0, "tau_page at knee": 0.905, "tau_doc at knee": 0.905,
                   "gate_vs_full at knee": 5.0, "gate_vs_pool at knee": 2.0},
                  {"strategy": "depth", "pages to target (tau alone)": 612.0}]).to_csv(tmp_path / "summary.csv",
                                                                                       index=False)
    pd.DataFrame([{"arm": "keyword", "pages": 1549, "nDCG@10 bias": 0.0}]).to_csv(tmp_path / "loo.csv", index=False)
    t = df.simulation_tables(tmp_path)
    assert "| maxmean | 312 | not reached | 1,454 | 92% | 1,191 | 0.905 | 0.905 | 5 | 2 |" in t
    assert "| depth | 612 | not reached | not reached | not reached | never | – | – | – | – |" in t
    assert "| keyword | 1549 | 0.000 |" in t


def test_splice_fills_the_readme_between_its_markers_only():
    readme = "intro\n<!-- BEGIN docs/figures/s.md -->\nold\n<!-- END docs/figures/s.md -->\nrest\n"
    assert df.splice(readme, "docs/figures/s.md", "new\ntable\n") == \
        "intro\n<!-- BEGIN docs/figures/s.md -->\nnew\ntable\n<!-- END docs/figures/s.md -->\nrest\n"
    assert df.splice("no markers\n", "docs/figures/s.md", "new") == "no markers\n"

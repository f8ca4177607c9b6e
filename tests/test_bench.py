import dataclasses
import math

import pandas as pd
import pytest

from evalkit import bench, benchdir
from evalkit.cli import main
from evalkit.records import Document

from .conftest import ROOT, make_pdf


def _corpus(n: int, tmp_path):
    from evalkit.corpora import Corpus

    docs = tuple(Document(f"d{i:03d}.pdf", f"{(i * 7919) % 1000:064x}", pages=2) for i in range(n))
    return Corpus("c", tmp_path, docs)


def test_growth_exponent_recovers_a_power_law():
    x = [25, 50, 100, 200, 400]
    assert bench.growth_exponent(x, [3 * v ** 1.5 for v in x]) == pytest.approx(1.5)
    assert bench.growth_exponent(x, [7.0] * 5) == pytest.approx(0.0, abs=1e-12)


def test_extraction_cpu_counts_the_workers_once_extract_all_is_done(tmp_path):
    import resource

    from evalkit.extraction import extract_all

    pdfs = [make_pdf(tmp_path / f"{i}.pdf", ["walrus " * 800] * 40) for i in range(2)]
    before, c0 = resource.getrusage(resource.RUSAGE_CHILDREN), bench.cpu_seconds()
    assert len(list(extract_all(pdfs, workers=2))) == 2
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert workers > 0 and bench.cpu_seconds() - c0 >= workers  # joined, so their time is in the figure


def test_subsets_are_nested_seeded_and_blind_to_file_names(tmp_path):
    c = _corpus(40, tmp_path)
    subs = bench.nested_subsets(c, [30, 10, 20], seed=3)
    shas = [{d.sha256 for d in s.documents} for s in subs]
    assert [len(s) for s in shas] == [10, 20, 30] and shas[0] < shas[1] < shas[2]
    assert [s.name for s in subs] == ["c[10]", "c[20]", "c[30]"]
    assert shas == [{d.sha256 for d in s.documents} for s in bench.nested_subsets(c, [10, 20, 30], seed=3)]
    assert shas[2] != {d.sha256 for d in bench.nested_subsets(c, [30], seed=4)[0].documents}
    renamed = dataclasses.replace(c, documents=tuple(dataclasses.replace(d, name=f"z{d.name}") for d in c.documents))
    assert shas == [{d.sha256 for d in s.documents} for s in bench.nested_subsets(renamed, [10, 20, 30], seed=3)]
    with pytest.raises(ValueError, match="has 40 documents, fewer than 41"):
        bench.nested_subsets(c, [41])


def test_exponents_report_the_ratio_to_a_quarter_of_the_largest_subset():
    frame = pd.DataFrame([{"documents": n, "pages": n, "arm": arm, "median_ms": ms, "p95_ms": ms,
                           "doc_index_s": n / 100, "doc_index_bytes": 1000 * n, "global_index_s": n / 200,
                           "global_index_bytes": 500 * n}
                          for arm, f in (("a", lambda n: n / 10), ("b", lambda n: 2.0)) for n in (25, 50, 100)
                          for ms in [f(n)]])
    fit = bench.exponents(frame).set_index("arm")
    assert fit.loc["a", "exponent"] == pytest.approx(1.0) and fit.loc["a", "ratio_to_quarter"] == pytest.approx(4.0)
    assert fit.loc["b", "exponent"] == pytest.approx(0.0, abs=1e-12) and fit.loc["b", "ratio_to_quarter"] == 1.0
    assert fit.loc["[doc_index_bytes]", "exponent"] == pytest.approx(1.0)


def test_random_runs_agree_with_pytrec_eval():
    m = bench.measures_vs_pytrec(200, repeats=1)
    assert m["max_diff"] < 1e-12 and m["evalkit_s"] > 0 and m["pytrec_eval_s"] > 0


@pytest.mark.slow
def test_measure_scale_and_the_bench_directory_on_real_pdfs(small, tmp_path):
    from evalkit.arms.semantic import SemanticArm

    c, store = small
    queries = ["how do I put a caption above a table", "double spacing", "rules in tables"]
    spec = SemanticArm(c, store, progress=False).spec  # vectors of the small corpus are cached
    figures = bench.measure(store, c, queries, ["keyword", "global-index"], runs=1, rounds=1, embed_docs=1,
                            measure_queries=50, spec=spec, log=lambda _: None)
    by = {f.what: f for f in figures}
    assert by[f"cold extraction, {c.name} ({c.pages} pages)"].value > 0
    assert by["cold extraction CPU, this process and its workers"].value > 0
    assert by["evalkit / fastembed throughput"].value > 0
    assert {"keyword, k=10, median", "keyword, k=100, p95", "global-index, k=10, median"} <= set(by)
    # each time is set against the calibration reading taken around its own section
    assert by["keyword, k=10, median"].reference == by["keyword, k=10, p95"].reference == "wall"
    assert by["keyword, k=10, CPU median"].reference == "cpu" and 0 < by["keyword, k=10, CPU median"].value
    assert all(f.reference_ms > 0 for f in figures
               if f.reference) and math.isnan(by["evalkit / fastembed throughput"].reference_ms)
    frame = bench.scale(store, c, [3, 6], queries, ["keyword", "global-index", "semantic"], spec=spec,
                        log=lambda _: None)
    assert sorted(frame["documents"].unique()) == [3, 6]
    assert (frame["median_ms"] > 0).all() and (frame["doc_index_bytes"] > 0).all()
    assert frame["arm"].str.startswith("semantic").any()
    bench.write(tmp_path / "b", figures, {"python": "x"}, frame)
    loaded = bench.load(tmp_path / "b")
    assert len(loaded["figures"]) == len(figures) and len(loaded["scale"]) == len(frame)
    assert (tmp_path / "b" / "scale.png").stat().st_size > 0
    assert not math.isnan(loaded["fit"].set_index("arm").loc["keyword", "exponent"])
    assert main(["report", str(tmp_path / "b")]) == 0  # the bench notebook plots the directory
    html = (tmp_path / "b" / "bench.html").read_text()
    assert "Cost curve" in html and "data:image/png;base64" in html and "Traceback" not in html


@pytest.mark.slow
def test_evalkit_bench_writes_the_csv_and_prints_the_table(small, tmp_path, capsys):
    c, _ = small
    qfile = tmp_path / "q.toml"
    qfile.write_text('[[query]]\nid = "q"\nclass = "abstain"\ntext = "double spacing in a thesis"\njudgments = []\n')
    code = main(["bench", "--docs", str(c.root), "--qrels", str(qfile), "--out", str(tmp_path / "out"),
                 "--arms", "global-index", "--runs", "1", "--rounds", "1", "--embed-docs", "0",
                 "--measure-queries", "100"])
    out = capsys.readouterr().out
    assert code == 0 and "global-index, k=10, median" in out and "evalkit / pytrec_eval time" in out
    assert set(pd.read_csv(tmp_path / "out" / "bench.csv")["section"]) == {"extraction", "latency", "measures",
                                                                           "memory"}


def _bench_dir(path, reference_ms: float | None, slower: float):
    """A bench directory whose every time is ``slower`` times the first's, under a reference workload of
    ``reference_ms`` (None: a directory from before calibration)."""
    figures = [bench.Figure("latency", "keyword, k=10, median", 0.5 * slower, "ms"),
               bench.Figure("extraction", "cold extraction", 1000 / slower, "pages/s"),
               bench.Figure("measures", "evalkit / pytrec_eval time", 0.4, "ratio")]
    env = {"python": "3.11.7"} if reference_ms is None else {"calibration": {"reference_ms": reference_ms}}
    bench.write(path, figures, env)
    return path


def test_times_are_stated_relative_to_the_reference_workload():
    assert benchdir.per_reference(5.0, "ms", 250.0) == pytest.approx(0.02)
    assert benchdir.per_reference(1000.0, "pages/s", 250.0) == pytest.approx(250.0)  # pages in one reference
    assert math.isnan(benchdir.per_reference(0.4, "ratio", 250.0))
    assert math.isnan(benchdir.per_reference(9, "MiB", 250.0))


def test_compare_puts_two_benches_side_by_side_and_the_calibrated_ratios_agree(tmp_path, capsys):
    quiet = _bench_dir(tmp_path / "quiet", 200.0, 1.0)
    loaded = _bench_dir(tmp_path / "loaded", 500.0, 2.5)  # everything, the yardstick too, 2.5 times slower
    frame = bench.compare(quiet, loaded).set_index("what")
    assert frame.loc["keyword, k=10, median", "time_ratio"] == pytest.approx(2.5)
    assert frame.loc["cold extraction", "time_ratio"] == pytest.approx(2.5)  # a rate: 2.5 times fewer pages/s
    assert frame.loc["keyword, k=10, median", "calibrated_time_ratio"] == pytest.approx(1.0)
    assert frame.loc["cold extraction", "calibrated_time_ratio"] == pytest.approx(1.0)
    assert math.isnan(frame.loc["evalkit / pytrec_eval time", "calibrated_time_ratio"])
    assert main(["bench", "--compare", str(quiet), str(loaded)]) == 0
    out = capsys.readouterr().out
    assert "wall timings (2), time 2/1: absolute median 2.500 [2.500, 2.500], 0 within 15%" in out
    assert "calibrated median 1.000 [1.000, 1.000], 2 within 15%" in out


def test_a_bench_directory_from_before_calibration_still_loads(tmp_path):
    old = _bench_dir(tmp_path / "old", None, 1.0)
    figures = bench.load(old)["figures"]
    assert figures["calibrated"].isna().all() and list(figures["value"]) == [0.5, 1000.0, 0.4]
    assert bench.compare(old, old)["calibrated_time_ratio"].isna().all()


def test_a_folder_that_is_not_a_bench_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a bench directory"):
        bench.load(tmp_path)


def test_bench_without_a_query_file_is_a_usage_error(tmp_path, capsys):
    assert main(["bench", "--docs", str(tmp_path)]) == 2
    assert "--docs needs --qrels" in capsys.readouterr().err


def test_makefile_bench_calls_evalkit_bench():
    assert "evalkit bench" in (ROOT / "Makefile").read_text()

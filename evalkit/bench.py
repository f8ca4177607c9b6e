"""Speed and scale, measured: ``evalkit bench`` and the figures of a bench directory.

    <out>/bench.csv         one row per figure: what, value, unit, runs, note (medians of repeated runs)
    <out>/environment.json  interpreter, SQLite, package versions, machine, load average before and after, and
                            the calibration: a reference workload timed at the start and the end
    <out>/scale.csv         with --scale: per subset size and arm, latency (median / p95), build time, index size
    <out>/scale.png         the cost curve, log-log, with each arm's fitted growth exponent

Timings depend on the machine and on what else runs on it, so every file records the environment and the
load average, and every time is also stated relative to the calibration workload timed in the same process
(``calibrated`` in bench.csv): those ratios compare across machines and moments, absolute times do not
(``evalkit bench --compare DIR1 DIR2`` puts two directories side by side). Scale subsets are nested and
seeded: the first n documents of one seeded permutation (of the documents in sha256 order, so file names
play no part), so a larger subset always holds the smaller ones.
"""
from __future__ import annotations

import json
import math
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from . import arms, calibration, dirs, measures
from .arms import lexical
from .benchdir import RATE_UNITS, TIME_UNITS, load, with_ratios
from .corpora import Corpus
from .display import Markdown
from .embeddings import VECTOR_SCHEMA, Embedder, ModelSpec, ensure_vectors, windows
from .pages import PageStore
from .defaults import LATENCY_ARMS, SCALE_ARMS
from .environment import completed, environment

VECTOR_ARMS = ("semantic", "hybrid")  # arms that need a corpus's vectors (hybrid through its semantic input)


@dataclass(frozen=True)
class Figure:
    """One measured figure: ``value`` is the median over ``runs`` repetitions. ``reference`` names the reading
    of the calibration workload it compares with -- ``wall`` for wall-clock figures, ``cpu`` for CPU times
    (:func:`evalkit.calibration.reference`) -- and ``reference_ms`` is that reading taken around the
    figure's own section (the mean of before and after)."""

    section: str
    what: str
    value: float
    unit: str
    runs: int = 1
    note: str = ""
    reference: str = ""
    reference_ms: float = math.nan


def peak_memory_mib() -> float:
    """Peak resident memory of this process and of its waited-for children, MiB (Linux reports KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def _copy_rows(store: PageStore, fresh: PageStore, tables: Sequence[str], where: str, params: Sequence) -> None:
    """Copy the rows of ``tables`` matching ``where`` from ``store``'s file into ``fresh``, in one transaction."""
    with fresh.db:
        fresh.db.execute("ATTACH DATABASE ? AS src", (str(store.path),))
        for table in tables:
            fresh.db.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table} WHERE {where}", params)
    fresh.db.execute("DETACH DATABASE src")


def _in_corpus(corpus: Corpus) -> tuple[str, list[str]]:
    """An SQL condition selecting ``corpus``'s documents by sha256, and its parameters."""
    shas = [d.sha256 for d in corpus.documents]
    return f"sha256 IN ({','.join('?' * len(shas))})", shas


def copy_pages(store: PageStore, corpus: Corpus, path: Path) -> PageStore:
    """A fresh page store at ``path`` holding only ``corpus``'s extracted pages (copied, not re-extracted),
    so index builds and sizes are measured on exactly that subset."""
    fresh = PageStore(path)
    where, shas = _in_corpus(corpus)
    _copy_rows(store, fresh, ("documents", "pages"), where, shas)
    return fresh


def copy_vectors(store: PageStore, fresh: PageStore, corpus: Corpus, spec: ModelSpec) -> bool:
    """Copy ``corpus``'s cached vectors for ``spec`` into ``fresh``; False when some document has none
    (the bench then leaves vector arms out rather than embedding for minutes)."""
    where, shas = _in_corpus(corpus)
    store.db.executescript(VECTOR_SCHEMA)
    have = store.db.execute(f"SELECT count(*) FROM vector_docs WHERE key=? AND {where}",
                            (spec.key, *shas)).fetchone()[0]
    if have < len(set(shas)):
        return False
    fresh.db.executescript(VECTOR_SCHEMA)
    _copy_rows(store, fresh, ("vector_docs", "vectors"), f"key=? AND {where}", (spec.key, *shas))
    return True


def db_bytes(store: PageStore) -> int:
    """The cache file's size after a WAL checkpoint (what the indexes add is the difference of two)."""
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store.path.stat().st_size


# ---- the figures ---------------------------------------------------------------------------------------------

def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (extraction workers, once joined)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def extraction(corpus: Corpus, runs: int = 3) -> list[tuple[float, float]]:
    """Cold extraction, one ``(pages/s, CPU ms per page)`` per run: every document into a fresh page store.
    The CPU figure (this process and its workers) depends less on what else runs on a shared machine."""
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp, PageStore(Path(tmp) / "pages.sqlite") as store:
            t0, c0 = time.perf_counter(), cpu_seconds()
            ing = store.ingest(corpus, progress=False)
            out.append((ing.corpus.pages / (time.perf_counter() - t0), 1000 * (cpu_seconds() - c0) / ing.corpus.pages))
    return out


def embedding(store: PageStore, corpus: Corpus, spec: ModelSpec, docs: int, batch_size: int = 16) -> dict[str, float]:
    """Cold embedding of the first ``docs`` documents (sha256 order) two ways on the same windows: evalkit's
    cached path (windows, fastembed, float32 blobs into SQLite) and fastembed alone; windows/s of each and
    their ratio. The model is loaded before either clock starts."""
    chosen = sorted(corpus.documents, key=lambda d: d.sha256)[:docs]
    texts = [w for d in chosen for page in store.texts(d) for w in windows(page, spec.window)]
    embedder = Embedder(spec, batch_size=batch_size)
    embedder.passages(texts[:batch_size])  # warm: onnxruntime's first call allocates its arena
    with tempfile.TemporaryDirectory() as tmp:
        fresh = copy_pages(store, replace(corpus, documents=tuple(chosen)), Path(tmp) / "e.sqlite")
        t0 = time.perf_counter()
        ensure_vectors(fresh, chosen, spec, lambda: embedder, progress=False)
        ours = time.perf_counter() - t0
        fresh.close()
    t0 = time.perf_counter()
    for _ in embedder.model.passage_embed(texts, batch_size=batch_size):
        pass
    raw = time.perf_counter() - t0
    return {"windows": len(texts), "evalkit": len(texts) / ours, "fastembed": len(texts) / raw, "ratio": raw / ours}


@dataclass(frozen=True)
class Timings:
    """Seconds per query, wall clock and this process's CPU time, and the same for the calibration unit
    (:func:`evalkit.calibration.unit`) timed right after each query."""

    wall: np.ndarray
    cpu: np.ndarray
    unit_wall: np.ndarray
    unit_cpu: np.ndarray


def _clocked(fn: Callable[[], object]) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def timed_queries(build: Callable[[], arms.Arm], queries: Sequence[str], k: int, rounds: int = 3,
                  warmup: int = 5) -> Timings:
    """Per search, with a warm index and a query asked for the first time, which is what a user waits for:
    per round a fresh arm (its build not timed; the cache file stays warm), ``warmup`` queries asked
    untimed, then every other query once, timed, each followed by one timed calibration unit. Asking the
    same query again would time the arms' per-query caches instead. CPU time leaves out the moments another
    process had the core; the units see the machine at the moments the queries did."""
    warmup = min(warmup, len(queries) // 2)  # a short list keeps most of its queries timed
    rows = []
    for _ in range(rounds):
        arm = build()
        for i, q in enumerate(queries[:warmup]):
            arm.search(q, k)
            calibration.unit(i)
        for i, q in enumerate(queries[warmup:]):
            rows.append((*_clocked(lambda: arm.search(q, k)), *_clocked(lambda: calibration.unit(i))))  # noqa: B023 (called in this iteration only)
        arm.close()
    return Timings(*(np.asarray(col, float) for col in zip(*rows,
                                                           strict=True))) if rows else Timings(*[np.empty(0)] * 4)


def latency(build: Callable[[], arms.Arm], queries: Sequence[str], k: int, rounds: int = 3,
            warmup: int = 5) -> np.ndarray:
    """Wall-clock seconds per search (:func:`timed_queries`)."""
    return timed_queries(build, queries, k, rounds, warmup).wall


def random_runs(n_queries: int, depth: int = 100, seed: int = 0) -> tuple[list[list[str]], list[dict[str, int]]]:
    """Random graded qrels (1-20 judged pages, gains 0..3, some judged pages never retrieved) and rankings of
    ``depth`` distinct pages from 200 documents x 30 pages, most of them unjudged."""
    rng = np.random.default_rng(seed)
    rankings, qrels = [], []
    for _ in range(n_queries):
        cells = rng.choice(200 * 30, size=depth + 20, replace=False)
        pids = [f"doc{c // 30:03d}.pdf#{c % 30 + 1}" for c in cells]
        judged = rng.choice(len(pids), size=int(rng.integers(1, 21)), replace=False)
        qrels.append({pids[j]: int(g) for j, g in zip(judged, rng.integers(0, 4, size=len(judged)), strict=True)})
        rankings.append(pids[:depth])
    return rankings, qrels


def measures_vs_pytrec(n_queries: int = 10_000, repeats: int = 5, seed: int = 0) -> dict[str, float]:
    """nDCG@10, RR and Recall@10 over ``n_queries`` random runs: seconds for evalkit's per-query functions
    and for pytrec_eval (building its input dicts included: that is what a caller pays), median of
    ``repeats``, and the largest disagreement (must be 0 up to rounding)."""
    import pytrec_eval

    rankings, qrels = random_runs(n_queries, seed=seed)

    def ours():
        return [[measures.ndcg(r, q, 10), measures.rr(r, q), measures.recall(r, q, 10)]
                for r, q in zip(rankings, qrels, strict=True)]

    def theirs():
        qd = {str(i): q for i, q in enumerate(qrels)}
        run = {str(i): {pid: float(len(r) - rank) for rank, pid in enumerate(r)} for i, r in enumerate(rankings)}
        out = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10", "recip_rank", "recall_10"}).evaluate(run)
        return [[out[str(i)][m] for m in ("ndcg_cut_10", "recip_rank", "recall_10")] for i in range(n_queries)]

    t_ours, a = _timed(ours, repeats)
    t_theirs, b = _timed(theirs, repeats)
    return {"evalkit_s": t_ours, "pytrec_eval_s": t_theirs, "ratio": t_ours / t_theirs,
            "max_diff": float(np.max(np.abs(np.asarray(a) - np.asarray(b))))}


def _timed(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


# ---- scale ---------------------------------------------------------------------------------------------------

def nested_subsets(corpus: Corpus, sizes: Sequence[int], seed: int = 0) -> list[Corpus]:
    """The first n documents of one seeded permutation of the corpus (documents in sha256 order), per n."""
    if max(sizes) > len(corpus.documents):
        raise ValueError(f"corpus {corpus.name!r} has {len(corpus.documents)} documents, fewer than {max(sizes)}")
    docs = sorted(corpus.documents, key=lambda d: d.sha256)
    order = np.random.default_rng(seed).permutation(len(docs))
    return [replace(corpus, name=f"{corpus.name}[{n}]",
                    documents=tuple(sorted((docs[i] for i in order[:n]), key=lambda d: d.name)))
            for n in sorted(sizes)]


def scale(store: PageStore, corpus: Corpus, sizes: Sequence[int], queries: Sequence[str],
          specs: Sequence[str] = SCALE_ARMS, k: int = 10, rounds: int = 1, seed: int = 0,
          spec: ModelSpec | None = None, log: Callable[[str], None] = print) -> pd.DataFrame:
    """Per nested subset and arm: index build time and size (in a fresh store holding only the subset's
    pages), and per-query latency (median, p95; :func:`latency`: index warm, query asked for the first time). Vector
    arms run only where the subset's vectors are cached (``evalkit bench --scale … --embed`` embeds them first)."""
    rows = []
    for sub in nested_subsets(corpus, sizes, seed):
        with tempfile.TemporaryDirectory() as tmp:
            fresh = copy_pages(store, sub, Path(tmp) / "scale.sqlite")
            base = db_bytes(fresh)
            t0 = time.perf_counter()
            lexical.ensure_document_indexes(fresh, sub)
            t_doc = time.perf_counter() - t0
            doc_bytes = db_bytes(fresh) - base
            t0 = time.perf_counter()
            lexical.ensure_global_index(fresh, sub)
            t_global = time.perf_counter() - t0
            global_bytes = db_bytes(fresh) - base - doc_bytes
            vectors = spec is not None and copy_vectors(store, fresh, sub, spec)
            for s in specs:
                if arms.parse_spec(s)[0] in VECTOR_ARMS and not vectors:
                    log(f"  {sub.name}: {s} left out (no cached vectors for every document)")
                    continue
                label = arms.make(s, sub, fresh).label
                ms = measures.latency_summary(latency(lambda: arms.make(s, sub, fresh), queries, k, rounds) * 1000)  # noqa: B023 (called in this iteration only)
                rows.append({"documents": len(sub.documents), "pages": sub.pages, "arm": label,
                             "median_ms": ms["median"], "p95_ms": ms["p95"],
                             "doc_index_s": t_doc, "doc_index_bytes": doc_bytes,
                             "global_index_s": t_global, "global_index_bytes": global_bytes})
                log(f"  {sub.name}: {label:<40} {rows[-1]['median_ms']:7.2f} ms median")
            fresh.close()
    return pd.DataFrame(rows)


def growth_exponent(x: Sequence[float], y: Sequence[float]) -> float:
    """b in y ≈ a·x^b, by least squares on log y against log x (1 = linear growth, 0 = flat)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    return float(np.polyfit(lx, ly, 1)[0])


def exponents(frame: pd.DataFrame) -> pd.DataFrame:
    """Per arm: fitted growth exponent of median latency over documents, and the latency ratio between the
    largest subset and the one a quarter its size (the issue's 400-vs-100 target), where both exist."""
    rows = []
    for arm, g in frame.groupby("arm", sort=False):
        g = g.sort_values("documents")
        n = g["documents"].to_numpy()
        row = {"arm": arm, "exponent": growth_exponent(n, g["median_ms"]) if len(g) > 1 else math.nan,
               "largest": int(n[-1]), "median_ms_largest": float(g["median_ms"].iloc[-1])}
        quarter = g[g["documents"] == n[-1] // 4]
        row["ratio_to_quarter"] = (float(g["median_ms"].iloc[-1] / quarter["median_ms"].iloc[0]) if len(quarter)
                                   else math.nan)
        rows.append(row)
    idx = frame.drop_duplicates("documents").sort_values("documents")
    for what in ("doc_index_s", "global_index_s", "doc_index_bytes", "global_index_bytes"):
        if len(idx) > 1:
            rows.append({"arm": f"[{what}]", "exponent": growth_exponent(idx["documents"], idx[what].clip(lower=1e-9)),
                         "largest": int(idx["documents"].iloc[-1]), "median_ms_largest": math.nan,
                         "ratio_to_quarter": math.nan})
    return pd.DataFrame(rows)


def plot_scale(frame: pd.DataFrame):
    """Log-log cost curve against documents: latency per arm, index build time, index size; each line's
    fitted growth exponent in its legend."""
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fits = exponents(frame).set_index("arm")
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.5))
    for arm, g in frame.groupby("arm", sort=False):
        g = g.sort_values("documents")
        axes[0].plot(g["documents"], g["median_ms"], marker="o", label=f"{arm} ({fits.loc[arm, 'exponent']:.2f})")
    idx = frame.drop_duplicates("documents").sort_values("documents")
    for ax, scale_by, cols in ((axes[1], 1, ("doc_index_s", "global_index_s")),
                               (axes[2], 2 ** 20, ("doc_index_bytes", "global_index_bytes"))):
        for col, label in zip(cols, ("per-document FTS5 indexes", "global FTS5 index + postings"), strict=True):
            b = fits.loc[f"[{col}]", "exponent"] if f"[{col}]" in fits.index else math.nan
            ax.plot(idx["documents"], idx[col] / scale_by, marker="o", label=f"{label} ({b:.2f})")
    sizes = sorted(frame["documents"].unique())
    for ax, title, unit in ((axes[0], "Per-query latency (index warm, query new), median, k = 10", "ms"),
                            (axes[1], "Cold index build", "s"), (axes[2], "Index size", "MiB")):
        ax.set(xscale="log", yscale="log", xlabel="documents (nested subsets)", ylabel=unit, title=title)
        ax.set_xticks(sizes, labels=[str(n) for n in sizes])
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, title="growth exponent", title_fontsize=8, loc="upper center",
                  bbox_to_anchor=(0.5, -0.16), frameon=False)
    fig.tight_layout()
    return fig


# ---- a bench directory ---------------------------------------------------------------------------------------

def write(out: Path, figures: Sequence[Figure], env: dict, scale_frame: pd.DataFrame | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with_ratios(pd.DataFrame([asdict(f) for f in figures]), env).to_csv(out / "bench.csv", index=False)
    (out / "environment.json").write_text(json.dumps(env, indent=2) + "\n")
    if scale_frame is not None and len(scale_frame):
        scale_frame.to_csv(out / "scale.csv", index=False)
        exponents(scale_frame).to_csv(out / "scale_fit.csv", index=False)
        fig = plot_scale(scale_frame)
        fig.savefig(out / "scale.png", dpi=150, bbox_inches="tight", facecolor="white")


def _time_ratio(first: pd.Series, second: pd.Series, units: pd.Series) -> pd.Series:
    """How many times longer the second took: second/first for times, first/second for rates, NaN for
    figures that are not times (ratios, sizes)."""
    out = pd.Series(math.nan, index=units.index)
    times, rates = units.isin(TIME_UNITS), units.isin(RATE_UNITS)
    out[times] = second[times] / first[times]
    out[rates] = first[rates] / second[rates]
    return out


def compare(first: Path | str, second: Path | str) -> pd.DataFrame:
    """Two bench directories' figures side by side (those both hold), absolute and calibrated, each with
    how many times longer the second took. Calibrated ratios near 1 mean the code did the same work;
    absolute ratios away from 1 then say only that the machines or their loads differed."""
    a: pd.DataFrame = load(first)["figures"]
    b: pd.DataFrame = load(second)["figures"]
    m = a.merge(b, on=["section", "what", "unit", "reference", "calibrated_unit"], suffixes=("_1", "_2"))
    m["time_ratio"] = _time_ratio(m["value_1"], m["value_2"], m["unit"])
    m["calibrated_time_ratio"] = _time_ratio(m["calibrated_1"], m["calibrated_2"], m["unit"])
    return m[["section", "what", "unit", "reference", "value_1", "value_2", "time_ratio", "calibrated_unit",
              "calibrated_1", "calibrated_2", "calibrated_time_ratio"]]


def agreement(frame: pd.DataFrame, within: float = 0.15) -> pd.DataFrame:
    """Per reference kind (``cpu``, ``wall``) of a :func:`compare` frame: how many timings, the median and
    range of their absolute and calibrated time ratios, and how many of each lie within ``within`` of 1."""
    rows = []
    for kind, g in frame.dropna(subset=["time_ratio", "calibrated_time_ratio"]).groupby("reference", sort=True):
        close = lambda r: int((abs(r - 1) <= within).sum())  # noqa: E731
        rows.append({"reference": kind, "timings": len(g), "absolute_median": g["time_ratio"].median(),
                     "absolute_min": g["time_ratio"].min(), "absolute_max": g["time_ratio"].max(),
                     "absolute_within": close(g["time_ratio"]),
                     "calibrated_median": g["calibrated_time_ratio"].median(),
                     "calibrated_min": g["calibrated_time_ratio"].min(),
                     "calibrated_max": g["calibrated_time_ratio"].max(),
                     "calibrated_within": close(g["calibrated_time_ratio"])})
    return pd.DataFrame(rows)


def compare_text(first: Path | str, second: Path | str) -> str:
    """What ``evalkit bench --compare`` prints: each directory's calibration line, per reference kind how
    much longer the second took (absolute and calibrated), then :func:`compare`."""
    lines = [f"{n} {p}: {calibration.summary(load(p)['environment'])}" for n, p in ((1, first), (2, second))]
    frame = compare(first, second)
    for r in agreement(frame).itertuples():
        lines.append(f"{r.reference} timings ({r.timings}), time 2/1: absolute median {r.absolute_median:.3f} "
                     f"[{r.absolute_min:.3f}, {r.absolute_max:.3f}], {r.absolute_within} within 15%; calibrated median "
                     f"{r.calibrated_median:.3f} [{r.calibrated_min:.3f}, {r.calibrated_max:.3f}], "
                     f"{r.calibrated_within} within 15%")
    return "\n".join([*lines, "", table(frame)])


def table(figures: Sequence[Figure] | pd.DataFrame) -> str:
    """The figures as a plain-text table."""
    f = figures if isinstance(figures, pd.DataFrame) else pd.DataFrame([asdict(x) for x in figures])
    return f.to_string(index=False, float_format=lambda v: f"{v:.4g}")


def begin() -> dict:
    """The environment at the start of a bench, calibration included, taken before any figure is timed."""
    return {**environment(), "load_average_before": calibration.load_average()}


def bench_environment(start: dict) -> dict:
    """The environment of a finished bench: ``start`` (:func:`begin`) with the calibration's end and the
    load, memory and disk figures after it."""
    return {**completed(start), "load_average_after": calibration.load_average(), "peak_memory_mib": peak_memory_mib(),
            "cpu_count": os.cpu_count(), "disk_free_bytes": shutil.disk_usage(Path.cwd()).free}


def _extraction(corpus: Corpus, runs: int) -> list[Figure]:
    rates, cpu = zip(*extraction(corpus, runs), strict=True)
    cores = os.cpu_count() or 1
    return [Figure("extraction", f"cold extraction, {corpus.name} ({corpus.pages} pages)", statistics.median(rates),
                   "pages/s", runs, f"runs: {', '.join(f'{r:.0f}' for r in rates)}", "wall"),
            Figure("extraction", "cold extraction CPU, this process and its workers", statistics.median(cpu), "ms/page",
                   runs, f"{cores} cores busy at this CPU time per page: {1000 * cores / statistics.median(cpu):.0f} "
                   "pages/s (CPU time per page itself grows on a loaded machine)", "cpu")]


def _embedding(store: PageStore, corpus: Corpus, spec: ModelSpec, docs: int) -> list[Figure]:
    e = embedding(store, corpus, spec, docs)
    note = f"{int(e['windows'])} windows of the first {docs} documents (sha256 order)"
    return [Figure("embedding", "cold embedding, evalkit (cached path)", e["evalkit"], "windows/s", 1, note, "wall"),
            Figure("embedding", "cold embedding, fastembed alone, same windows", e["fastembed"], "windows/s", 1, note,
                   "wall"),
            Figure("embedding", "evalkit / fastembed throughput", e["ratio"], "ratio", 1, "1.0 = no overhead")]


def _percentile_ms(seconds: np.ndarray, q: float) -> float:
    return 1000 * float(np.percentile(seconds, q)) if seconds.size else math.nan


def _latency(store: PageStore, corpus: Corpus, spec: str, queries: Sequence[str], rounds: int) -> list[Figure]:
    """Median, p95 and CPU median per k, each with its reference taken from the calibration units timed
    between the queries (the same statistic of the units), not from the readings around the section."""
    label, out = arms.make(spec, corpus, store).label, []
    for k in (10, 100):
        t = timed_queries(lambda: arms.make(spec, corpus, store), queries, k, rounds)
        note = f"{len(t.wall) // rounds} first-time queries x {rounds} rounds, index warm"
        for what, times, units, q in (("median", t.wall, t.unit_wall, 50), ("p95", t.wall, t.unit_wall, 95),
                                      ("CPU median", t.cpu, t.unit_cpu, 50)):
            out.append(Figure("latency", f"{label}, k={k}, {what}", _percentile_ms(times, q), "ms", rounds, note,
                              "cpu" if what.startswith("CPU") else "wall", _percentile_ms(units, q)))
    return out


def _measures(n: int) -> list[Figure]:
    m = measures_vs_pytrec(n)
    note = f"nDCG@10 + RR + Recall@10, max |difference| {m['max_diff']:.3g}"
    return [Figure("measures", f"evalkit, {n} queries", m["evalkit_s"] * 1000, "ms", 5, note, "wall"),
            Figure("measures", f"pytrec_eval, {n} queries (dicts built)", m["pytrec_eval_s"] * 1000, "ms", 5, note,
                   "wall"),
            Figure("measures", "evalkit / pytrec_eval time", m["ratio"], "ratio", 5, "< 1 = evalkit faster")]


JUDGE_GRADES = 500  # issue: training on 500 grades within 5 minutes on 2 cores


def _judge(store: PageStore, corpus: Corpus, qfile: Path, results: Path, rounds: int) -> list[Figure]:
    """The local judge (:mod:`evalkit.autojudge`, boosted + isotonic): fitting on the first
    ``JUDGE_GRADES`` graded pool pages of the query file, and warm judging (a query's features, its query
    embedding included, and the model's chances) per page, the text signals loaded once."""
    from . import qrels
    from .arms import signals
    from .autojudge import features, model, session
    from .results import Results

    sig = signals.CorpusSignals(corpus, store)
    src = session.load(qrels.load(qfile), Results.load(results), sig)
    graded = src.frame[src.frame["gain"].notna()].head(JUDGE_GRADES)
    names = list(src.settings.names)
    spec = model.Spec()
    def fit():
        return model.fit(graded[names].to_numpy(float), graded["gain"].to_numpy(int), graded["query"].tolist(),
                         names, spec, "bench")

    wall, cpu = _clocked(fit)
    judge = fit()
    per_page_wall, per_page_cpu = [], []
    for _ in range(rounds):
        for q in src.qs.queries:
            x: list = []
            w, c = _clocked(lambda: x.append(judge.predict(features.query_features(  # noqa: B023 (called in this iteration only)
                q, src.rankings[q.id], sig, src.settings)[names].to_numpy(float))))  # noqa: B023 (called in this iteration only)
            per_page_wall.append(w / max(len(x[0]), 1))
            per_page_cpu.append(c / max(len(x[0]), 1))
    note = f"{len(graded)} graded pages of {graded['query'].nunique()} queries, {spec.label}"
    pages = f"{len(src.qs.queries)} queries x {rounds} rounds, per page of each query's pool and judged pages"
    return [Figure("judge", f"training on {len(graded)} grades", wall, "s", 1, note, "wall"),
            Figure("judge", f"training on {len(graded)} grades, CPU", cpu, "s", 1, note, "cpu"),
            Figure("judge", "warm judging per page, median", _percentile_ms(np.array(per_page_wall), 50), "ms", rounds,
                   pages, "wall"),
            Figure("judge", "warm judging per page, CPU median", _percentile_ms(np.array(per_page_cpu), 50), "ms",
                   rounds, pages, "cpu")]


READING = {"wall": "reference_ms", "cpu": "cpu_ms"}  # a figure's reference -> the calibration reading


def measure(store: PageStore, corpus: Corpus, queries: Sequence[str], specs: Sequence[str] = LATENCY_ARMS,
            runs: int = 3, rounds: int = 3, embed_docs: int = 5, measure_queries: int = 10_000,
            spec: ModelSpec | None = None, log: Callable[[str], None] = print,
            judge: tuple[Path, Path] | None = None) -> list[Figure]:
    """Every figure of ``evalkit bench`` on one corpus whose pages (and, for the vector arms, vectors) are in
    ``store``, logged section by section. The calibration workload is read before and after every section,
    so each figure is set against the machine as it was while that figure was measured."""
    sections: list[Callable[[], list[Figure]]] = [lambda: _extraction(corpus, runs)]
    if embed_docs and spec is not None:
        sections.append(lambda: _embedding(store, corpus, spec, embed_docs))
    sections += [partial(_latency, store, corpus, s, queries, rounds) for s in specs]
    if measure_queries:
        sections.append(lambda: _measures(measure_queries))
    if judge is not None:  # (query file, results directory run with it)
        sections.append(lambda: _judge(store, corpus, judge[0], judge[1], rounds))
    figures: list[Figure] = []
    before = calibration.reference()
    for section in sections:
        measured = section()
        after = calibration.reference()
        for f in measured:
            if f.reference and math.isnan(f.reference_ms):  # else the section timed its own reference
                f = replace(f, reference_ms=(before[READING[f.reference]] + after[READING[f.reference]]) / 2)
            figures.append(f)
            log(f"  {f.section:<11} {f.what:<58} {f.value:>10.4g} {f.unit}")
        before = after
    figures.append(Figure("memory", "peak resident memory (this process, children)", peak_memory_mib(), "MiB"))
    return figures


NOTEBOOK = dirs.shipped("bench.ipynb")


def environment_summary(env: dict) -> Markdown:
    """One Markdown line on where the figures were measured (the notebook's first output)."""
    m = env.get("machine", {})
    pk = ", ".join(f"{k} {v}" for k, v in env.get("packages", {}).items())
    before, after = env.get("load_average_before", [math.nan]), env.get("load_average_after", [math.nan])
    return Markdown(f"**Machine** {m.get('processor', '?')}, {m.get('cpus', '?')} CPUs, "
                    f"{(m.get('memory_bytes') or 0) / 2 ** 30:.0f} GiB · **Python** {env.get('python', '?')} · "
                    f"**SQLite** {env.get('sqlite', '?')} · **load average** {before[0]:.2f} before, "
                    f"{after[0]:.2f} after · **peak memory** {env.get('peak_memory_mib', math.nan):.0f} MiB · {pk} · "
                    f"**calibration** {calibration.summary(env)}")


def render(path: Path | str, out_html: Path | str | None = None) -> Path:
    """Execute the bench notebook (``evalkit/data/bench.ipynb``) on a bench directory into
    ``<dir>/bench.html`` (and ``.ipynb``)."""
    from .notebooks import execute

    path = Path(path).resolve()
    load(path)  # a clear error for a folder that is not a bench directory
    return execute(NOTEBOOK, path, "bench", f"evalkit bench: {path.name}", out_html=out_html, bench=str(path))

"""Per-query latency of every arm on a warm corpus, cold index build times, and embedding cost.

    python benchmarks/arms.py --corpus latex --qrels qrels/latex.toml [--embed]

Latency: each arm is built (indexes and vectors already cached), every query of the query set is asked
once to warm up, then --rounds more times; median and p95 are over all timed searches (k = 10, query
embedding included for semantic and hybrid). Cold build: the lexical indexes are built into a fresh
cache. --embed also embeds the whole corpus into a fresh cache in a child process and reports its wall
time, pages/s and peak resident memory (the child's ru_maxrss).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalkit import arms, corpus, qrels
from evalkit.arms import lexical
from evalkit.pages import PageStore
from evalkit.run import environment
from evalkit.text import split_top

ARMS = ["keyword", "keyword(idf_scope=corpus)", "global-index", "score-merge", "semantic", "hybrid",
        "hybrid(keyword=global-index)"]

EMBED_CHILD = """
import sys, time
from evalkit import corpus, arms
from evalkit.pages import PageStore
c = corpus.load(sys.argv[1])
with PageStore(sys.argv[2]) as store:
    c = store.ingest(c, progress=False).corpus
    t0 = time.perf_counter()
    arms.registry()["semantic"](c, store, progress=False)
    print(time.perf_counter() - t0, c.pages)
"""


def latency(arm, queries: list[str], rounds: int) -> list[float]:
    for q in queries:
        arm.search(q, 10)
    times = []
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            arm.search(q, 10)
            times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="latex")
    ap.add_argument("--qrels", type=Path, default=Path("qrels/latex.toml"))
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--embed", action="store_true", help="also measure a cold embedding of the whole corpus")
    args = ap.parse_args(argv)
    c = corpus.load(args.corpus)
    corpus.fetch(c)
    queries = [q.text for q in qrels.load(args.qrels).queries]

    with tempfile.TemporaryDirectory() as tmp, PageStore(Path(tmp) / "cold.sqlite") as cold:
        c_cold = cold.ingest(c, progress=False).corpus
        t0 = time.perf_counter()
        lexical.ensure_document_indexes(cold, c_cold)
        t_doc = time.perf_counter() - t0
        t0 = time.perf_counter()
        lexical.ensure_global_index(cold, c_cold)
        t_global = time.perf_counter() - t0
    print(f"cold build, {c.pages} pages: per-document FTS5 indexes {t_doc:.2f} s, global FTS5 index {t_global:.2f} s")

    with PageStore() as store:
        c = store.ingest(c, progress=False).corpus
        print(f"{'arm':<60} {'build s':>8} {'median ms':>10} {'p95 ms':>8}  ({len(queries)} queries x {args.rounds})")
        for spec in split_top(args.arms, ","):
            t0 = time.perf_counter()
            arm = arms.make(spec, c, store)
            build = time.perf_counter() - t0
            t = np.array(latency(arm, queries, args.rounds)) * 1000
            print(f"{arm.label:<60} {build:>8.2f} {statistics.median(t):>10.2f} {np.percentile(t, 95):>8.2f}")

    if args.embed:
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([sys.executable, "-c", EMBED_CHILD, args.corpus, str(Path(tmp) / "e.sqlite")],
                                 capture_output=True, text=True, check=True)
            seconds, pages = out.stdout.split()
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"cold embedding of {pages} pages: {float(seconds):.0f} s ({int(pages) / float(seconds):.1f} pages/s), "
                  f"peak memory {peak:.0f} MiB")
    print(json.dumps(environment()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

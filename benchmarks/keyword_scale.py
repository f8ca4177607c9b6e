"""Per-query latency of the lexical arms on nested subsets of a large corpus, warm and cold.

    python benchmarks/keyword_scale.py --corpus texdocs --sizes 100,400 --k 10

Subsets: the corpus's documents in sha256 order, one ``numpy.random.default_rng(seed)`` permutation, the
first n (the same nested subsets as ``evalkit bench --scale``). Queries: the texts of --qrels. Each arm is
built (the corpus-wide FTS5 index of the subset is built first if missing), every query is asked once,
then --rounds more times: ``warm`` is the median of those (a repeated query finds its per-term FTS5
results in the index's cache, shared with a hybrid over the arm); ``cold`` empties that cache before each
timed search, as a query asked for the first time.
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from evalkit import arms, corpus, qrels
from evalkit.pages import PageStore
from evalkit.text import split_top


def nested_subsets(c: corpus.Corpus, sizes: list[int], seed: int = 0) -> list[corpus.Corpus]:
    docs = sorted(c.documents, key=lambda d: d.sha256)
    order = np.random.default_rng(seed).permutation(len(docs))
    return [replace(c, name=f"{c.name}[{n}]", documents=tuple(sorted((docs[i] for i in order[:n]), key=lambda d: d.name)))
            for n in sorted(sizes)]


def clear_query_caches(arm) -> None:
    index = getattr(arm, "global_index", None)
    for cache in (getattr(index, "matches", None), getattr(index, "_content", None)):
        if hasattr(cache, "cache_clear"):
            cache.cache_clear()


def timings(arm, queries: list[str], k: int, rounds: int, cold: bool) -> np.ndarray:
    for q in queries:
        arm.search(q, k)
    times = []
    for _ in range(rounds):
        for q in queries:
            if cold:
                clear_query_caches(arm)
            t0 = time.perf_counter()
            arm.search(q, k)
            times.append(time.perf_counter() - t0)
    return np.array(times) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="texdocs")
    ap.add_argument("--qrels", type=Path, default=Path("qrels/latex.toml"))
    ap.add_argument("--sizes", default="100,400")
    ap.add_argument("--arms", default="keyword,keyword(idf_scope=corpus),global-index")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    queries = [q.text for q in qrels.load(args.qrels).queries]
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {len(queries)} queries x {args.rounds}, k = {args.k}")
    print(f"{'docs':>5} {'pages':>6}  {'arm':<40} {'warm ms':>8} {'p95':>7} {'cold ms':>8} {'p95':>7}")
    with PageStore() as store:
        c = store.ingest(corpus.load(args.corpus), progress=False).corpus
        for sub in nested_subsets(c, [int(n) for n in args.sizes.split(",")], args.seed):
            for spec in split_top(args.arms, ","):
                arm = arms.make(spec, sub, store)
                warm, cold = (timings(arm, queries, args.k, args.rounds, c) for c in (False, True))
                print(f"{len(sub.documents):>5} {sub.pages:>6}  {arm.label:<40} {np.median(warm):>8.2f} "
                      f"{np.percentile(warm, 95):>7.2f} {np.median(cold):>8.2f} {np.percentile(cold, 95):>7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

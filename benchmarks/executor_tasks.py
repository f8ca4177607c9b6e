"""What a Dask task costs an arm run: one corpus's query set on its lexical arms over a local cluster.

    python benchmarks/executor_tasks.py --corpus latex --per-task 1 8

starts a real two-worker cluster on this machine (as tests/test_executor.py does), then for each number of
queries per task (``evalkit.runner.QUERIES_PER_TASK``) runs keyword, keyword(tiebreak=page), global-index and
score-merge over the corpus's shipped query set on it, and prints the wall time, this process's CPU time (the
client and the scheduler) and the workers' CPU time. The corpus must be fetched (``evalkit corpus fetch``).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = ["keyword", "keyword(tiebreak=page)", "global-index", "score-merge"]


def main() -> None:
    import dask
    import distributed

    from evalkit import corpora, executor, qrels, runner
    from evalkit.bench import cpu_seconds  # this process's CPU time and its reaped children's
    from evalkit.pages import PageStore

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="latex")
    ap.add_argument("--per-task", type=int, nargs="+", default=[1, 8])
    args = ap.parse_args()
    store = PageStore()
    corpus = store.ingest(corpora.load(args.corpus), progress=False).corpus
    qs = qrels.load(ROOT / "qrels" / f"{args.corpus}.toml")
    print(f"{len(qs.queries)} queries x {len(SPECS)} arms on a local cluster of two workers")
    for n in args.per_task:
        runner.QUERIES_PER_TASK = n
        # a fresh cluster each time, so the workers' CPU time is this run's (reaped when it closes)
        with dask.config.set({"distributed.worker.daemon": False}), distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40) as c:
            t0, own0, all0 = time.perf_counter(), time.process_time(), cpu_seconds()
            with executor.use(c.scheduler_address.replace("tcp://", "dask://")), tempfile.TemporaryDirectory() as d:
                runner.run(corpus, store, qs, SPECS, Path(d) / "out", progress=False)
            wall, own = time.perf_counter() - t0, time.process_time() - own0
        print(f"{n} per task: {wall:.1f} s wall, client {own:.1f} CPU-s, "
              f"workers {cpu_seconds() - all0 - own:.1f} CPU-s")


if __name__ == "__main__":
    main()

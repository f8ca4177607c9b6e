"""Cold extraction throughput of a corpus: pages per second into an empty page store.

    python benchmarks/extraction.py --corpus latex --runs 3

Each run extracts every document of the (already fetched) corpus into a fresh temporary SQLite file with
the page store's default parallelism, and reports pages/s; the median of the runs is the figure.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from evalkit import corpus
from evalkit.pages import PageStore
from evalkit.run import environment


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="latex")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    c = corpus.load(args.corpus)
    corpus.fetch(c)
    rates = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp, PageStore(Path(tmp) / "pages.sqlite") as store:
            t0 = time.perf_counter()
            ing = store.ingest(c, progress=False)
            seconds = time.perf_counter() - t0
        pages = sum(d.pages for d in ing.corpus.documents)
        rates.append(pages / seconds)
        print(f"run {i + 1}: {pages} pages in {seconds:.2f} s = {rates[-1]:.0f} pages/s")
    print(f"median: {statistics.median(rates):.0f} pages/s over {args.runs} cold runs of {args.corpus}")
    print(json.dumps(environment()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where cold extraction's time goes: docs/speed.md ("Extraction: where the time goes").

    python benchmarks/extraction_split.py [--corpus latex]

One process reads every page of the corpus the way :func:`evalkit.extraction.extract` does, timing each
stage in CPU time per page; then the costs around it, in wall time: pickling each document's result (what
crosses the pipe from a worker), starting one process per document (fork, send, exit, join: what the
worker processes avoid) and the parent's SQLite writes. `evalkit bench`'s modules are imported first, so
the parent a fork copies is the size of the bench's.
"""
from __future__ import annotations

import argparse
import multiprocessing
import pickle
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pymupdf

from evalkit import bench, cli, corpora, extraction  # noqa: F401 - bench and cli: a parent the size of the bench's
from evalkit.pages import PageStore

STAGES = ("open, load, close", "text page (parse)", "text (extractText)", "span dictionary (extractDICT)",
          "hidden-text check")


def stage_split(paths: list[Path]) -> tuple[dict[str, float], int]:
    """CPU seconds per stage over every page of ``paths``, and the number of pages."""
    spent = dict.fromkeys(STAGES, 0.0)
    pages = 0

    def timed(stage: str, fn: Callable):
        t = time.process_time()
        out = fn()
        spent[stage] += time.process_time() - t
        return out

    for path in paths:
        doc = timed(STAGES[0], lambda: pymupdf.open(path))  # noqa: B023 (called in this iteration only)
        for number in range(doc.page_count):
            page = timed(STAGES[0], lambda: doc.load_page(number))  # noqa: B023 (called in this iteration only)
            tp = timed(STAGES[1], lambda: page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT))  # noqa: B023 (called in this iteration only)
            timed(STAGES[2], tp.extractText)
            blocks = timed(STAGES[3], tp.extractDICT)["blocks"]
            timed(STAGES[4], lambda: extraction.hidden_in(blocks, lambda: extraction.painted(page)))  # noqa: B023 (called in this iteration only)
            pages += 1
        timed(STAGES[0], doc.close)
    return spent, pages


def _send_nothing(conn) -> None:
    conn.send(extraction.Extraction())
    conn.close()


def process_per_document(n: int) -> float:
    """Wall seconds to fork, hear from and join ``n`` processes that do nothing else."""
    ctx = multiprocessing.get_context("fork")
    t = time.perf_counter()
    for _ in range(n):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_send_nothing, args=(send,))
        proc.start()
        send.close()
        recv.recv()
        proc.join()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="latex")
    c = corpora.load(ap.parse_args().corpus)
    paths = [c.path(d) for d in c.documents]
    spent, pages = stage_split(paths)
    total = sum(spent.values())
    print(f"{c.name}: {len(paths)} documents, {pages} pages; {1000 * total / pages:.3f} ms CPU a page in one process")
    for stage, s in spent.items():
        print(f"  {stage:<32} {1000 * s / pages:6.3f} ms a page  {100 * s / total:4.0f}%")
    results = [extraction.extract(p) for p in paths]
    t = time.perf_counter()
    for r in results:
        pickle.loads(pickle.dumps(r))
    print(f"  pickling results (dumps + loads)  {1000 * (time.perf_counter() - t) / pages:6.3f} ms a page")
    t = process_per_document(len(paths))
    print(f"  a process per document            {1000 * t / pages:6.3f} ms a page ({1000 * t / len(paths):.0f} ms a "
          "document)")
    with tempfile.TemporaryDirectory() as tmp, PageStore(Path(tmp) / "pages.sqlite") as store:
        t = time.perf_counter()
        for d, r in zip(c.documents, results, strict=True):
            store._save(d.sha256, r)
        print(f"  SQLite writes in the parent       {1000 * (time.perf_counter() - t) / pages:6.3f} ms a page")


if __name__ == "__main__":
    main()

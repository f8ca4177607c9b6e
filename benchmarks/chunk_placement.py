"""How long a retriever's chunks take to place on pages, as an arm of the user's places them: 100 queries
of 10 chunks each, from the ten longest manuals of the latex corpus, given by their text alone (the slow
case: the chunk is found in the normalised pages) and by their character span.

    python benchmarks/chunk_placement.py

Each document's layout (:class:`evalkit.answers.Layout`: page starts, normalised text) is worked out once,
as :class:`evalkit.arms.function.FunctionArm` does. The load average is printed beside the times: on a shared
machine they move with it.
"""
from __future__ import annotations

import os
import random
import time

from evalkit import answers, api
from evalkit.records import Chunk

QUERIES, PER_QUERY, LENGTH = 100, 10, 300


def chunk_of(texts: dict[str, list[str]], doc: str, rng: random.Random, by_span: bool) -> Chunk:
    """A random stretch of ``doc`` within one page, by its span or by its text."""
    whole = answers.PAGE_BREAK.join(texts[doc])
    while True:
        start = rng.randrange(0, len(whole) - LENGTH - 100)
        piece = whole[start:start + LENGTH]
        if answers.PAGE_BREAK not in piece and piece.strip():
            return Chunk(doc, start=start, end=start + LENGTH) if by_span else Chunk(doc, text=piece)


def main() -> None:
    docs = api.corpus("latex", progress=False)
    texts = {d.name: docs.texts(d.name) for d in docs.corpus.documents}
    longest = sorted(texts, key=lambda n: -sum(map(len, texts[n])))[:10]
    rng = random.Random(0)
    for by_span in (False, True):
        queries = [[chunk_of(texts, rng.choice(longest), rng, by_span) for _ in range(PER_QUERY)]
                   for _ in range(QUERIES)]
        layout = {name: answers.Layout(tuple(t)) for name, t in texts.items()}.__getitem__
        t0 = time.perf_counter()
        for chunks in queries:
            answers.from_output(chunks, layout)
        took = time.perf_counter() - t0
        print(f"chunks by {'span' if by_span else 'text'}: {took:.2f} s for {QUERIES} queries x {PER_QUERY} chunks "
              f"({took * 1000 / QUERIES:.1f} ms per query); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

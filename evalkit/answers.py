"""What an arm may answer, and how a retriever's own answer becomes one.

Every answer is checked where the runner records it (:func:`problem`): each hit names a document of the
corpus and a page in 1..pages, every score is finite, and no page appears twice. A bad answer becomes that
query's error, named with the arm and the query; the run goes on. An answer longer than the run's depth
``k`` is cut to its first k pages there (:func:`within`), and a retriever's own answer is read no further
than k + 1 items (:func:`from_output`), so a generator that never ends costs k + 1 items, not the memory.

A retriever written by its user answers in its own terms: page hits, ``(doc, page)`` pairs, or chunks. A
chunk is placed on the physical pages it overlaps (:func:`place`), by the first of its page, its character
span in the document's text (page texts joined by :data:`PAGE_BREAK`) or its text found on the pages; the
pages then rank at their best chunk (:func:`collapse`). That rule is declared, never guessed: a chunk that
cannot be placed is an error of its query, not a silent miss.
"""
from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import cached_property
from itertools import accumulate, islice
from typing import Any

from .records import Answer, Chunk, Hit
from .text import normalize

PAGE_BREAK = "\f"  # between two pages of a document's text: one character, so spans map to pages exactly
CHUNK_RULE = ("a chunk lies on its page, else on the pages its character span overlaps in the page texts "
              "joined by '\\f', else on the pages its text is found on; each page ranks at its best chunk")
_CHUNK_FIELDS = {f.name for f in fields(Chunk)}


class AnswerError(ValueError):
    """An answer evalkit cannot record; the message says which hit or chunk and why."""


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def problem(result: Answer, pages: Mapping[str, int]) -> str:
    """What is wrong with an answer over a corpus whose documents have ``pages`` pages ("" when nothing):
    a document outside the corpus, a page outside 1..pages, a score that is not a finite number, a page
    ranked twice, a confidence that is NaN."""
    if result.confidence is not None and not (isinstance(result.confidence, (int, float))
                                              and not math.isnan(result.confidence)):
        return f"confidence {result.confidence!r} is not a number"
    seen: set[tuple[str, int]] = set()
    for rank, h in enumerate(result.hits, 1):
        if h.doc not in pages:
            return f"hit {rank} names document {h.doc!r}, which is not in the corpus"
        if not isinstance(h.page, int) or isinstance(h.page, bool) or not 1 <= h.page <= pages[h.doc]:
            return f"hit {rank}: page {h.page!r} of {h.doc!r} is outside 1..{pages[h.doc]}"
        if not _finite(h.score):
            return f"hit {rank} ({h.doc}#{h.page}) has score {h.score!r}, not a finite number"
        if (h.doc, h.page) in seen:
            return (f"hit {rank} repeats page {h.doc}#{h.page} (an arm that returns chunks declares it: "
                    "ek.arm(..., collapse=True))")
        seen.add((h.doc, h.page))
    return ""


def within(result: Answer, k: int) -> tuple[Answer, bool]:
    """The answer cut to its first ``k`` pages (and the chunks that lie on them), and whether it held more:
    a run's depth is what every measure and the manifest say was kept, so a reciprocal rank can never come
    from a rank the run did not ask for."""
    if len(result.hits) <= k:
        return result, False
    kept = result.hits[:k]
    on = {(h.doc, h.page) for h in kept}
    chunks = tuple(c for c in result.chunks if any((c.doc, p) in on for p in c.pages))
    return replace(result, hits=kept, chunks=chunks), True


def page_starts(texts: Sequence[str]) -> list[int]:
    """Where each page begins in the document's text (its page texts joined by :data:`PAGE_BREAK`)."""
    return [0, *accumulate(len(t) + len(PAGE_BREAK) for t in texts[:-1])] if texts else []


def _pages_of_span(start: int, end: int, starts: Sequence[int], ends: Sequence[int]) -> tuple[int, ...]:
    """The 1-based pages whose [start, end) overlaps the span (an empty page at the span's start counts)."""
    first = max(bisect.bisect_right(starts, start) - 1, 0)
    last = bisect.bisect_left(starts, end, lo=first)
    return tuple(i + 1 for i in range(first, last) if starts[i] < end and start < ends[i]
                 or starts[i] == ends[i] == start)


@dataclass(frozen=True)
class Layout:
    """A document's pages as chunks are placed on them: its text, and where each page starts and ends in it
    and in its normalised text. Kept per document by whoever places many chunks (an arm keeps one per
    document) rather than worked out per chunk: normalising a long manual for every text-only chunk made
    placement the slowest part of a run."""

    texts: tuple[str, ...]

    @cached_property
    def text(self) -> str:
        """The page texts joined by :data:`PAGE_BREAK`: the text chunk spans index."""
        return PAGE_BREAK.join(self.texts)

    @cached_property
    def span(self) -> tuple[list[int], list[int], int]:
        """Page starts and ends in the text joined by :data:`PAGE_BREAK`, and its length."""
        starts = page_starts(self.texts)
        return starts, [s + len(t) for s, t in zip(starts, self.texts, strict=True)], len(self.text)

    @cached_property
    def normalised(self) -> tuple[str, list[int], list[int]]:
        """The normalised page texts joined by spaces, with each page's start and end in it."""
        pages = [normalize(t).replace("-", "") for t in self.texts]
        starts = [0, *accumulate(len(p) + 1 for p in pages[:-1])]
        return " ".join(pages), starts, [s + len(p) for s, p in zip(starts, pages, strict=True)]


def _span(chunk: Chunk, layout: Layout) -> tuple[int, ...]:
    start, end = chunk.start, chunk.end if chunk.end is not None else (chunk.start or 0) + max(len(chunk.text), 1)
    starts, ends, total = layout.span
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= total):
        raise AnswerError(f"chunk of {chunk.doc!r}: span {start!r}..{end!r} is outside its text (0..{total})")
    return _pages_of_span(start, end, starts, ends)


def _found(chunk: Chunk, layout: Layout) -> tuple[int, ...]:
    """The pages a chunk's text lies on, found after normalisation (ligatures, case, white space and
    hyphens folded, so another extractor's text of the same page is found)."""
    joined, starts, ends = layout.normalised
    quote = normalize(chunk.text).replace("-", "")
    at = joined.find(quote)
    if not quote or at < 0:
        raise AnswerError(f"chunk of {chunk.doc!r} ({chunk.text[:60]!r}…) is not found on any of its "
                          f"{len(layout.texts)} pages: give its page or span")
    return _pages_of_span(at, at + len(quote), starts, ends)


def place(chunk: Chunk, texts: Sequence[str] | Layout) -> tuple[int, ...]:
    """The physical pages (1-based) of the document with page ``texts`` (or their :class:`Layout`, kept
    between chunks of one document) that ``chunk`` lies on."""
    layout = texts if isinstance(texts, Layout) else Layout(tuple(texts))
    texts = layout.texts
    if chunk.page is not None:
        if not isinstance(chunk.page, int) or isinstance(chunk.page, bool) or not 1 <= chunk.page <= len(texts):
            raise AnswerError(f"chunk of {chunk.doc!r}: page {chunk.page!r} is outside 1..{len(texts)}")
        return (chunk.page,)
    if chunk.start is not None:
        return _span(chunk, layout)
    return _found(chunk, layout)


def collapse(chunks: Sequence[Chunk]) -> tuple[Hit, ...]:
    """Pages in the order of their best chunk (a chunk over several pages gives them in page order), each
    scored with that chunk's score; chunks without scores score ``n - rank + 1``, by order."""
    scored = [c.score is not None for c in chunks]
    if any(scored) and not all(scored):
        raise AnswerError("some chunks have a score and some do not: give all or none")
    hits: dict[tuple[str, int], Hit] = {}
    for rank, c in enumerate(chunks):
        score = c.score if c.score is not None else float(len(chunks) - rank)
        for page in c.pages:
            hits.setdefault((c.doc, page), Hit(c.doc, page, score))
    return tuple(hits.values())


def _number(x: Any, kind: type) -> Any:
    """NumPy's numbers (a BM25 library's scores, an index's page) as Python's; anything else as it is."""
    whole = isinstance(x, numbers.Integral)
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or kind is int and not whole:
        return x
    return kind(x)


def _hit(item: Hit | tuple, unscored: float) -> Hit:
    if isinstance(item, tuple) and len(item) not in (2, 3):
        raise AnswerError(f"cannot read the answer item {item!r}: want (doc, page) or (doc, page, score)")
    doc, page, score = (item.doc, item.page, item.score) if isinstance(item, Hit) else (*item, unscored)[:3]
    return Hit(doc, _number(page, int), _number(score, float))


def as_chunk(item: Any, convert: Callable[[Any], Chunk | None] | None = None) -> Chunk:
    """One item of a chunk retriever's answer as a chunk: a :class:`Chunk`, a dict of its fields, a page hit
    or ``(doc, page[, score])`` (a chunk that names its page), or what ``convert`` (an adapter's) makes of it."""
    if isinstance(item, Chunk):
        return replace(item, page=_number(item.page, int), score=_number(item.score, float))
    if isinstance(item, (Hit, tuple)):
        h = _hit(item, math.nan)
        return Chunk(h.doc, score=None if isinstance(item, tuple) and len(item) == 2 else h.score, page=h.page)
    if isinstance(item, Mapping) and "doc" in item and set(item) <= _CHUNK_FIELDS:
        return Chunk(**item)
    chunk = convert(item) if convert else None
    if chunk is None:
        raise AnswerError(f"cannot read an answer item of type {type(item).__name__}: want a Hit, a Chunk, "
                          "(doc, page[, score]) or a dict of Chunk fields")
    return chunk


def from_output(output: Iterable[Any] | Answer, texts: Callable[[str], Sequence[str] | Layout],
                collapse_pages: bool = False,
                convert: Callable[[Any], Chunk | None] | None = None, k: int | None = None) -> Answer:
    """A retriever's answer as a :class:`Answer`. Page hits (``Hit`` or ``(doc, page[, score])``) are kept in
    order, scoreless ones scoring ``n - rank + 1``; with ``collapse_pages`` a repeated page keeps its best
    rank. Anything else is read as chunks, placed on the pages of ``texts(doc)`` (page texts, or the
    document's :class:`Layout`, kept to place many chunks fast) and collapsed. With ``k``, at most k + 1
    items are read (one more than asked shows the answer was longer: :func:`within` cuts it). Raises
    :class:`AnswerError` on what cannot be read or placed."""
    if isinstance(output, Answer):
        return output
    items = list(islice(output, None if k is None else k + 1))
    if all(isinstance(i, (Hit, tuple)) for i in items):
        hits = [_hit(i, float(len(items) - r)) for r, i in enumerate(items)]
        if collapse_pages:
            best: dict[tuple[str, int], Hit] = {}
            for h in hits:
                best.setdefault((h.doc, h.page), h)
            hits = list(best.values())
        return Answer(tuple(hits))
    chunks = tuple(_placed(as_chunk(i, convert), texts) for i in items)
    return Answer(collapse(chunks), chunks=chunks)


def _placed(chunk: Chunk, texts: Callable[[str], Sequence[str] | Layout]) -> Chunk:
    try:
        pages = texts(chunk.doc)
    except KeyError:
        raise AnswerError(f"chunk names document {chunk.doc!r}, which is not in the corpus") from None
    return replace(chunk, pages=place(chunk, pages))

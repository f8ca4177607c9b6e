"""Reading one PDF's pages, safely: per-page errors, damage reports, hidden text, time and memory bounds.

Documents are read in child processes, one document at a time per process, so a hostile file can cost
only that file: MuPDF crashing, a page that loops, or a decompression bomb kills or stops the process
reading it, never the run, and a fresh process takes the next document. For each document a process may
grow its address space by ``memory_mb`` (``RLIMIT_AS``; a bound, not an exact budget: free heap inherited
from the parent or left by earlier documents is used first) and gets ``seconds`` of wall-clock time; past
either the document is skipped as too large. A process reads many documents because starting one per
document cost more than reading a short one. Children die with their parent (``PR_SET_PDEATHSIG`` on
Linux), so a killed run leaves no extraction process behind.

Inside a document, a page that fails is recorded as an error for that page, with empty text, and the
other pages are kept: page numbers never shift. A file MuPDF had to repair is reported with its warnings
and, when the lock says how many pages it should have, the pages it lost.

Hidden text is text a reader does not see but an index would: invisible (render mode 3 or fully
transparent), white on a light background, or in a font under :data:`TINY_PT` points. It is counted per
page so a page shaped like a prompt injection can be found (``evalkit corpus stats``). It is indexed like
any text unless the page store reads visible text only (``--hidden-text drop``).
"""
from __future__ import annotations

import ctypes
import gc
import multiprocessing
import resource
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import pymupdf

TINY_PT = 1.5  # a font size no one reads
SAMPLE = 120  # characters of a page's hidden text kept to show it
SECONDS = 120.0  # per document
MEMORY_MB = 1024  # address space an extraction process may add to what it starts with
HIDDEN_KINDS = ("invisible", "white", "tiny")


@dataclass(frozen=True)
class Extraction:
    """What reading one PDF gave: page texts (a failed page is ``""``), and everything that went wrong."""

    pages: tuple[str, ...] = ()
    error: str | None = None  # the whole document was skipped
    page_errors: dict[int, str] = field(default_factory=dict)  # page number -> error
    hidden: dict[int, dict[str, int]] = field(default_factory=dict)  # page -> kind -> characters
    notes: tuple[str, ...] = ()  # repairs and MuPDF warnings
    hidden_sample: dict[int, str] = field(default_factory=dict)  # page -> the start of its hidden text
    # the failure depends on this machine (time, memory, a crash), not only on the file's bytes
    transient: bool = False

    def to_json(self) -> dict:
        return {"page_errors": self.page_errors, "hidden": self.hidden, "notes": list(self.notes),
                "hidden_sample": self.hidden_sample}

    @classmethod
    def from_json(cls, pages: tuple[str, ...], error: str | None, data: dict) -> "Extraction":
        def by_page(key: str) -> dict:
            return {int(k): v for k, v in data.get(key, {}).items()}
        return cls(pages, error, by_page("page_errors"), by_page("hidden"), tuple(data.get("notes", ())),
                   by_page("hidden_sample"))

    def problems(self) -> list[str]:
        """What was lost or repaired reading this file, one phrase each (empty when nothing was)."""
        out = list(self.notes)
        if self.page_errors:
            first = next(iter(self.page_errors.items()))
            out.append(f"{len(self.page_errors)} page(s) unreadable, kept empty "
                       f"({_listed(list(map(str, self.page_errors)))}; page {first[0]}: {first[1]})")
        return out


def _listed(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + ("…" if len(items) > n else "")


def _white(color: int) -> bool:
    return all((color >> shift) & 0xFF >= 0xF2 for shift in (16, 8, 0))


DARK = 0.5  # relative luminance at or under which white text on a fill is read (contrast about 2:1 or more)
Rect = tuple[float, float, float, float]


def luminance(rgb: tuple[float, ...]) -> float:
    """Relative luminance of an sRGB colour with components in 0..1 (WCAG 2's definition)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def on_dark(bbox: Rect, painted: list[tuple[Rect, float | None]]) -> bool:
    """Whether the centre of ``bbox`` lies on a dark background: the last area of ``painted`` (rectangle and
    luminance, in paint order) that holds it is at most :data:`DARK`, or of a colour not read (``None``: an
    image or a shading). Nothing painted there is the white page: light."""
    x, y = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    for (x0, y0, x1, y1), lum in reversed(painted):
        if x0 <= x <= x1 and y0 <= y <= y1:
            return lum is None or lum <= DARK
    return False


def painted(page: pymupdf.Page) -> list[tuple[Rect, float | None]]:
    """What a page paints, in paint order, for :func:`on_dark`: filled paths (their bounding rectangles) with
    their fill's luminance, images and shadings with ``None``, as their colours are not read (so white text
    on them is taken as seen, even where the image or shading is light). Opacity is not read, and a path
    filled with a pattern has no fill colour, so is left out. It costs about 4 ms a page (three passes over
    the page's content): it is read only for a page with white text.

    The paint order is the bbox log's (``seqno`` of a drawing indexes it). The log gives a shading the
    unclipped, infinite rectangle a beamer title bar is painted with; ``get_image_info`` lists the same
    images and shadings, in the same order, with their clipped boxes, which are used when the two agree in
    number (on every page of the ``latex`` corpus). Where they do not, the log's boxes are kept, and an
    unbounded shading makes all white text on its page count as seen."""
    log = [(i, rect) for i, (kind, rect) in enumerate(page.get_bboxlog())
           if kind in ("fill-image", "fill-imgmask", "fill-shade")]
    boxes = [info["bbox"] for info in page.get_image_info()]
    if len(boxes) == len(log):
        log = [(i, box) for (i, _), box in zip(log, boxes, strict=True)]
    areas: dict[int, tuple[Rect, float | None]] = {i: (tuple(rect), None) for i, rect in log}
    for path in page.get_cdrawings():  # get_drawings' raw form: the same paths, faster
        if path.get("fill") is not None:
            areas[path["seqno"]] = (tuple(path["rect"]), luminance(path["fill"]))
    return [areas[i] for i in sorted(areas)]


def _style(span: dict) -> tuple[int, float, int]:
    """What decides whether a span is hidden: its opacity, font size and colour."""
    return span.get("alpha", 255), span["size"], span["color"]


def _hidden_kind(alpha: int, size: float, color: int) -> str | None:
    return "invisible" if alpha == 0 else "tiny" if size < TINY_PT else "white" if _white(color) else None


def hidden_text(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None) -> tuple[dict[str, int], str, str]:
    """:func:`hidden_in` of a page. ``textpage``: the page's parsed text, reused (parsing the page is a
    third of the cost, the span dictionary read from it nearly half)."""
    import pymupdf  # here, not above: reading a page store's texts needs no PDF library

    tp = textpage or page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
    return hidden_in(tp.extractDICT()["blocks"], lambda: painted(page))


def hidden_in(blocks: list[dict], backgrounds: Callable[[], list[tuple[Rect, float | None]]] = list,
              ) -> tuple[dict[str, int], str, str]:
    """Characters of hidden text by kind (only kinds that occur), the start of that text, and, when there
    is any, the text without it (one line per text line; "" where nothing is hidden, as it is never used
    there), from a page's span dictionary blocks. Only text inside the page is in them: text placed off
    the page is not extracted, so not indexed. White text is hidden only where it is not :func:`on_dark`
    of ``backgrounds()`` (the page's :func:`painted` areas), called once, for a page with white text only."""
    lines = [line["spans"] for block in blocks for line in block.get("lines", ())]
    if not any(_hidden_kind(*style) for style in {_style(span) for spans in lines for span in spans}):
        return {}, "", ""  # most pages (some 300 spans each): a handful of styles, none of them hidden
    found: dict[str, int] = {}
    sample: list[str] = []
    visible: list[str] = []
    areas: list[tuple[Rect, float | None]] | None = None
    for spans in lines:
        kept = []
        for span in spans:
            kind = _hidden_kind(*_style(span)) if span["text"].strip() else None
            if kind == "white":
                areas = backgrounds() if areas is None else areas
                kind = None if on_dark(span["bbox"], areas) else kind
            if kind:
                found[kind] = found.get(kind, 0) + len(span["text"].strip())
                sample.append(span["text"].strip())
            else:
                kept.append(span["text"])
        if kept:
            visible.append("".join(kept) + "\n")
    return found, " ".join(sample)[:SAMPLE], "".join(visible) if found else ""


def extract(path: Path, visible_only: bool = False) -> Extraction:
    """Read every page of ``path`` in this process. Never raises: failures are in the result. With
    ``visible_only`` a page with hidden text keeps only its visible text."""
    import pymupdf

    pymupdf.TOOLS.reset_mupdf_warnings()
    try:
        pdf = pymupdf.open(path)
    except Exception as e:  # noqa: BLE001 - any failure of one file is reported and skipped
        return Extraction(error=_describe(e))
    with pdf:
        if pdf.needs_pass:
            return Extraction(error="encrypted (needs a password)")
        try:
            count = pdf.page_count
        except Exception as e:  # noqa: BLE001
            return Extraction(error=_describe(e))
        if count == 0:
            return Extraction(error="no pages (damaged or not a PDF)")
        texts, errors, hidden, samples = [], {}, {}, {}
        for number in range(1, count + 1):
            try:
                page = pdf.load_page(number - 1)
                textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)  # get_text("text")'s flags
                texts.append(textpage.extractText())  # what get_text("text") returns, without its wrapper's checks
            except Exception as e:  # noqa: BLE001 - one page's failure costs that page only
                if _out_of_memory(e):  # the document, not the page, is over its bound
                    return Extraction(error=TOO_BIG, transient=True)
                texts.append("")
                errors[number] = _describe(e)
                continue
            try:
                kinds, sample, visible = hidden_text(page, textpage)
                if kinds:
                    hidden[number], samples[number] = kinds, sample
                    if visible_only:
                        texts[-1] = visible
            except Exception as e:  # noqa: BLE001
                if _out_of_memory(e):
                    return Extraction(error=TOO_BIG, transient=True)
                errors[number] = f"hidden-text check failed: {_describe(e)}"
        notes = []
        if pdf.is_repaired:
            warnings = " ".join(pymupdf.TOOLS.mupdf_warnings().split())
            blank = [str(n) for n, t in enumerate(texts, 1) if not t.strip() and n not in errors]
            lost = f"; {len(blank)} of {count} pages have no text after the repair ({_listed(blank)})" if blank else ""
            notes.append(f"damaged file repaired by MuPDF{lost} (MuPDF: {warnings[:160] or 'no detail'})")
    return Extraction(tuple(texts), None, errors, hidden, tuple(notes), samples)


TOO_BIG = "too large (over the memory bound while extracting)"


def _out_of_memory(e: BaseException) -> bool:
    msg = str(e).lower()
    return isinstance(e, MemoryError) or ("alloc (" in msg and "failed" in msg) or "out of memory" in msg


def _describe(e: BaseException) -> str:
    return TOO_BIG if _out_of_memory(e) else f"{type(e).__name__}: {e}".strip()


# ---- bounded child processes ------------------------------------------------------------------------------

def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _address_space() -> int:
    """This process's virtual size now (a forked child starts with its parent's, which may be large)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _bound_memory(memory_mb: int) -> None:
    """From now on, let this process grow its address space by ``memory_mb`` at most. Only the soft limit
    is set, so a worker can give each document a fresh bound of its own."""
    limit = _address_space() + (memory_mb << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    except (ValueError, OSError):
        pass


def _worker(conn, memory_mb: int, visible_only: bool) -> None:
    """A bounded extraction process: reads the documents it is sent, one at a time, each under its own
    memory bound, until its connection closes. Starting a process per document cost more than reading
    a short one."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    gc.freeze()  # the parent's objects, inherited by fork, are no garbage: spare the collector walking them
    while True:
        try:
            path = conn.recv()
        except EOFError:
            return
        _bound_memory(memory_mb)
        try:
            conn.send(extract(Path(path), visible_only))
        except MemoryError:
            conn.send(Extraction(error=TOO_BIG, transient=True))


def _context() -> multiprocessing.context.ForkContext | multiprocessing.context.SpawnContext:
    """fork where there is one: a child starts in milliseconds with PyMuPDF loaded, and never re-imports
    the caller's main module (forkserver and spawn would re-run an unguarded script or fail from stdin)."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


@dataclass
class _Process:
    """A worker and the parent's end of its connection."""

    proc: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection

    def stop(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()


def _start(ctx: multiprocessing.context.ForkContext | multiprocessing.context.SpawnContext, memory_mb: int,
           visible_only: bool) -> _Process:
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_worker, args=(theirs, memory_mb, visible_only), daemon=True)
    proc.start()
    theirs.close()
    return _Process(proc, ours)


def extract_all(paths: list[Path], workers: int = 1, seconds: float = SECONDS, memory_mb: int = MEMORY_MB,
                visible_only: bool = False) -> Iterator[tuple[int, Extraction]]:
    """``(index into paths, extraction)`` for every path, in completion order, by at most ``workers``
    worker processes. A worker over ``seconds`` on one document is killed, one that dies is reported, and
    either is replaced, as is one whose document went over its memory bound; none outlives this generator.
    Each worker gets its next document before the caller sees the last one's result, so storing results
    does not keep the workers waiting."""
    import pymupdf  # noqa: F401 - loaded once here, where forked workers inherit it

    ctx = _context()
    todo = list(enumerate(paths))[::-1]
    idle: list[_Process] = []
    busy: dict[Connection, tuple[int, _Process, float]] = {}  # connection -> (index, worker, deadline)
    done: list[tuple[int, Extraction]] = []
    try:
        while True:
            while todo and len(busy) < max(1, workers):
                w = idle.pop() if idle else _start(ctx, memory_mb, visible_only)
                i, path = todo.pop()
                try:
                    w.conn.send(str(path))
                except OSError:
                    pass  # the worker is gone: receiving from it says how
                busy[w.conn] = (i, w, time.monotonic() + seconds)
            yield from done
            done = []
            if not busy:
                return
            timeout = max(0.0, min(d for _, _, d in busy.values()) - time.monotonic())
            ready = cast(list[Connection], wait(list(busy), timeout=timeout))  # some of those given
            for conn in ready:
                i, w, _ = busy.pop(conn)
                try:
                    result = conn.recv()
                except (EOFError, OSError):
                    w.proc.join()
                    result = Extraction(error=_died(w.proc.exitcode), transient=True)
                if result.transient:  # over a bound or dead: a fresh worker takes the next document
                    w.stop()
                else:
                    idle.append(w)
                done.append((i, result))
            now = time.monotonic()
            for conn, (i, w, deadline) in list(busy.items()):
                if deadline <= now:
                    w.stop()
                    del busy[conn]
                    done.append((i, Extraction(error=f"too large (took over {seconds:g} s to extract)",
                                               transient=True)))
    finally:
        for w in idle + [w for _, w, _ in busy.values()]:
            w.stop()


def extract_bytes(data: bytes, seconds: float = SECONDS, memory_mb: int = MEMORY_MB,
                  visible_only: bool = False) -> Extraction:
    """One PDF given as bytes, read in a bounded child process like :func:`extract_all`: the task a remote
    executor runs (a worker on another machine has the bytes, not the file). The bounded child needs a
    worker that may have children: Dask workers started with ``DASK_DISTRIBUTED__WORKER__DAEMON=False``."""
    import tempfile

    if multiprocessing.current_process().daemon:
        raise RuntimeError("this Dask worker is a daemonic process, which cannot start the bounded extraction "
                           "process: start workers with DASK_DISTRIBUTED__WORKER__DAEMON=False")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "document.pdf"
        path.write_bytes(data)
        return next(extract_all([path], 1, seconds, memory_mb, visible_only))[1]


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        if -code == signal.SIGKILL:
            return "too large (the extraction process was killed, most likely for memory)"
        return f"extraction crashed ({signal.Signals(-code).name})"
    return f"extraction process exited with status {code}"

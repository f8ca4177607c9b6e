"""The page store: every PDF page's text, extracted once with PyMuPDF, kept in SQLite.

Rows are keyed by the document's sha256 (and the extractor's version), never by its file name: renaming a
file costs nothing, and editing one file re-extracts only that file. The database runs in WAL mode so
readers are never blocked by a writer. Indexes and vectors derived from the pages live in the same file.
"""
from __future__ import annotations

import json
import os
import sqlite3
import sys
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path

from tqdm import tqdm

from . import cache, dirs, executor, extraction
from .corpora import Corpus
from .defaults import HIDDEN_TEXT
from .extraction import Extraction, extract_all
from .records import Document, Page

EXTRACTOR = f"pymupdf-{version('pymupdf')}:text"  # its installed version, without loading it

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    sha256 TEXT PRIMARY KEY, extractor TEXT NOT NULL, pages INTEGER NOT NULL, error TEXT);
CREATE TABLE IF NOT EXISTS pages (
    sha256 TEXT NOT NULL, number INTEGER NOT NULL, text TEXT NOT NULL, chars INTEGER NOT NULL,
    empty INTEGER NOT NULL, PRIMARY KEY (sha256, number)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS extraction_reports (
    sha256 TEXT NOT NULL, extractor TEXT NOT NULL, report TEXT NOT NULL, PRIMARY KEY (sha256, extractor)) WITHOUT ROWID;
"""
# Version of what extraction_reports hold (page errors, hidden text, repairs): a document extracted by an
# evalkit that did not write this report is extracted again (same text, so no index or vector changes).
# report-2: white text on a dark fill, image or shading is no longer hidden.
REPORT_VERSION = "report-2"
# Visible text follows the hidden-text rule, so its extractor name (which keys its pages, indexes and
# vectors) carries the rule's version: text kept since report-2 is indexed and embedded anew.
VISIBLE_ONLY = f"+visible-only:{REPORT_VERSION}"


def default_path() -> Path:
    return dirs.cache_dir() / "evalkit.sqlite"


def store_path(path: Path | None, hidden_text: str = "index") -> Path:
    """The cache file in use: ``path``, else the default one (visible text only has a file of its own)."""
    if path:
        return Path(path)
    return default_path().with_name("evalkit-visible.sqlite") if hidden_text == "drop" else default_path()


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open (creating) the cache database in WAL mode, checked first (:func:`evalkit.cache.check`)."""
    path = Path(path or default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # SQLite is built serialized (threadsafe=1), so one connection may serve an arm's worker threads.
        db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise cache.explain(path, e) from None
    try:
        cache.check(db, path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
    except sqlite3.DatabaseError as e:
        db.close()
        raise cache.explain(path, e) from None
    return db


@dataclass(frozen=True)
class Ingest:
    """The outcome of making a corpus's pages available: the readable documents, what was skipped, and
    what was lost inside the readable ones (``problems``: document name -> phrases)."""

    corpus: Corpus
    errors: dict[str, str]
    extracted: tuple[str, ...]
    problems: dict[str, list[str]] = field(default_factory=dict)


class PageStore:
    """Page texts for any number of corpora, in one SQLite file."""

    def __init__(self, path: Path | None = None, hidden_text: str = "index"):
        """``hidden_text="drop"`` stores visible text only, under its own extractor name (which keys every
        index and vector built on it), in ``evalkit-visible.sqlite`` unless ``path`` names a file."""
        if hidden_text not in HIDDEN_TEXT:
            raise ValueError(f"hidden_text is {' or '.join(HIDDEN_TEXT)}, not {hidden_text!r}")
        self.visible_only = hidden_text == "drop"
        self.extractor = EXTRACTOR + (VISIBLE_ONLY if self.visible_only else "")
        self.path = store_path(path, hidden_text)
        self.db = connect(self.path)
        self._report = f"{self.extractor}|{REPORT_VERSION}"
        self._usage: dict[str, tuple[int, int, str]] = {}  # what -> pages reused, pages built, how they are built
        self._noted: set[tuple[str, str]] = set()  # (what, of which pages) counted since :meth:`counted`

    def note(self, what: str, reused: int, built: int, verb: str = "built", of: str = "") -> None:
        """Count the pages a derived table (an index, a model's vectors) found cached and built, for :meth:`usage`.
        ``of`` names the pages (a corpus digest): arms that share one table (keyword, global-index and hybrid
        all read the corpus-wide index) count it once, not once per arm."""
        if of:
            if (what, of) in self._noted:
                return
            self._noted.add((what, of))
        r, b, _ = self._usage.get(what, (0, 0, verb))
        self._usage[what] = (r + reused, b + built, verb)

    def usage(self, since: dict[str, tuple[int, int, str]] | None = None) -> str:
        """What this store reused and built since it was opened, or since :meth:`counted` gave ``since`` (a
        notebook keeps one store open across runs: a run says what *it* reused), e.g. ``vectors (MODEL):
        2634 pages reused, 0 embedded`` ("" when nothing derived was asked for)."""
        before = since or {}
        return "; ".join(f"{what}: {r - before.get(what, (0, 0, verb))[0]} pages reused, "
                         f"{b - before.get(what, (0, 0, verb))[1]} {verb}"
                         for what, (r, b, verb) in self._usage.items() if (r, b, verb) != before.get(what))

    def counted(self) -> dict[str, tuple[int, int, str]]:
        """The counts so far, for :meth:`usage` ``since``; from here on a shared table counts again (the next
        run's own use of it)."""
        self._noted.clear()
        return dict(self._usage)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "PageStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _known(self, sha256: str) -> tuple[int, str | None] | None:
        return self.db.execute(
            "SELECT pages, error FROM documents d JOIN extraction_reports r USING (sha256) "
            "WHERE sha256=? AND d.extractor=? AND r.extractor=?", (sha256, self.extractor, self._report)).fetchone()

    def report(self, doc: Document) -> Extraction:
        """What extraction found in one document (page errors, hidden text, repairs); no page texts."""
        row = self.db.execute("SELECT report FROM extraction_reports WHERE sha256=? AND extractor=?",
                              (doc.sha256, self._report)).fetchone()
        return Extraction.from_json((), None, json.loads(row[0]) if row else {})

    def ingest(self, corpus: Corpus, workers: int | None = None, progress: bool = True) -> Ingest:
        """Extract every document not yet in the store (each in a bounded child process, see
        :mod:`evalkit.extraction`); skip and report files that cannot be read, and byte-identical copies
        of an earlier file (kept once, so no ranking can depend on which name a copy has). Returns the
        corpus restricted to readable documents, with page counts filled in."""
        # skipped without a row in the store: copies, and failures to try again next time
        unstored = {name: f"byte-identical to {first} (kept once)" for name, first in corpus.copies().items()}
        todo = [d for d in corpus.documents if d.name not in unstored and self._known(d.sha256) is None]
        extracted = []
        if todo:
            workers = workers or min(len(todo), os.cpu_count() or 1)
            bar = tqdm(total=len(todo), unit="doc", desc=f"extract {corpus.name}", disable=not progress,
                       file=sys.stderr)
            ex = executor.current()
            bounds = (extraction.SECONDS, extraction.MEMORY_MB, self.visible_only)
            results = (ex.map(extraction.extract_bytes, ((corpus.path(d).read_bytes(), *bounds) for d in todo))
                       if ex else extract_all([corpus.path(d) for d in todo], workers, *bounds))
            for i, result in results:
                if result.transient:  # over a bound or crashed: tried again next time, never cached
                    unstored[todo[i].name] = str(result.error)
                else:
                    self._save(todo[i].sha256, result)
                    extracted.append(todo[i].name)
                bar.update()
            bar.close()
        readable, errors, problems = [], dict(unstored), {}
        for d in corpus.documents:
            if d.name in unstored:
                continue
            known = self._known(d.sha256)
            assert known is not None  # stored above, or by an earlier ingest
            pages, error = known
            if error:
                errors[d.name] = error
                continue
            readable.append(replace(d, pages=pages))
            lost = self.report(d).problems()
            if d.pages and pages < d.pages:
                lost.append(f"{d.pages - pages} of {d.pages} pinned pages missing")
            if lost:
                problems[d.name] = lost
        return Ingest(replace(corpus, documents=tuple(readable)), errors, tuple(extracted), problems)

    def _save(self, sha256: str, result: Extraction) -> None:
        with self.db:  # one transaction per document: a crash leaves each document whole or absent
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM pages WHERE sha256=?", (sha256,))
            self.db.execute("INSERT OR REPLACE INTO documents VALUES (?,?,?,?)",
                            (sha256, self.extractor, len(result.pages), result.error))
            self.db.executemany("INSERT INTO pages VALUES (?,?,?,?,?)",
                                [(sha256, i, t, len(t), int(not t.strip())) for i, t in enumerate(result.pages, 1)])
            self.db.execute("INSERT OR REPLACE INTO extraction_reports VALUES (?,?,?)",
                            (sha256, self._report, json.dumps(result.to_json())))

    def texts(self, doc: Document) -> list[str]:
        """The page texts of one document, page 1 first."""
        rows = self.db.execute("SELECT text FROM pages WHERE sha256=? ORDER BY number", (doc.sha256,))
        return [r[0] for r in rows]

    def page(self, doc: Document, number: int) -> Page:
        row = self.db.execute("SELECT text FROM pages WHERE sha256=? AND number=?", (doc.sha256, number)).fetchone()
        if row is None:
            raise KeyError(f"{doc.name}#{number}")
        return Page(doc.name, number, row[0])

    def corpus_texts(self, corpus: Corpus) -> dict[str, list[str]]:
        """Document name -> its page texts, for every readable document of the corpus."""
        return {d.name: self.texts(d) for d in corpus.documents}

    def stats(self, corpus: Corpus) -> dict[str, int]:
        """Documents, pages, characters, pages with no extractable text (scanned), pages that failed to
        extract, and pages holding hidden text (with its characters) of a corpus."""
        shas = [d.sha256 for d in corpus.documents]
        marks = ",".join("?" * len(shas))
        pages, chars, empty = self.db.execute(
            f"SELECT count(*), coalesce(sum(chars),0), coalesce(sum(empty),0) FROM pages WHERE sha256 IN ({marks})",
            shas).fetchone()
        reports = [self.report(d) for d in corpus.documents]
        return {"documents": len(shas), "pages": pages, "characters": chars, "empty_pages": empty,
                "page_errors": sum(len(r.page_errors) for r in reports),
                "hidden_pages": sum(len(r.hidden) for r in reports),
                "hidden_characters": sum(n for r in reports for kinds in r.hidden.values() for n in kinds.values())}

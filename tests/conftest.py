"""Shared fixtures: tiny PDFs built with PyMuPDF, and the real default corpora fetched once per machine."""
from __future__ import annotations

import os
from pathlib import Path

import pymupdf
import pytest

ROOT = Path(__file__).resolve().parent.parent
# Real corpora and their caches persist between test runs (they are pinned by sha256, so reuse is safe).
TEST_HOME = ROOT / ".evalkit-test"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests run the real all-MiniLM-L6-v2 assembled from PyPI packages: no model hub, no fake embedding.
os.environ.setdefault("EVALKIT_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
os.environ.setdefault("EVALKIT_MODEL_DIR", "packaged")
# A few short real manuals: enough for the real model and real FTS5 behaviour, small enough to embed quickly.
SMALL = ("booktabs.pdf", "ctable.pdf", "float.pdf", "newfloat.pdf", "setspace-doc.pdf", "parskip.pdf",
         "subcaption.pdf", "cite.pdf", "chapterbib.pdf", "pdfpages.pdf")


def make_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF with one page per string (an empty string makes a page with no text, like a scan)."""
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        if text:
            page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=10)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Point evalkit's data dir, cache dir and lock file at a fresh temporary folder."""
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EVALKIT_LOCK", str(tmp_path / "corpora.lock"))
    return tmp_path


@pytest.fixture(scope="session")
def real_env():
    """Environment for the real corpora: a persistent data dir and cache under .evalkit-test/."""
    return {"EVALKIT_DATA": str(TEST_HOME / "data"), "EVALKIT_CACHE": str(TEST_HOME / "cache"),
            "EVALKIT_LOCK": str(ROOT / "corpora.lock")}


@pytest.fixture(scope="session")
def latex(real_env):
    """The real `latex` corpus, fetched (apt-get download + dpkg-deb) and its pages in the store."""
    from evalkit import corpus
    from evalkit.pages import PageStore

    mp = pytest.MonkeyPatch()
    for k, v in real_env.items():
        mp.setenv(k, v)
    c = corpus.load("latex")
    corpus.fetch(c)
    store = PageStore()
    ingest = store.ingest(c, progress=False)
    yield ingest.corpus, store
    store.close()
    mp.undo()


@pytest.fixture(scope="session")
def small(latex, tmp_path_factory):
    """Ten short real manuals from `latex` in a folder of their own, pages in the store: (corpus, store)."""
    import shutil

    from evalkit import corpus

    c, store = latex
    folder = tmp_path_factory.mktemp("small")
    for name in SMALL:
        shutil.copy(c.path(name), folder / name)
    return store.ingest(corpus.from_dir(folder, "small"), progress=False).corpus, store

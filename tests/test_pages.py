import pymupdf
import pytest

from evalkit import corpora
from evalkit.pages import EXTRACTOR, PageStore

from .conftest import make_pdf


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "pdfs"
    d.mkdir()
    make_pdf(d / "a.pdf", ["Alpha page one: the geometry of margins", "", "Alpha page three"])
    make_pdf(d / "b.pdf", ["Beta page one"])
    return d


def test_the_store_names_the_pymupdf_that_extracts():
    """A page store's identity takes PyMuPDF's version from its installed metadata, so reading a store loads
    no PDF library: it must be the version the library itself reports."""
    assert EXTRACTOR == f"pymupdf-{pymupdf.VersionBind}:text"


def test_extracts_every_page_with_physical_numbers(tmp_path, folder):
    with PageStore(tmp_path / "s.sqlite") as store:
        ing = store.ingest(corpora.from_dir(folder), progress=False)
        assert ing.errors == {} and sorted(ing.extracted) == ["a.pdf", "b.pdf"]
        a = ing.corpus.document("a.pdf")
        assert a.pages == 3
        texts = store.texts(a)
        assert "geometry of margins" in texts[0] and texts[1] == "" and "three" in texts[2]
        assert store.page(a, 3).id == "a.pdf#3"
        assert store.stats(ing.corpus) == {"documents": 2, "pages": 4, "characters": sum(
            len(t) for d in ing.corpus.documents for t in store.texts(d)), "empty_pages": 1,
            "page_errors": 0, "hidden_pages": 0, "hidden_characters": 0}


def test_rename_costs_nothing_and_an_edit_reextracts_one_document(tmp_path, folder):
    with PageStore(tmp_path / "s.sqlite") as store:
        store.ingest(corpora.from_dir(folder), progress=False)
        (folder / "a.pdf").rename(folder / "renamed.pdf")
        assert store.ingest(corpora.from_dir(folder), progress=False).extracted == ()
        make_pdf(folder / "b.pdf", ["Beta, second edition", "with two pages"])
        ing = store.ingest(corpora.from_dir(folder), progress=False)
        assert ing.extracted == ("b.pdf",)
        assert ing.corpus.document("b.pdf").pages == 2
        assert "second edition" in store.texts(ing.corpus.document("b.pdf"))[0]
        assert "geometry" in store.texts(ing.corpus.document("renamed.pdf"))[0]


@pytest.mark.parametrize("content", [b"not a pdf at all", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n%%EOF", b""])
def test_corrupt_file_is_reported_and_skipped(tmp_path, folder, content):
    (folder / "broken.pdf").write_bytes(content)
    with PageStore(tmp_path / "s.sqlite") as store:
        ing = store.ingest(corpora.from_dir(folder), progress=False)
        assert set(ing.errors) == {"broken.pdf"} and ing.errors["broken.pdf"]
        assert [d.name for d in ing.corpus.documents] == ["a.pdf", "b.pdf"]
        again = store.ingest(corpora.from_dir(folder), progress=False)  # the failure is remembered, not retried
        assert again.extracted == () and set(again.errors) == {"broken.pdf"}


def test_encrypted_file_is_reported(tmp_path, folder):
    doc = pymupdf.open(folder / "b.pdf")
    doc.save(folder / "secret.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    with PageStore(tmp_path / "s.sqlite") as store:
        ing = store.ingest(corpora.from_dir(folder), progress=False)
        assert "encrypted" in ing.errors["secret.pdf"]


def test_reader_sees_data_while_another_connection_writes(tmp_path, folder):
    path = tmp_path / "s.sqlite"
    with PageStore(path) as writer, PageStore(path) as reader:
        ing = writer.ingest(corpora.from_dir(folder), progress=False)
        writer.db.execute("BEGIN IMMEDIATE")
        writer.db.execute("DELETE FROM pages")
        assert len(reader.texts(ing.corpus.document("a.pdf"))) == 3  # WAL: the reader is not blocked
        writer.db.execute("ROLLBACK")
        assert reader.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.slow
def test_real_manuals_extract_with_their_locked_page_counts(latex):
    c, store = latex
    for name, phrase in [("booktabs.pdf", "toprule"), ("caption.pdf", "captionsetup"), ("xcolor.pdf", "colorlet")]:
        d = c.document(name)
        texts = store.texts(d)
        assert len(texts) == d.pages == corpora.load("latex").document(name).pages
        assert any(phrase in t for t in texts)
    assert store.stats(c)["pages"] == sum(d.pages for d in corpora.load("latex").documents)

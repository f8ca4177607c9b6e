"""The library adapters against the real libraries: their own PDF loaders on a real PDF whose printed page
labels differ from its physical pages, mapped to physical pages; a hit outside the corpus is its query's
error. (The three forms of one BM25 retriever giving identical rankings: tests/test_notebooks.py.)"""
import json
import subprocess
import sys
from types import SimpleNamespace

import pymupdf
import pytest

import evalkit as ek
from evalkit.answers import AnswerError

from .conftest import ROOT, make_pdf, query, query_file

# Physical page n (1-based) carries "topic<n>"; its printed label is LABELS[n - 1]: roman front matter, arabic
# from 1, and an appendix whose numbering starts at 1 again (so labels "1" and "2" are each on two pages).
LABELS = ["i", "ii", "1", "2", "3", "1", "2"]
TEXTS = [f"Page about topic{n}. " + " ".join(f"word{n}x{i}" for i in range(40)) for n in range(1, 8)]


@pytest.fixture
def folder(isolated):
    """A corpus folder: labelled.pdf (LABELS) and plain.pdf (three pages, no labels); and a PDF outside it."""
    docs = isolated / "docs"
    docs.mkdir()
    make_pdf(isolated / "labelled-tmp.pdf", TEXTS)
    with pymupdf.open(isolated / "labelled-tmp.pdf") as pdf:
        pdf.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
                             {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1},
                             {"startpage": 5, "prefix": "", "style": "D", "firstpagenum": 1}])
        pdf.save(docs / "labelled.pdf")
    make_pdf(docs / "plain.pdf", [f"Plain page about topic{n}." for n in (8, 9, 10)])
    make_pdf(isolated / "elsewhere.pdf", ["Page about topic11, in no corpus."])
    return docs


@pytest.fixture
def docs(folder):
    return ek.corpus(docs=folder, progress=False)


@pytest.fixture(scope="module")
def lib():
    """LangChain's and LlamaIndex's loaders and splitters, and the simplest retriever of each, imported here:
    seconds of imports that only the worker running this module's tests (one group: tests/conftest.py) pays."""
    lc_core = pytest.importorskip("langchain_core.retrievers")
    # The loaders whose page convention the adapter follows live in langchain_community, which is sunset and
    # says so on import (a DeprecationWarning); importorskip imports it with warnings off. Users still load
    # PDFs with them, so the tests keep checking that convention; evalkit itself never imports it.
    lc_loaders = pytest.importorskip("langchain_community.document_loaders")
    li_core = pytest.importorskip("llama_index.core.retrievers")
    li_readers = pytest.importorskip("llama_index.readers.file")
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import NodeWithScore, TextNode

    class Grep(lc_core.BaseRetriever):
        """The simplest LangChain retriever: the documents that contain the query, in their order."""

        documents: list[Document]

        def _get_relevant_documents(self, query, *, run_manager):
            return [d for d in self.documents if query in d.page_content]

    class LlamaGrep(li_core.BaseRetriever):
        """The simplest LlamaIndex retriever: the nodes that contain the query, scored by their order."""

        def __init__(self, nodes):
            super().__init__()
            self.nodes = nodes

        def _retrieve(self, query_bundle):
            found = [n for n in self.nodes if query_bundle.query_str in n.get_content()]
            return [NodeWithScore(node=n, score=float(len(found) - i)) for i, n in enumerate(found)]

    return SimpleNamespace(Grep=Grep, LlamaGrep=LlamaGrep, Document=Document, TextNode=TextNode,
                           PyPDFLoader=lc_loaders.PyPDFLoader, PyMuPDFLoader=lc_loaders.PyMuPDFLoader,
                           RecursiveCharacterTextSplitter=RecursiveCharacterTextSplitter,
                           SentenceSplitter=SentenceSplitter, PDFReader=li_readers.PDFReader,
                           PyMuPDFReader=li_readers.PyMuPDFReader)


def pages(docs, retriever, query, name="lib"):
    return [(h.doc, h.page) for h in docs.search(ek.arm(retriever, name=name), query).hits]


def test_the_test_pdf_prints_labels_that_differ_from_its_physical_pages(folder):
    with pymupdf.open(folder / "labelled.pdf") as pdf:
        assert [p.get_label() for p in pdf] == LABELS


@pytest.mark.parametrize("loader", ["PyPDFLoader", "PyMuPDFLoader"])
def test_langchain_loaders_0_based_pages_map_to_physical_pages(lib, docs, folder, loader):
    loader = getattr(lib, loader)
    loaded = loader(str(folder / "labelled.pdf")).load() + loader(str(folder / "plain.pdf")).load()
    assert [d.metadata["page"] for d in loaded[:7]] == list(range(7))  # the loader's own convention: 0-based
    grep = lib.Grep(documents=loaded)
    for n in range(1, 11):
        doc = "labelled.pdf" if n <= 7 else "plain.pdf"
        assert pages(docs, grep, f"topic{n}.") == [(doc, n if n <= 7 else n - 7)]


@pytest.mark.parametrize("loader", ["PyPDFLoader", "PyMuPDFLoader"])
def test_langchain_whole_document_chunks_are_placed_by_their_text(lib, docs, folder, loader):
    whole = getattr(lib, loader)(str(folder / "labelled.pdf"), mode="single").load()
    assert len(whole) == 1 and "page" not in whole[0].metadata
    chunks = lib.RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0,
                                                add_start_index=True).split_documents(whole)
    assert pages(docs, lib.Grep(documents=chunks), "topic6") == [("labelled.pdf", 6)]


def test_langchain_chunks_cut_from_evalkits_text_keep_their_span(lib, docs):
    """A chunk whose start_index is an offset of evalkit's own text lies on the pages that span overlaps
    (here across a page break), not only on the first page its text is found on."""
    text = docs.text("labelled.pdf")
    start = text.index("word2x39")
    chunk = lib.Document(text[start:start + 30], metadata={"source": "labelled.pdf", "start_index": start})
    assert "\f" in chunk.page_content
    assert pages(docs, lib.Grep(documents=[chunk]), "word2x39") == [("labelled.pdf", 2), ("labelled.pdf", 3)]


def test_llamaindex_pdfreader_labels_resolve_to_physical_pages(lib, docs, folder):
    loaded = lib.PDFReader().load_data(folder / "labelled.pdf") + lib.PDFReader().load_data(folder / "plain.pdf")
    assert [d.metadata["page_label"] for d in loaded] == LABELS + ["1", "2", "3"]  # pypdf reads the labels
    nodes = lib.SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(loaded)
    grep = lib.LlamaGrep(nodes)
    for n in range(1, 11):  # topic4 is on label "2" (twice in the PDF), topic6 on label "1" (twice)
        doc = "labelled.pdf" if n <= 7 else "plain.pdf"
        assert pages(docs, grep, f"topic{n}.") == [(doc, n if n <= 7 else n - 7)], n


# llama-index-readers-file's PyMuPDFReader imports PyMuPDF by its old name (`import fitz`), which warns; the
# warning is that reader's, not evalkit's (whose adapters import neither library), so it is silenced here.
@pytest.mark.filterwarnings("ignore:The `fitz` API is deprecated:FutureWarning")
def test_llamaindex_pymupdfreader_source_is_the_physical_page(lib, docs, folder):
    loaded = lib.PyMuPDFReader().load_data(folder / "labelled.pdf")
    assert "page_label" not in loaded[0].metadata and loaded[5].metadata["source"] == "6"
    assert pages(docs, lib.LlamaGrep(loaded), "topic6") == [("labelled.pdf", 6)]


def test_a_label_on_several_pages_that_the_text_does_not_decide_is_an_error(lib, docs):
    node = lib.TextNode(text="not on any page", metadata={"file_name": "labelled.pdf", "page_label": "1"})
    arm = ek.arm(lib.LlamaGrep([node]), name="li")
    with pytest.raises(AnswerError, match=r"page label '1' is on pages \[3, 6\] of 'labelled.pdf'.*none"):
        docs.search(arm, "not on")


QUERIES = (
    query("in", "needle", "topic5", ("labelled.pdf", 5, 3)),
    query("out", "needle", "topic11", ("plain.pdf", 1, 1)),
    query("label", "needle", "topic9", ("plain.pdf", 2, 1)),
)


def test_hits_outside_the_corpus_are_errors_of_their_queries_and_the_run_goes_on(lib, docs, folder, isolated):
    query_file(isolated / "q.toml", *QUERIES, name="labels")
    lc = lib.Grep(documents=lib.PyPDFLoader(str(folder / "labelled.pdf")).load()
                  + lib.PyPDFLoader(str(isolated / "elsewhere.pdf")).load())
    stray = lib.TextNode(text="Plain page about topic9.", metadata={"file_name": "plain.pdf", "page_label": "iv"})
    li = lib.LlamaGrep(lib.PDFReader().load_data(folder / "labelled.pdf") + [stray])
    res = ek.run(docs, isolated / "q.toml", [ek.arm(lc, name="lc"), ek.arm(li, name="li")], isolated / "res",
                 progress=False)
    rows = res.per_query.set_index(["arm", "query"])
    lc_label, li_label = res.arm("lc"), res.arm("li")
    assert rows.loc[(lc_label, "in"), "nDCG@10"] == 1.0 and rows.loc[(li_label, "in"), "nDCG@10"] == 1.0
    assert f"{isolated / 'elsewhere.pdf'}' is not a document of corpus" in rows.loc[(lc_label, "out"), "error"]
    assert "page label 'iv' is on none of the 3 pages of 'plain.pdf'" in rows.loc[(li_label, "label"), "error"]
    described = {a["label"]: a.get("describe", {}) for a in res.manifest["arms"]}
    assert described[lc_label]["adapter"] == "langchain" and "0-based" in described[lc_label]["pages"]
    assert described[li_label]["adapter"] == "llamaindex" and "Page.get_label()" in described[li_label]["pages"]


def test_adapters_import_neither_library():
    code = ("import sys, evalkit as ek; from evalkit.adapters import detect; detect(lambda q, k: []); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('langchain', 'llama_index')))))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == []

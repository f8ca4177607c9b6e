"""LlamaIndex retrievers: any ``llama_index.core`` ``BaseRetriever``, whose ``retrieve(query)`` returns
``NodeWithScore``, read in the page conventions of llama-index-readers-file: ``PDFReader`` (and so
``SimpleDirectoryReader``) sets ``file_name`` and ``page_label``, the label pypdf reads from the PDF's page
labels, which is what the page *prints* ("iv", "12") and may differ from the physical page; ``PyMuPDFReader``
sets ``file_path`` and ``source``, the 1-based physical page. LlamaIndex is never imported here."""
from __future__ import annotations

import sys
from functools import lru_cache
from typing import Any

from ..answers import AnswerError
from ..records import Chunk
from ..text import contains
from .protocol import Adapter, Caller, document, unpaged


def claims(target: Any) -> bool:
    module = sys.modules.get("llama_index.core.base.base_retriever")
    return module is not None and isinstance(target, module.BaseRetriever)


def _ask(target: Any, query: str, k: int, params: dict) -> list[Any]:
    """The first k nodes of ``retrieve`` (which takes only the query: parameters only label the arm)."""
    return list(target.retrieve(query))[:k]


@lru_cache(maxsize=256)
def page_labels(path: str, sha256: str) -> tuple[str, ...]:
    """Each physical page's printed label, read with PyMuPDF (``Page.get_label``) once per document version;
    a PDF that defines no labels numbers its pages "1", "2", … (as pypdf, and so PDFReader, does)."""
    import pymupdf  # arms read the page store, which needs PyMuPDF already

    with pymupdf.open(path) as pdf:
        if not pdf.get_page_labels():
            return tuple(str(n) for n in range(1, pdf.page_count + 1))
        return tuple(page.get_label() for page in pdf)


def physical(label: str, doc: str, text: str, arm: Caller) -> int:
    """The physical page (1-based) of ``doc`` that prints ``label``: the only one, or, where labels repeat,
    the only one of them whose text holds the node's ``text``. Anything else is an error of the query."""
    d = arm.corpus.document(doc)
    labels = page_labels(str(arm.corpus.path(d)), d.sha256)
    pages = [n for n, printed in enumerate(labels, 1) if printed == label]
    if not pages:
        raise AnswerError(f"page label {label!r} is on none of the {len(labels)} pages of {doc!r} "
                          f"(they are labelled {labels[0]!r}…{labels[-1]!r})")
    if len(pages) == 1:
        return pages[0]
    texts = arm.page_texts(doc)
    holding = [n for n in pages if contains(texts[n - 1], text)]
    if len(holding) != 1:
        raise AnswerError(f"page label {label!r} is on pages {pages} of {doc!r}, and the node's text is on "
                          f"{'none' if not holding else holding} of them")
    return holding[0]


def _convert(item: Any, arm: Caller) -> Chunk | None:
    module = sys.modules.get("llama_index.core.schema")
    if module is None or not isinstance(item, module.NodeWithScore):
        return None
    node, meta = item.node, item.node.metadata
    text = node.get_content()
    named = meta.get("file_name") or meta.get("file_path")
    if not named:
        raise AnswerError(f"LlamaIndex node {node.node_id} has no metadata 'file_name' or 'file_path' naming its file")
    doc = document(named, arm, "LlamaIndex node file")
    if "page_label" in meta:
        return Chunk(doc, text, item.score, page=physical(str(meta["page_label"]), doc, text, arm))
    source = meta.get("source")
    if isinstance(source, str) and source.isdigit():
        return Chunk(doc, text, item.score, page=int(source))
    return unpaged(doc, text, item.score, getattr(node, "start_char_idx", None), arm)


ADAPTER = Adapter(
    "llamaindex",
    "LlamaIndex node metadata as PDFReader, SimpleDirectoryReader and PyMuPDFReader set it: 'file_name' (else "
    "the file name of 'file_path') is the corpus document; 'page_label' is a printed page label, resolved on "
    "the PDF's own page labels (PyMuPDF Page.get_label(); a PDF without labels numbers its pages 1, 2, ...) "
    "to the one physical page carrying it, or, where several carry it, to the one of them whose text holds "
    "the node's text; else 'source' (PyMuPDFReader) is the 1-based physical page; with neither, the node "
    "lies at start_char_idx of evalkit's text of the document where that text is the node's, else on the "
    "pages its text is found on; a label on no page is an error; the node's score is its score, else rank "
    "order; the first k nodes of retrieve(query)",
    _ask, _convert)

"""LangChain retrievers: any ``langchain_core.retrievers.BaseRetriever``, read in the page convention of
LangChain's PDF loaders (``PyPDFLoader`` and ``PyMuPDFLoader`` of langchain_community set ``source`` to the
file path and, in their default ``mode="page"``, ``page`` to the 0-based page index; ``mode="single"`` gives
one document without ``page``). LangChain is never imported here: a retriever of it can only exist once the
user has imported it."""
from __future__ import annotations

import numbers
import sys
from typing import Any

from ..answers import AnswerError
from ..records import Chunk
from .protocol import Adapter, Caller, document, unpaged

SCORES = ("score", "relevance_score")  # where retrievers that score (vector stores, rerankers) put it


def claims(target: Any) -> bool:
    module = sys.modules.get("langchain_core.retrievers")
    return module is not None and isinstance(target, module.BaseRetriever)


def _ask(target: Any, query: str, k: int, params: dict) -> list[Any]:
    """The first k documents of ``invoke`` (a retriever returns as many as it is set to); parameters go to
    ``invoke``, which passes them to retrievers that take extra arguments."""
    return list(target.invoke(query, **params))[:k]


def _convert(item: Any, arm: Caller) -> Chunk | None:
    module = sys.modules.get("langchain_core.documents")
    if module is None or not isinstance(item, module.Document):
        return None
    meta = item.metadata
    if "source" not in meta:
        raise AnswerError(f"LangChain document ({item.page_content[:40]!r}…) has no metadata 'source' naming its file")
    doc = document(meta["source"], arm, "LangChain document source")
    score = next((meta[key] for key in SCORES if key in meta), None)
    page = meta.get("page")
    if page is None:
        return unpaged(doc, item.page_content, score, meta.get("start_index"), arm)
    if not isinstance(page, numbers.Integral) or isinstance(page, bool):
        raise AnswerError(f"LangChain document of {doc!r}: metadata page {page!r} is not a 0-based page index")
    return Chunk(doc, item.page_content, score, page=int(page) + 1)


ADAPTER = Adapter(
    "langchain",
    "LangChain Document metadata as PyPDFLoader and PyMuPDFLoader set it: 'source' is a file path, whose file "
    "name is the corpus document; 'page' is the 0-based physical page (page + 1); without 'page' "
    "(mode='single', or a loader that sets none) the chunk lies at 'start_index' of evalkit's text of the "
    "document where that text is the chunk's, else on the pages its text is found on; metadata 'score' or "
    "'relevance_score' is its score, else rank order; the first k documents of invoke(query)",
    _ask, _convert)

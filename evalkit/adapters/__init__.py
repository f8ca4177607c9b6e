"""How a retriever from another library is asked, and how its answer names documents and pages.

Each adapter declares its page convention once (:attr:`Adapter.convention`); the run's manifest shows it
beside the arm. Mapping pages is where silent errors come from (0-based pages, printed page labels), so an
item that names a document or page outside the corpus is an error of its query, never a silent miss.
Adapters recognise a retriever by its type without importing its library (:mod:`.langchain`,
:mod:`.llamaindex`): evalkit works, and imports nothing more, where neither is installed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import langchain, llamaindex
from .protocol import PLAIN, Adapter

__all__ = ["ADAPTERS", "PLAIN", "Adapter", "detect"]

# adapters tried in order by :func:`detect`; each claims the retrievers it knows by their type
ADAPTERS: list[tuple[Callable[[Any], bool], Adapter]] = [
    (langchain.claims, langchain.ADAPTER), (llamaindex.claims, llamaindex.ADAPTER)]


def detect(target: Any) -> Adapter:
    """The adapter for a retriever: the first whose test claims it, else :data:`PLAIN` (a function
    ``(query, k, **params)`` or an object with ``search(query, k, **params)``)."""
    for claims, adapter in ADAPTERS:
        if claims(target):
            return adapter
    if not (callable(target) or callable(getattr(target, "search", None))):
        raise TypeError(f"cannot make an arm of {type(target).__name__}: want a function (query, k) -> hits, "
                        "an object with search(query, k), or a LangChain or LlamaIndex retriever")
    return PLAIN

"""How a retriever from another library is asked, and how its answer names documents and pages.

Each adapter declares its page convention once (:attr:`Adapter.convention`); the run's manifest shows it
beside the arm. Mapping pages is where silent errors come from (0-based pages, printed page labels), so an
item that names a document or page outside the corpus is an error of its query, never a silent miss.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .records import Chunk

if TYPE_CHECKING:
    from .arms.function import FunctionArm


@dataclass(frozen=True)
class Adapter:
    """``ask(target, query, k, params)`` returns the retriever's answer items; ``convert(item, arm)`` makes one
    item a :class:`Chunk` (None: not this adapter's kind of item, so evalkit's own forms are tried)."""

    name: str
    convention: str
    ask: Callable[[Any, str, int, dict], Iterable[Any]]
    convert: Callable[[Any, "FunctionArm"], Chunk | None]


def _ask_plain(target: Any, query: str, k: int, params: dict) -> Iterable[Any]:
    if callable(target) and not hasattr(target, "search"):
        return target(query, k, **params)
    return target.search(query, k, **params)


PLAIN = Adapter(
    "python",
    "hits name a document of the corpus and its 1-based physical page; chunks as evalkit.Chunk",
    _ask_plain, lambda item, arm: None)

# adapters tried in order by :func:`detect`; each claims the retrievers it knows by their type
ADAPTERS: list[tuple[Callable[[Any], bool], Adapter]] = []


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

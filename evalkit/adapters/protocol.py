"""The adapter record, the plain protocol, and what every library adapter needs: a file path read as a
document of the corpus, and a chunk without a page placed by its offset where that offset can be trusted."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..answers import AnswerError
from ..records import Chunk

if TYPE_CHECKING:
    from ..corpora import Corpus


class Caller(Protocol):
    """What an adapter reads of the arm it serves (a :class:`~evalkit.arms.function.FunctionArm`, which
    imports the adapters): the corpus, and a document's text page by page or whole."""

    corpus: Corpus

    def page_texts(self, doc: str) -> tuple[str, ...]: ...

    def document_text(self, doc: str) -> str: ...


@dataclass(frozen=True)
class Adapter:
    """``ask(target, query, k, params)`` returns the retriever's answer items; ``convert(item, arm)`` makes one
    item a :class:`Chunk` (None: not this adapter's kind of item, so evalkit's own forms are tried)."""

    name: str
    convention: str
    ask: Callable[[Any, str, int, dict], Iterable[Any]]
    convert: Callable[[Any, Caller], Chunk | None]


def _ask_plain(target: Any, query: str, k: int, params: dict) -> Iterable[Any]:
    if callable(target) and not hasattr(target, "search"):
        return target(query, k, **params)
    return target.search(query, k, **params)


PLAIN = Adapter(
    "python",
    "hits name a document of the corpus and its 1-based physical page; chunks as evalkit.Chunk",
    _ask_plain, lambda item, arm: None)


def document(path: Any, arm: Caller, what: str) -> str:
    """The corpus document a library names by a file path (or a bare file name): its file name. One that is
    not in the corpus is an error of the query, naming the path."""
    name = re.split(r"[/\\]", str(path))[-1]
    try:
        return arm.corpus.document(name).name
    except KeyError:
        raise AnswerError(f"{what} {path!r} is not a document of corpus {arm.corpus.name!r}") from None


def unpaged(doc: str, text: str, score: float | None, start: Any, arm: Caller) -> Chunk:
    """A chunk that names no page: at ``start`` of the document's text when evalkit's text is the chunk's
    text there (a chunk cut from :meth:`evalkit.api.OpenCorpus.text`), else placed where its text is found.
    A library's offset into its own extraction of the PDF is never trusted blindly: it differs from evalkit's."""
    whole = arm.document_text(doc)
    if isinstance(start, int) and not isinstance(start, bool) and text and whole[start:start + len(text)] == text:
        return Chunk(doc, text, score, start=start, end=start + len(text))
    return Chunk(doc, text, score)

"""Arms from a retriever written in Python: a function, a class, or another library's retriever.

``register(target, name)`` (``ek.arm`` in a notebook) makes a class of :class:`FunctionArm` for it in this
process's registry. Its name carries a digest of the retriever's code, its state and its default
parameters (``bm25@3fa2c1d0``), so two different retrievers never share a label; parameters given in a spec
(``bm25@3fa2c1d0(chunk_words=300)``) are passed to each call, as with any arm.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import marshal
import re
from typing import Any, ClassVar

from .. import answers
from ..adapters import Adapter, detect
from ..records import Answer
from . import Arm, ArmError, register as register_class

_NAME = re.compile(r"[A-Za-z][\w.-]*")
_SIMPLE = (str, int, float, bool, type(None))


def _source(obj: Any) -> bytes:
    """The code an arm runs: its source where Python can find it (a notebook cell's included), else its
    compiled code; a class whose source Python cannot find (one of a notebook cell) by its own methods'."""
    try:
        return inspect.getsource(obj).encode()
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is not None:
            return marshal.dumps(code)
        methods = [_source(v) for _, v in sorted(vars(obj).items())
                   if inspect.isfunction(v)] if inspect.isclass(obj) else []
        return b"\0".join([f"{obj.__module__}.{obj.__qualname__}".encode(), *methods])


def _state(target: Any) -> dict:
    """An object's plain settings (``k=4``, a model name): part of what it answers, so part of its digest.
    Data it holds (an index, a vector store) is not; pass a parameter to tell two indexes apart."""
    attrs = getattr(target, "__dict__", {}) if not inspect.isroutine(target) and not inspect.isclass(target) else {}
    return {k: v for k, v in sorted(attrs.items()) if not k.startswith("_") and isinstance(v, _SIMPLE)}


def digest(target: Any, params: dict) -> str:
    """Eight hex digits over the retriever's code, its plain settings and its default parameters."""
    code = target if inspect.isroutine(target) or inspect.isclass(target) else type(target)
    h = hashlib.sha256(_source(code))
    h.update(json.dumps([_state(target), params], sort_keys=True, default=repr).encode())
    return h.hexdigest()[:8]


def declared(target: Any) -> dict[str, Any]:
    """The parameters a retriever declares: keyword arguments with plain defaults after ``query`` and ``k``
    (``def bm25(query, k, chunk_words=250)``), read from the function or its ``search`` method."""
    fn = target if callable(target) and not hasattr(target, "search") else getattr(target, "search", None)
    try:
        params = list(inspect.signature(fn).parameters.values())[2:]  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin or a C function: no signature to read
        return {}
    return {p.name: p.default for p in params if isinstance(p.default, _SIMPLE) and p.default is not None
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


class FunctionArm(Arm):
    """An arm around a retriever from this process; subclasses made by :func:`register` set the class
    attributes. Answers are read by :func:`evalkit.answers.from_output`: pages, or chunks placed on pages."""

    target: ClassVar[Any] = None
    adapter: ClassVar[Adapter]
    collapse: ClassVar[bool] = False
    travels = False

    def search(self, query: str, k: int) -> Answer:
        output = self.adapter.ask(self.target, query, k, self.params)
        return answers.from_output(output, self.layout, self.collapse, lambda item: self.adapter.convert(item, self), k)

    def layout(self, doc: str) -> answers.Layout:
        """A document's pages as chunks are placed on them (KeyError: not in the corpus), read once per arm."""
        cache = self.__dict__.setdefault("_layouts", {})
        if doc not in cache:
            cache[doc] = answers.Layout(tuple(self.store.texts(self.corpus.document(doc))))
        return cache[doc]

    def page_texts(self, doc: str) -> tuple[str, ...]:
        """A document's page texts (KeyError: not in the corpus)."""
        return self.layout(doc).texts

    def document_text(self, doc: str) -> str:
        """A document's whole text, its page texts joined as chunk spans index it."""
        return self.layout(doc).text

    def describe(self) -> dict:
        t = self.target
        module = getattr(t, "__module__", None) or type(t).__module__
        return {"retriever": f"{module}.{getattr(t, '__qualname__', type(t).__qualname__)}",
                "adapter": self.adapter.name, "pages": self.adapter.convention, "chunks": answers.CHUNK_RULE,
                "collapse": self.collapse}


def register(target: Any, name: str | None = None, collapse: bool = False, **params: Any) -> str:
    """Register a retriever as an arm of this process and return its spec (``NAME@DIGEST``). Its parameters
    are the keyword arguments it declares (:func:`declared`), with ``params`` as their defaults, passed to
    every call; ``collapse`` declares that its page hits may repeat a page (chunks of one page), which then
    ranks at its best hit."""
    name = name or getattr(target, "__name__", None) or type(target).__name__
    if not _NAME.fullmatch(name):
        raise ArmError(f"arm name {name!r}: want letters, digits, '_', '.' or '-', starting with a letter")
    adapter = detect(target)
    defaults = {**(declared(target) if adapter.name == "python" else {}), **params}
    cls = type(f"FunctionArm_{name}", (FunctionArm,), {
        "name": f"{name}@{digest(target, {**defaults, 'collapse': collapse})}", "defaults": defaults,
        # staticmethod: a function stays itself, not a method bound to the arm
        "target": staticmethod(target), "adapter": adapter, "collapse": collapse, "__module__": __name__})
    return register_class(cls)

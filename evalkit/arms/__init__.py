"""Retriever arms: one protocol, a registry of built-ins, and plug-ins from the ``evalkit.arms`` entry points.

An arm is built from a corpus whose pages are in the page store and answers ``search(query, k) -> Answer``.
Every arm gives a total order (ties are broken explicitly, never by dict or sort stability), so the top k
is a prefix of the top k' for k < k'. An arm declares its parameters with defaults; its canonical name
lists the non-default ones (``keyword(idf_scope=corpus)``), and that string labels every output.

Writing an arm in another package::

    class MyArm(evalkit.arms.Arm):
        name = "mine"
        defaults = {"depth": 50}
        def __init__(self, corpus, store, **params): super().__init__(corpus, store, **params); ...
        def search(self, query, k): return Answer(hits=(...))

    # pyproject.toml
    [project.entry-points."evalkit.arms"]
    mine = "mypackage:MyArm"
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import ClassVar

from ..corpora import Corpus
from ..pages import PageStore
from ..records import Answer
from ..specs import ArmError, Configurable, is_function, lookup, parse_spec


class ArmFailure(RuntimeError):
    """An arm that cannot go on (its server died twice, its warm-up failed); the run stops with this message
    and what it recorded so far is kept for ``--resume``."""


class Arm(Configurable):
    """Base class of every arm: a :class:`Configurable` that answers ``search(query, k)``."""

    # an arm whose class a Dask worker can import by name (built-ins, plug-ins); a notebook's cannot
    travels: ClassVar[bool] = True

    def search(self, query: str, k: int) -> Answer:  # pragma: no cover - the protocol
        raise NotImplementedError

    def prepare(self) -> None:
        """Get ready to answer: start a server, warm up. The runner calls it on the instance that answers,
        before its first timed query, and never on an instance it builds only to read its label (under an
        executor the workers answer); building an arm stays cheap. The default has nothing to do."""

    def describe(self) -> dict:
        """What the manifest should record about this arm beyond its parameters (an external server's
        version, say); asked after the arm has answered every query."""
        return {}

    def close(self) -> None:
        """Release what the arm holds (processes, threads); the runner calls it when the arm is done."""

    def __repr__(self) -> str:
        return f"<arm {self.label} on {self.corpus.name}>"


def builtin() -> dict[str, type[Arm]]:
    from .admit import AdmitArm
    from .global_index import GlobalIndexArm
    from .hybrid import HybridArm
    from .keyword import KeywordArm
    from .learned import LearnedArm
    from .mcp import McpArm
    from .score_merge import ScoreMergeArm
    from .semantic import SemanticArm

    return {a.name: a for a in (KeywordArm, GlobalIndexArm, ScoreMergeArm, SemanticArm, HybridArm, AdmitArm,
                                McpArm, LearnedArm)}


_LOCAL: dict[str, type[Arm]] = {}  # arms registered in this process (a notebook's functions)


def register(cls: type[Arm]) -> str:
    """Make ``cls`` known by its name in this process (``ek.arm`` registers a notebook's retriever this way).
    A built-in's name is refused; a name registered again replaces the earlier class (a notebook cell run
    twice: the name carries a digest of the code, so the same name is the same code)."""
    if cls.name in builtin():
        raise ArmError(f"arm name {cls.name!r} is a built-in arm's: choose another name")
    _LOCAL[cls.name] = cls
    return cls.name


class Registry(Mapping[str, type[Arm]]):
    """Every arm by name: the built-ins, this process's registered arms, then plug-ins from the
    ``evalkit.arms`` entry point group, each imported only when asked for, so a plug-in that cannot be
    imported breaks only the runs that name it (its error names the entry point and its distribution)."""

    def __init__(self) -> None:
        self._arms: dict[str, type[Arm]] = {**builtin(), **_LOCAL}
        self._plugins = {ep.name: ep for ep in entry_points(group="evalkit.arms") if ep.name not in self._arms}
        for ep in entry_points(group="evalkit.arms"):
            if ep.name in builtin():
                raise ArmError(f"plug-in arm {ep.name!r} ({ep.value}) would shadow a built-in arm")

    def __getitem__(self, name: str) -> type[Arm]:
        if name not in self._arms and name in self._plugins:
            ep = self._plugins[name]
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "unknown distribution"
            try:
                self._arms[name] = ep.load()
            except Exception as e:  # noqa: BLE001 - whatever the plug-in's import raises
                raise ArmError(f"plug-in arm {name!r} (entry point {ep.value}, from {dist}) cannot be imported: "
                               f"{type(e).__name__}: {e}") from None
        return self._arms[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._arms, **self._plugins})

    def __len__(self) -> int:
        return len({**self._arms, **self._plugins})


def registry() -> Registry:
    """Every arm by name (:class:`Registry`)."""
    return Registry()


def validate(spec: str) -> tuple[type[Arm], dict[str, str]]:
    """The arm class and raw parameters of ``spec``, checked without building anything (so a run can
    refuse a misspelt arm before it starts)."""
    return lookup(spec, registry(), "arm")


def same_arm(specs: list[str]) -> tuple[str, str] | None:
    """The first two of ``specs`` that name the same arm with the same parameters once defaults are filled
    in (``keyword`` and ``keyword(tiebreak=doc)``): run twice, they would count every query twice."""
    seen: dict[tuple, str] = {}
    for spec in specs:
        cls, params = validate(spec)
        key = (cls.name, tuple(sorted(cls.resolve(params).items())))
        if key in seen:
            return seen[key], spec
        seen[key] = spec
    return None


def make(spec: str, corpus: Corpus, store: PageStore) -> Arm:
    """Build the arm named by ``spec`` (``name`` or ``name(key=value,...)``) over a corpus."""
    cls, params = validate(spec)
    return cls(corpus, store, **params)

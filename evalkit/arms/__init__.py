"""Retriever arms: one protocol, a registry of built-ins, and plug-ins from the ``evalkit.arms`` entry points.

An arm is built from a corpus whose pages are in the page store and answers ``search(query, k) -> Result``.
Every arm gives a total order (ties are broken explicitly, never by dict or sort stability), so the top k
is a prefix of the top k' for k < k'. An arm declares its parameters with defaults; its canonical name
lists the non-default ones (``keyword(idf_scope=corpus)``), and that string labels every output.

Writing an arm in another package::

    class MyArm(evalkit.arms.Arm):
        name = "mine"
        defaults = {"depth": 50}
        def __init__(self, corpus, store, **params): super().__init__(corpus, store, **params); ...
        def search(self, query, k): return Result(hits=(...))

    # pyproject.toml
    [project.entry-points."evalkit.arms"]
    mine = "mypackage:MyArm"
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any, ClassVar, TypeVar

from ..corpora import Corpus
from ..pages import PageStore
from ..records import Result
from ..specs import ArmError, is_function, parse_spec


class ArmFailure(RuntimeError):
    """An arm that cannot go on (its server died twice, its warm-up failed); the run stops with this message
    and what it recorded so far is kept for ``--resume``."""


class Configurable:
    """Parameter declaration, validation and the canonical name: shared by arms and admission policies
    (:mod:`evalkit.arms.policies`), so both read and print the same spec grammar."""

    kind: ClassVar[str] = "arm"  # what error messages call it
    name: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    unlabelled: ClassVar[frozenset[str]] = frozenset()  # parameters that cannot change results (paths, speed)
    choices: ClassVar[dict[str, tuple]] = {}  # parameters with a closed set of values
    minimum: ClassVar[dict[str, int]] = {}  # numeric parameters with a lower bound (a depth of 0 answers nothing)

    def __init__(self, corpus: Corpus, store: PageStore, **params: Any):
        self.params = self.resolve(params)
        self.corpus, self.store = corpus, store

    @classmethod
    def resolve(cls, params: dict[str, Any]) -> dict[str, Any]:
        """All parameters, defaults filled in and values coerced to the defaults' types; unknown names and
        values outside ``choices`` or below ``minimum`` raise ArmError naming the arm and the parameter."""
        unknown = sorted(set(params) - set(cls.defaults))
        if unknown:
            raise ArmError(f"{cls.kind} {cls.name!r} has no parameter {unknown[0]!r} "
                           f"(parameters: {', '.join(cls.defaults) or 'none'})")
        resolved = {k: _coerce(cls, k, cls.defaults[k], params.get(k, cls.defaults[k])) for k in cls.defaults}
        for key, allowed in cls.choices.items():
            if key in resolved and resolved[key] not in allowed:
                raise ArmError(f"{cls.kind} {cls.name!r}: parameter {key!r} is {' or '.join(map(repr, allowed))}, "
                               f"not {resolved[key]!r}")
        for key, low in cls.minimum.items():
            if key in resolved and resolved[key] < low:
                raise ArmError(f"{cls.kind} {cls.name!r}: parameter {key!r} must be at least {low}, not {resolved[key]!r}")
        return resolved

    @property
    def label(self) -> str:
        """The canonical name: the name plus every parameter that differs from its default."""
        changed = {k: v for k, v in self.params.items() if v != self.defaults[k] and k not in self.unlabelled}
        if not changed:
            return self.name
        return f"{self.name}({','.join(f'{k}={v}' for k, v in sorted(changed.items()))})"


class Arm(Configurable):
    """Base class of every arm: a :class:`Configurable` that answers ``search(query, k)``."""

    # an arm whose class a Dask worker can import by name (built-ins, plug-ins); a notebook's cannot
    travels: ClassVar[bool] = True

    def search(self, query: str, k: int) -> Result:  # pragma: no cover - the protocol
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


def _coerce(owner: type[Configurable], key: str, default: Any, value: Any) -> Any:
    if default is None or isinstance(value, type(default)) and not isinstance(value, bool) ^ isinstance(default, bool):
        return value
    try:
        if isinstance(default, bool):
            if str(value).lower() in ("1", "true", "yes"):
                return True
            if str(value).lower() in ("0", "false", "no"):
                return False
            raise ValueError
        return type(default)(value)
    except (TypeError, ValueError):
        raise ArmError(f"{owner.kind} {owner.name!r}: parameter {key!r} wants a {type(default).__name__}, "
                       f"got {value!r}") from None


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


C = TypeVar("C", bound=type[Configurable])  # an arm class or a policy class


def lookup(spec: str, known: Mapping[str, C], kind: str) -> tuple[C, dict[str, str]]:
    """The class ``spec`` names in ``known`` (a registry of arms or policies) and its raw parameters,
    checked without building anything."""
    name, params = parse_spec(spec)
    if name not in known and kind == "arm" and is_function(name):
        raise ArmError(f"arm {name!r} is a notebook function (ek.arm), not registered in this process: "
                       "running or re-timing it needs the notebook that registered it (run this there), or make "
                       "it a plug-in arm (docs/your-retriever.md)")
    if name not in known:
        raise ArmError(f"unknown {kind} {name!r} (known: {', '.join(sorted(known))})")
    known[name].resolve(params)
    return known[name], params


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

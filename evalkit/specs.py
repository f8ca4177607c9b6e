"""The spec grammar that names arms, admission policies and pooling strategies: ``NAME`` or
``NAME(key=value,...)``, values nesting (``hybrid(keyword=keyword(idf_scope=corpus))``), and the declared,
validated parameters behind it (:class:`Configurable`, :func:`lookup`). Apart from the arms, so a module that
reads labels in a results directory (the refusal report, pooling replays, the gate with a judge) parses them
without importing the arms and the page store."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .text import split_top

if TYPE_CHECKING:
    from .corpora import Corpus
    from .pages import PageStore


class ArmError(ValueError):
    """An arm name or parameter that cannot be used; the message names the arm and the parameter."""


_SPEC = re.compile(r"^\s*([\w.@-]+)\s*(?:\((.*)\))?\s*$", re.S)
# The name ``ek.arm`` gives a retriever of one Python process: NAME@DIGEST (:mod:`evalkit.arms.function`)
_FUNCTION = re.compile(r"[A-Za-z][\w.-]*@[0-9a-f]{8}")


def is_function(spec: str) -> bool:
    """Whether ``spec`` names a retriever registered with ``ek.arm`` (``NAME@DIGEST``): a record of code that
    lived in one process (a notebook), which no other process can resolve by name."""
    m = _SPEC.match(spec)
    return bool(m and _FUNCTION.fullmatch(m.group(1)))


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"hybrid(keyword=keyword(idf_scope=corpus),depth=50)"`` -> ``("hybrid", {...})``; values may nest."""
    m = _SPEC.match(spec)
    if not m:
        raise ArmError(f"cannot read arm {spec!r}: want NAME or NAME(key=value,...)")
    name, body = m.group(1), m.group(2) or ""
    params: dict[str, str] = {}
    for part in split_top(body, ","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise ArmError(f"arm {spec!r}: parameter {part.strip()!r} has no '='")
        params[key.strip()] = value.strip()
    return name, params


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
                raise ArmError(f"{cls.kind} {cls.name!r}: parameter {key!r} must be at least {low}, not "
                               f"{resolved[key]!r}")
        return resolved

    @property
    def label(self) -> str:
        """The canonical name: the name plus every parameter that differs from its default."""
        changed = {k: v for k, v in self.params.items() if v != self.defaults[k] and k not in self.unlabelled}
        if not changed:
            return self.name
        return f"{self.name}({','.join(f'{k}={v}' for k, v in sorted(changed.items()))})"


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

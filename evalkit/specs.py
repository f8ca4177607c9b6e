"""The spec grammar that names arms and admission policies: ``NAME`` or ``NAME(key=value,...)``, values
nesting (``hybrid(keyword=keyword(idf_scope=corpus))``). Apart from the arms, so a module that reads labels
in a results directory (the refusal report) parses them without importing the arms and the page store."""
from __future__ import annotations

import re

from .text import split_top


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

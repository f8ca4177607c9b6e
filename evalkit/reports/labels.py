"""How an arm and a measure are named on the page: display labels short enough for a figure, and a
note saying which shortened label stands for which arm."""
from __future__ import annotations

from collections.abc import Sequence

from .. import escape as esc
from ..display import Markdown
from ..text import split_top

MEASURE_LABELS = {"nDCG@10": "nDCG@10 page", "nDCG@10(doc)": "nDCG@10 doc"}
LONG_PARAM = 24  # a parameter longer than this (a model path) is left out of an arm's display label


def short_labels(arms: Sequence[str]) -> dict[str, str]:
    """Arm label -> the label figures and prose show: parameters longer than :data:`LONG_PARAM` characters
    left out (``semantic(model=sentence-transformers/all-MiniLM-L6-v2)`` -> ``semantic``), unless two arms
    would then look alike; tables and provenance keep the full labels, :func:`label_note` says what was cut."""
    out = {}
    for a in arms:
        name, paren, rest = a.partition("(")
        kept = [p for p in split_top(rest[:-1], ",") if len(p) <= LONG_PARAM] if paren and rest.endswith(")") else None
        out[a] = a if kept is None else f"{name}({','.join(kept)})" if kept else name
    clash = [a for a in arms if list(out.values()).count(out[a]) > 1 or (out[a] != a and out[a] in arms)]
    return {a: a if a in clash else out[a] for a in arms}


def label_note(arms: Sequence[str]) -> Markdown:
    """One line saying which shortened display label stands for which arm ("" when none is shortened)."""
    cut = [(s, a) for a, s in short_labels(arms).items() if s != a]
    return Markdown(("_In figures and in this text, " + "; ".join(f"{esc.code(s)} is {esc.code(a)}" for s, a in cut)
                     + "._") if cut else "")

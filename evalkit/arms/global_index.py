"""global-index: one corpus-wide FTS5 table ranked by bm25(), built once per corpus and cached."""
from __future__ import annotations

from ..records import Hit, Result
from . import Arm
from .lexical import GlobalIndex, query_terms


class GlobalIndexArm(Arm):
    name = "global-index"
    defaults = {}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.global_index = GlobalIndex(store, corpus)

    def search(self, query: str, k: int) -> Result:
        return Result(tuple(Hit(d, p, s) for d, p, s in self.global_index.bm25(query_terms(query), k)))

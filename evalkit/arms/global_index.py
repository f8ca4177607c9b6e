"""global-index: one corpus-wide FTS5 table ranked by bm25(), built once per corpus and cached.

``prf=N`` expands the query by pseudo-relevance feedback from its N best pages (RM3,
:mod:`evalkit.arms.feedback`): ``prf_terms`` expansion terms, the original words keeping ``prf_weight`` of
the query's weight. ``prf=0`` (the default) is plain BM25.
"""
from __future__ import annotations

from ..records import Answer, Hit
from . import Arm, ArmError
from .feedback import Feedback
from .lexical import GlobalIndex, query_terms


class GlobalIndexArm(Arm):
    name = "global-index"
    defaults = {"prf": 0, "prf_terms": 10, "prf_weight": 0.5}
    minimum = {"prf": 0, "prf_terms": 1}

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        if not 0.0 <= resolved["prf_weight"] <= 1.0:
            raise ArmError("arm 'global-index': prf_weight is the original query's share, in [0, 1], not "
                           f"{resolved['prf_weight']}")
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.global_index = GlobalIndex(store, corpus)
        p = self.params
        self.feedback = Feedback(self.global_index, store, corpus, p["prf"], p["prf_terms"],
                                 p["prf_weight"]) if p["prf"] else None

    def search(self, query: str, k: int) -> Answer:
        terms = query_terms(query)
        hits = self.feedback.ranked(terms, k) if self.feedback and terms else self.global_index.bm25(terms, k)
        return Answer(tuple(Hit(d, p, s) for d, p, s in hits))

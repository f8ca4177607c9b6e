"""score-merge (a control, not a recommendation): per-document BM25 scores merged by raw value.

This is the design the merge trap describes: each document's index has its own IDF and length statistics,
so a score of 7 in one document and 7 in another mean different things. It exists so a benchmark can
show the trap next to rank fusion.
"""
from __future__ import annotations

from ..records import Answer, Hit
from .keyword import KeywordArm
from .lexical import query_terms


class ScoreMergeArm(KeywordArm):
    name = "score-merge"
    defaults = {"idf_scope": "doc"}

    def search(self, query: str, k: int) -> Answer:
        terms = query_terms(query)
        if not terms:
            return Answer()
        merged = [(doc, page, score) for doc, pages in self.per_document(terms, k).items() for page, score in pages]
        merged.sort(key=lambda h: (-h[2], self.sha[h[0]], h[1]))
        return Answer(tuple(Hit(*h) for h in merged[:k]))

"""conformal: a refusal threshold the user's own corpus sets, with no judgments.

Any label-free policy's confidence (``spread`` by default) is turned into a conformal p-value against
pseudo-queries the corpus answers by construction: ``n`` passages of ``words`` consecutive words, each from
a page drawn at random (seeded; pages in content order, so file names play no part). A query's confidence
is p = (1 + #{pseudo-queries scoring ≤ it}) / (n + 1). Refusing when p ≤ α refuses at most a share α of
queries drawn like the pseudo-queries (split conformal prediction: the bound needs exchangeability, no
model and no fit), so ``admit(…,policy=conformal,threshold=0.05)`` carries a wrongful-refusal bound to any
corpus, where a threshold on the raw confidence chosen on one corpus is a guess on the next. The bound
holds for real questions only as far as they look to the policy like passages of the corpus; docs/refusal.md
reports how far that is on the shipped sets.

``words=0`` compares each query with passages of its own length (whitespace words): Mondrian conformal
prediction, one calibration set per length, drawn when a query of that length first comes. A query's
spread depends on its length, and questions are longer than the default 12-word passages: calibrated on
those, the bound is far looser than promised for real questions (docs/refusal.md). Each new length costs
``n`` pseudo-queries' confidences (embeddings), once per arm.
"""
from __future__ import annotations

import math

import numpy as np

from ..records import Result
from . import ArmError
from .policies import Policy, Verdict, make_policy, validate


def pseudo_queries(pages: list[str], n: int, words: int, seed: int) -> list[str]:
    """``n`` passages of ``words`` consecutive whitespace-separated words, each from a page drawn uniformly
    (with replacement) among the pages that have that many words, at a uniform start. Deterministic in
    ``seed`` and the order of ``pages``."""
    split = [p.split() for p in pages]
    usable = [s for s in split if len(s) >= words]
    if not usable:
        return []
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.integers(0, len(usable), n).tolist():
        start = int(rng.integers(0, len(usable[i]) - words + 1))
        out.append(" ".join(usable[i][start:start + words]))
    return out


def p_value(calibration: np.ndarray, score: float) -> float:
    """Conformal p-value of ``score`` among ``calibration`` (sorted ascending): (1 + #{c ≤ score}) / (n + 1).
    Ties count for the query, so a refusal at p ≤ α stays within α."""
    return (1 + int(np.searchsorted(calibration, score, side="right"))) / (len(calibration) + 1)


class ConformalPolicy(Policy):
    """The p-value of ``policy``'s confidence among the corpus's own pseudo-queries (module docstring)."""

    name = "conformal"
    defaults = {"policy": "spread", "n": 200, "words": 12, "seed": 0}
    minimum = {"n": 19, "words": 0}  # 19: the least n at which p can reach 0.05; words 0: the query's length

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        validate(resolved["policy"])
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.base = make_policy(self.params["policy"], corpus, store)
        if self.base.depth:
            raise ArmError(f"policy 'conformal': policy={self.base.label} reads the arm's ranking; "
                           "a pseudo-query has none (use a policy that reads the corpus: spread, semantic, idf-mass)")
        self.params["policy"] = self.base.label
        self.corpus_name = corpus.name
        self.pages = [t for d in sorted(corpus.documents, key=lambda d: d.sha256) for t in store.texts(d)]
        self.by_length = {}  # words -> sorted confidences of that many words' passages
        if self.params["words"]:  # drawn now, so a corpus too short for them fails when the arm is built
            self.passages(self.params["words"])

    def passages(self, words: int) -> np.ndarray:
        """The base policy's confidences on ``n`` pseudo-queries of ``words`` words, sorted (cached)."""
        if words not in self.by_length:
            p = self.params
            got = np.sort([self.base.assess(q, Result()).confidence
                           for q in pseudo_queries(self.pages, p["n"], words, p["seed"])])
            if not len(got):
                raise ArmError(f"policy 'conformal': no page of {self.corpus_name} has {words} words to draw a "
                               "pseudo-query from")
            self.by_length[words] = got
        return self.by_length[words]

    def assess(self, query: str, result: Result) -> Verdict:
        v = self.base.assess(query, result)
        if v.confidence == -math.inf:  # a veto stays one
            return Verdict(-math.inf, v.measure, v.evidence)
        words = self.params["words"] or max(1, len(query.split()))
        calibration = self.passages(words)
        among = f"among {len(calibration)} {words}-word passages of the corpus"
        return Verdict(p_value(calibration, v.confidence), f"p-value of {v.measure} {among}", v.evidence)

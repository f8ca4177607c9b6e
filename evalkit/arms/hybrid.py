"""hybrid: a keyword ranking and the semantic ranking fused, optionally with a document profile.

``fusion=rrf`` (the default): Reciprocal Rank Fusion, k = ``rrf_k``; a page in both lists adds both
contributions, 1/(k + r_keyword) + 1/(k + r_semantic), each weighted by twice its share (``weight`` is the
semantic share, default 0.5, so the default weights are 1 and 1). ``fusion=convex``: the convex
combination (1 − weight)·keyword + weight·semantic of scores normalised per query (``norm``: min-max,
z-score, or theoretical min-max with 0 as BM25's least score and −1 as a cosine's; Bruch et al., TOIS
2023).

``profile > 0`` adds a third input with that weight: documents ranked by their profile
(:mod:`evalkit.arms.profile`: the cosine of the query with the document's first ``profile_windows``
windows). It acts as a document prior: every candidate page gets its document's profile rank (RRF) or
score (convex), and the best page of each document joins the candidates, so a document whose opening
matches the question can enter a list its body pages missed (pdf-mcp's hybrid does the same with weight
0.25). Each input list is cut at ``depth`` whatever k is asked for, so the top k stays a prefix of the top
k'. Equal fused scores are ordered as in the keyword arm: by the document's content score, then sha256,
then page. The keyword and semantic rankings are computed concurrently (SQLite and onnxruntime release the
GIL).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..fusion import NORMS, convex, diversify, weighted_rrf
from ..records import Answer, Hit
from . import Arm, ArmError, make
from .lexical import GlobalIndex, query_terms
from .profile import DocumentCentroid, DocumentProfile

LOWER = {"keyword": 0.0, "semantic": -1.0, "profile": -1.0, "centroid": -1.0}  # least: BM25 and RRF, a cosine
PRIORS = ("profile", "centroid")  # the inputs that rank documents, not pages


class HybridArm(Arm):
    name = "hybrid"
    # the semantic input embeds the query on one core while the keyword input runs on the other
    defaults = {"keyword": "keyword", "semantic": "semantic(query_threads=1)", "depth": 100, "rrf_k": 60,
                "fusion": "rrf", "weight": 0.5, "norm": "minmax", "profile": 0.0, "profile_windows": 1,
                "centroid": 0.0, "diversify": 0}
    choices = {"fusion": ("rrf", "convex"), "norm": NORMS}
    minimum = {"depth": 1, "rrf_k": 0, "profile_windows": 1, "diversify": 0}

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        if not 0.0 <= resolved["weight"] <= 1.0 or min(resolved[p] for p in PRIORS) < 0:
            raise ArmError("arm 'hybrid': weight is the semantic share, in [0, 1], and profile and centroid "
                           "weights >= 0")
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.keyword = make(self.params["keyword"], corpus, store)
        self.semantic = make(self.params["semantic"], corpus, store)
        made = {"profile": lambda: DocumentProfile(self.semantic, self.params["profile_windows"]),
                "centroid": lambda: DocumentCentroid(self.semantic)}
        self.priors = {p: made[p]() for p in PRIORS if self.params[p] > 0}
        self.index = getattr(self.keyword, "global_index", None) or GlobalIndex(store, corpus)
        self.sha = {d.name: d.sha256 for d in corpus.documents}
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="hybrid")

    def prepare(self) -> None:
        self.keyword.prepare()
        self.semantic.prepare()

    def close(self) -> None:
        self.keyword.close()
        self.semantic.close()

    def inputs(self, query: str) -> dict[str, dict[tuple[str, int], float]]:
        """Each input's (doc, page) -> score, in rank order: keyword, semantic, and the document priors
        (every candidate page scored as its document; each prior's best documents' best pages added)."""
        depth = self.params["depth"]
        semantic = self.worker.submit(self.semantic.search, query, depth)
        lists = {"keyword": self.keyword.search(query, depth), "semantic": semantic.result()}
        out = {name: {(h.doc, h.page): h.score for h in r.hits} for name, r in lists.items()}
        scored = {name: prior.scores(query) for name, prior in self.priors.items()}
        added = [(d, best[d]) for by_doc, best in scored.values()
                 for d in sorted(by_doc, key=lambda d: (-by_doc[d], self.sha[d]))[:depth]]
        pages = set(out["keyword"]) | set(out["semantic"]) | set(added)
        for name, (by_doc, _) in scored.items():
            order = sorted(pages, key=lambda p: (-by_doc[p[0]], self.sha[p[0]], p[1]))  # no hash order
            out[name] = {p: by_doc[p[0]] for p in order}
        return out

    def fused(self, inputs: dict[str, dict[tuple[str, int], float]]) -> dict[tuple[str, int], float]:
        w = self.params["weight"]
        weights = {"keyword": 1.0 - w, "semantic": w, **{p: self.params[p] for p in PRIORS}}
        names = list(inputs)
        if self.params["fusion"] == "convex":
            return convex([inputs[n] for n in names], [weights[n] for n in names], self.params["norm"],
                          [LOWER[n] for n in names])
        return weighted_rrf([ranks(inputs[n], by_doc=n in PRIORS) for n in names],
                            [weights[n] * (1 if n in PRIORS else 2) for n in names], self.params["rrf_k"])

    def search(self, query: str, k: int) -> Answer:
        fused = self.fused(self.inputs(query))
        content = self.index.content_scores(query_terms(query))
        order = sorted(fused, key=lambda p: (-fused[p], -content.get(p[0], 0.0), self.sha[p[0]], p[1]))
        shown = diversify(order, self.params["diversify"])[:k]
        return Answer(tuple(Hit(doc, page, fused[doc, page]) for doc, page in shown))


def ranks(scores: dict[tuple[str, int], float], by_doc: bool = False) -> dict[tuple[str, int], int]:
    """1-based ranks of a map in rank order; ``by_doc``: every page gets its document's rank among the
    documents (in order of first appearance), so a document prior does not rank one page above another."""
    if not by_doc:
        return {p: r for r, p in enumerate(scores, 1)}
    doc_rank = {d: r for r, d in enumerate(dict.fromkeys(d for d, _ in scores), 1)}
    return {p: doc_rank[p[0]] for p in scores}

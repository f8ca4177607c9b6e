"""hybrid: Reciprocal Rank Fusion (k = 60) of a keyword ranking and the semantic ranking.

A page in both lists adds both contributions, 1/(60 + r_keyword) + 1/(60 + r_semantic). Each input list
is cut at ``depth`` whatever k is asked for, so the top k stays a prefix of the top k'. Equal fused
scores are ordered as in the keyword arm: by the document's content score, then sha256, then page.
Which keyword arm feeds it is a parameter (``hybrid(keyword=global-index)``): which wins depends on
the corpus. The two input rankings are computed concurrently (SQLite and onnxruntime release the GIL).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..fusion import fuse
from ..records import Hit, Result
from . import Arm, make
from .lexical import GlobalIndex, query_terms


class HybridArm(Arm):
    name = "hybrid"
    # the semantic input embeds the query on one core while the keyword input runs on the other
    defaults = {"keyword": "keyword", "semantic": "semantic(query_threads=1)", "depth": 100, "rrf_k": 60}
    minimum = {"depth": 1, "rrf_k": 0}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.keyword = make(self.params["keyword"], corpus, store)
        self.semantic = make(self.params["semantic"], corpus, store)
        self.index = getattr(self.keyword, "global_index", None) or GlobalIndex(store, corpus)
        self.sha = {d.name: d.sha256 for d in corpus.documents}
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="hybrid")

    def prepare(self) -> None:
        self.keyword.prepare()
        self.semantic.prepare()

    def close(self) -> None:
        self.keyword.close()
        self.semantic.close()

    def search(self, query: str, k: int) -> Result:
        depth = self.params["depth"]
        semantic = self.worker.submit(self.semantic.search, query, depth)
        keyword = self.keyword.search(query, depth)
        lists = [[(h.doc, h.page) for h in r.hits] for r in (keyword, semantic.result())]
        content = self.index.content_scores(query_terms(query))
        fused = fuse(lists, tiebreak=lambda dp: (-content.get(dp[0], 0.0), self.sha[dp[0]], dp[1]),
                     k=self.params["rrf_k"])
        return Result(tuple(Hit(doc, page, score) for (doc, page), score in fused[:k]))

"""The local relevance judge: P(gain >= 1), P(gain >= 2), P(gain = 3) for every (query, page) of a query
file's pool, learnt from the person's own grades, offline on CPU, deterministic for a seed.

The judge is a *reader* of a query file, the page store and a results directory; it is never an arm and
never in the arms registry. Modules: :mod:`.features` (what it reads of a page), :mod:`.signals` (the text
signals from the page store: BM25 and the semantic arm's vectors), :mod:`.model` (the fitted model, its
identity and cache), :mod:`.agreement` (cross-fitting by query and the agreement it reports). Named
``autojudge`` so that importing it cannot shadow ``ek.judge``, the judging workbench.
"""

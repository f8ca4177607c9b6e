import numpy as np
import pytest

from evalkit import arms
from evalkit.arms.hybrid import ranks
from evalkit.arms.profile import best_pages, leading_windows

from .test_semantic_hybrid import QUERIES


def test_leading_windows_by_hand():
    # documents 0 (3 windows), 1 (1 window), 2 (2 windows)
    rows, segments = leading_windows(np.array([0, 0, 0, 1, 2, 2]), 2)
    assert rows.tolist() == [0, 1, 3, 4, 5] and segments.tolist() == [0, 2, 3]
    scores = np.array([0.1, 0.5, 0.9, 0.2, 0.4, 0.3])
    assert np.maximum.reduceat(scores[rows], segments).tolist() == [0.5, 0.2, 0.4]


def test_best_pages_by_hand():
    # document 0's pages 1-3 score .2 .7 .7 (the tie goes to page 2); document 1's pages 1-2 .9 .1
    idx = best_pages(np.array([0.2, 0.7, 0.7, 0.9, 0.1]), np.array([0, 0, 0, 1, 1]), np.array([1, 2, 3, 1, 2]))
    assert idx.tolist() == [1, 3]


def test_ranks_of_a_document_prior_are_shared_by_its_pages():
    scores = {("b", 4): 0.9, ("b", 1): 0.9, ("a", 2): 0.5}
    assert ranks(scores) == {("b", 4): 1, ("b", 1): 2, ("a", 2): 3}
    assert ranks(scores, by_doc=True) == {("b", 4): 1, ("b", 1): 1, ("a", 2): 2}


def prior_of(small, spec: str, prior: str, q: str):
    """A hybrid arm's semantic input and one prior's scores for ``q``, which covers every document."""
    c, store = small
    h = arms.make(spec, c, store)
    by_doc, best = h.priors[prior].scores(q)
    assert set(by_doc) == set(best) == {d.name for d in c.documents}
    return h.semantic, by_doc, best


def test_profile_scores_are_the_best_of_each_documents_first_windows(small):
    q = QUERIES[1]
    s, by_doc, best = prior_of(small, "hybrid(keyword=global-index,profile=0.25,profile_windows=2)", "profile", q)
    windows = s.window_scores(q)
    for doc in by_doc:  # brute force over the document's rows
        d = s.doc_names.index(doc)
        pages = np.flatnonzero(s.page_doc_rank == d)
        first, end = s.starts[pages[0]], (s.starts[pages[-1] + 1] if pages[-1] + 1 < len(s.starts) else len(windows))
        assert by_doc[doc] == pytest.approx(windows[first:min(first + 2, end)].max())
        assert best[doc] == s.search(q, 10_000).hits[[h.doc for h in s.search(q, 10_000).hits].index(doc)].page


def test_profile_adds_each_documents_best_page_as_a_candidate(small):
    c, store = small
    h = arms.make("hybrid(keyword=global-index,profile=0.25,depth=3)", c, store)
    inputs = h.inputs(QUERIES[0])
    by_doc, best = h.priors["profile"].scores(QUERIES[0])
    top3 = sorted(by_doc, key=by_doc.get, reverse=True)[:3]  # depth 3: the three best profiles' best pages
    assert len(inputs["keyword"]) == len(inputs["semantic"]) == 3
    assert set(inputs["profile"]) == set(inputs["keyword"]) | set(inputs["semantic"]) | {(d, best[d]) for d in top3}
    # every page scores as its document; pages come in order of their document's profile
    assert all(v == by_doc[p[0]] for p, v in inputs["profile"].items())
    assert list(inputs["profile"].values()) == sorted(inputs["profile"].values(), reverse=True)


def test_convex_hybrid_with_all_weight_on_semantic_ranks_its_list_first(small):
    c, store = small
    arm = arms.make("hybrid(keyword=global-index,fusion=convex,weight=1.0)", c, store)
    q = QUERIES[2]
    sem = [(h.doc, h.page) for h in arm.semantic.search(q, 100).hits]
    assert [(h.doc, h.page) for h in arm.search(q, 10).hits] == sem[:10]


def test_bad_weights_are_refused_naming_the_arm():
    with pytest.raises(arms.ArmError, match="hybrid.*weight"):
        arms.validate("hybrid(weight=1.5)")
    with pytest.raises(arms.ArmError, match="'fusion'"):
        arms.validate("hybrid(fusion=max)")


def test_centroid_scores_are_cosines_with_the_mean_of_each_documents_windows(small):
    q = QUERIES[3]
    s, by_doc, _ = prior_of(small, "hybrid(keyword=global-index,centroid=1)", "centroid", q)
    v = s.embedder.query(q)
    v = v / np.linalg.norm(v)
    runs = np.repeat(s.page_doc_rank, np.diff(np.r_[s.starts, len(s.matrix)]))
    for doc, got in by_doc.items():  # brute force: the mean vector of the document's rows
        mean = s.matrix[runs == s.doc_names.index(doc)].mean(axis=0)
        assert got == pytest.approx(float(mean @ v / np.linalg.norm(mean)), abs=1e-5)


def test_diversify_keeps_the_head_reaches_more_documents_and_keeps_prefixes(small):
    c, store = small
    plain = arms.make("hybrid(keyword=global-index,centroid=1)", c, store)
    spread = arms.make("hybrid(keyword=global-index,centroid=1,diversify=3)", c, store)
    for q in QUERIES:
        before = [(h.doc, h.page) for h in plain.search(q, 10).hits]
        after = [(h.doc, h.page) for h in spread.search(q, 10).hits]
        assert after[:3] == before[:3]
        assert len({d for d, _ in after}) >= len({d for d, _ in before})
        assert [(h.doc, h.page) for h in spread.search(q, 5).hits] == after[:5]
    assert spread.label == "hybrid(centroid=1.0,diversify=3,keyword=global-index)"


def test_a_negative_centroid_weight_is_refused_naming_the_arm():
    with pytest.raises(arms.ArmError, match="hybrid.*centroid"):
        arms.validate("hybrid(centroid=-1)")

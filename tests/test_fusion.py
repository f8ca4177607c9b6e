from hypothesis import given
from hypothesis import strategies as st

import numpy as np

from evalkit.fusion import fuse, fuse_disjoint, round_robin_depth, rrf_scores
from evalkit.measures import ties_at


def test_rrf_is_one_based_with_k_60():
    assert rrf_scores([["a", "b"]]) == {"a": 1 / 61, "b": 1 / 62}


def test_rrf_adds_contributions_of_an_item_in_both_lists():
    s = rrf_scores([["a", "b", "c"], ["c", "a"]])
    assert s == {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61}
    assert [item for item, _ in fuse([["a", "b", "c"], ["c", "a"]], tiebreak=str)] == ["a", "c", "b"]


def test_disjoint_lists_make_tied_bands_ordered_only_by_the_tiebreak():
    per_doc = [["x1", "x2"], ["y1", "y2"], ["z1"]]
    prefer = {"z1": 0, "y1": 1, "x1": 2, "y2": 0, "x2": 1}
    fused = fuse(per_doc, tiebreak=prefer.__getitem__)
    assert fused == [("z1", 1 / 61), ("y1", 1 / 61), ("x1", 1 / 61), ("y2", 1 / 62), ("x2", 1 / 62)]
    assert ties_at([s for _, s in fused], 10) == 5 and ties_at([s for _, s in fused], 2) == 2


def test_other_k():
    assert rrf_scores([["a"]], k=0) == {"a": 1.0}


@given(st.lists(st.lists(st.integers(0, 30), unique=True, max_size=15), max_size=5))
def test_fused_order_is_total_and_scores_never_increase(lists):
    fused = fuse(lists, tiebreak=lambda x: x)
    assert sorted(x for x, _ in fused) == sorted({x for lst in lists for x in lst})
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)


@given(st.lists(st.integers(0, 12), max_size=8), st.integers(1, 40))
def test_round_robin_depth_keeps_the_fused_top_k_of_disjoint_rankings(lengths, k):
    # brute force: fusing the rankings cut at that depth gives the same top k as fusing them whole
    rankings = [[(i, r) for r in range(n)] for i, n in enumerate(lengths)]
    tiebreak = lambda item: (hash(item) % 7, item)  # noqa: E731 - any total order
    depth = round_robin_depth(lengths, k)
    assert fuse([r[:depth] for r in rankings], tiebreak)[:k] == fuse(rankings, tiebreak)[:k]
    if depth > 1:  # and it is the least such depth
        assert sum(min(n, depth - 1) for n in lengths) < k


def test_round_robin_depth_by_hand():
    assert round_robin_depth([5, 5, 5], 3) == 1 and round_robin_depth([5, 5, 5], 4) == 2
    assert round_robin_depth([1, 9], 5) == 4 and round_robin_depth([2, 2], 10) == 2 and round_robin_depth([], 10) == 1


@given(st.lists(st.integers(0, 6), max_size=8), st.integers(0, 3), st.integers(1, 30), st.integers(0, 60))
def test_fuse_disjoint_is_fuse_of_disjoint_rankings(lengths, seed, top, k):
    # items (ranking, position); two tie-break keys with many ties, then a unique one: the brute force is fuse()
    rng = np.random.default_rng(seed)
    items = [(i, r) for i, n in enumerate(lengths) for r in range(n)]
    a, b = rng.integers(0, 2, len(items)), rng.integers(0, 3, len(items)).astype(float)
    key = {item: (a[j], b[j], j) for j, item in enumerate(items)}
    want = fuse([[(i, r) for r in range(n)] for i, n in enumerate(lengths)], key.__getitem__, k)[:top]
    order, scores = fuse_disjoint(np.array([r for _, r in items], int), (a, b, np.arange(len(items))), k, top)
    assert [(items[j], s) for j, s in zip(order.tolist(), scores.tolist())] == want

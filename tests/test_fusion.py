from hypothesis import given
from hypothesis import strategies as st

import numpy as np

from evalkit.fusion import diversify, fuse, fuse_disjoint, round_robin_depth, rrf_scores
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
    assert [(items[j], s) for j, s in zip(order.tolist(), scores.tolist(), strict=True)] == want


# ---- weighted RRF and convex fusion: hand-computed cases ----------------------------------------------------

from evalkit.fusion import convex, normalise, weighted_rrf  # noqa: E402


def test_weighted_rrf_by_hand_with_a_shared_rank():
    # a document prior: pages a and b of one document share its rank 1
    s = weighted_rrf([{"a": 1, "c": 2}, {"a": 1, "b": 1}], weights=[1.0, 0.25], k=60)
    assert s == {"a": 1 / 61 + 0.25 / 61, "c": 1 / 62, "b": 0.25 / 61}


def test_weighted_rrf_with_unit_weights_is_rrf():
    lists = [["a", "b", "c"], ["c", "a"]]
    ranks = [{x: r for r, x in enumerate(lst, 1)} for lst in lists]
    assert weighted_rrf(ranks, [1, 1], k=10) == rrf_scores(lists, k=10)


def test_normalise_by_hand():
    s = np.array([2.0, 4.0, 6.0])
    assert normalise(s, "minmax").tolist() == [0.0, 0.5, 1.0]
    assert np.allclose(normalise(s, "zscore"), [-1.224744871391589, 0.0, 1.224744871391589])  # sd = sqrt(8/3)
    assert normalise(s, "tmm", lower=0.0).tolist() == [2 / 6, 4 / 6, 1.0]
    assert np.allclose(normalise(np.array([0.2, 0.6]), "tmm", lower=-1.0), [1.2 / 1.6, 1.0])
    assert normalise(np.array([3.0, 3.0]), "minmax").tolist() == [1.0, 1.0]
    assert normalise(np.array([3.0]), "zscore").tolist() == [0.0]


def test_convex_min_max_by_hand():
    # lexical: a 10, b 6, c 2 -> 1, .5, 0; semantic: b .9, d .5 -> 1, 0; weight .6 on semantic
    lex, sem = {"a": 10.0, "b": 6.0, "c": 2.0}, {"b": 0.9, "d": 0.5}
    fused = convex([lex, sem], [0.4, 0.6], "minmax")
    assert fused == {"a": 0.4, "b": 0.4 * 0.5 + 0.6, "c": 0.0, "d": 0.0}


def test_convex_z_score_gives_a_missing_item_the_inputs_least_score():
    lex, sem = {"a": 1.0, "b": 3.0}, {"a": 5.0, "c": 1.0, "d": 3.0}
    fused = convex([lex, sem], [0.5, 0.5], "zscore")
    # lex z: a -1, b 1; sem z (sd sqrt(8/3)): a 1.2247, c -1.2247, d 0; b's semantic floor is c's -1.2247
    z = 1.224744871391589
    expect = {"a": 0.5 * -1 + 0.5 * z, "b": 0.5 * 1 + 0.5 * -z, "c": 0.5 * -1 + 0.5 * -z, "d": 0.5 * -1 + 0.0}
    assert fused.keys() == expect.keys() and all(np.isclose(fused[x], expect[x]) for x in expect)


def test_convex_theoretical_min_max_keeps_weak_lists_low():
    # a cosine list of weak scores stays low under tmm (lower bound -1), unlike min-max
    weak = {"a": 0.1, "b": 0.0}
    assert convex([weak], [1.0], "tmm", lower=[-1.0]) == {"a": 1.0, "b": 1.0 / 1.1}
    assert convex([weak], [1.0], "minmax") == {"a": 1.0, "b": 0.0}


def test_convex_rejects_an_unknown_normalisation():
    import pytest
    with pytest.raises(ValueError, match="unknown normalisation 'rank'"):
        convex([{"a": 1.0}], [1.0], "rank")


def test_diversify_by_hand_keeps_the_head_and_brings_new_documents_forward():
    order = [("a", 1), ("a", 2), ("b", 1), ("a", 3), ("c", 4), ("b", 2), ("a", 4), ("d", 1)]
    # head 2: a1 a2 stay; then the first page of each document not yet listed (b, c, d), then the rest in order
    assert diversify(order, 2) == [("a", 1), ("a", 2), ("b", 1), ("c", 4), ("d", 1), ("a", 3), ("b", 2), ("a", 4)]
    # head 3 lists b already: only c and d come forward
    assert diversify(order, 3) == [("a", 1), ("a", 2), ("b", 1), ("c", 4), ("d", 1), ("a", 3), ("b", 2), ("a", 4)]
    assert diversify(order, 0) == order and diversify(order, 99) == order


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers(1, 30)), unique=True, max_size=40),
       st.integers(0, 12))
def test_diversify_is_a_permutation_whose_prefixes_do_not_depend_on_the_cut(order, head):
    out = diversify(order, head)
    assert sorted(out) == sorted(order) and out[:head] == order[:head]
    # every document's own pages keep their order, and no cut at k reaches fewer documents than the input's
    for doc in "abcde":
        assert [p for d, p in out if d == doc] == [p for d, p in order if d == doc]
    for k in range(head, len(order) + 1):
        assert len({d for d, _ in out[:k]}) >= len({d for d, _ in order[:k]})

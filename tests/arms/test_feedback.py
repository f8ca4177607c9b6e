import numpy as np
import pytest

from evalkit import arms
from evalkit.arms.feedback import relevance_model, rm3


def test_relevance_model_by_hand():
    # page 1 (score 3): aa aa bb cc; page 2 (score 1): bb dd; "cc" skipped, "e" and "42" never expand
    model = relevance_model([["aa", "aa", "bb", "cc"], ["bb", "dd", "e", "42"]], [3.0, 1.0], skip={"cc"}, terms=2)
    # P(aa) = 2/4 * 3/4 = .375; P(bb) = 1/4 * 3/4 + 1/4 * 1/4 = .25; P(dd) = .0625: the top 2, renormalised
    assert model == pytest.approx({"aa": 0.375 / 0.625, "bb": 0.25 / 0.625})
    assert list(model) == ["aa", "bb"]
    assert relevance_model([["xx"]], [0.0], set(), 5) == {}


def test_rm3_interpolates_by_hand():
    assert rm3(["a", "b"], {"b": 0.75, "c": 0.25}, 0.5) == {"a": 0.25, "b": 0.25 + 0.375, "c": 0.125}


def test_weighted_bm25_with_unit_weights_is_bm25(small):
    c, store = small
    index = arms.make("global-index", c, store).global_index
    terms = ["spacing", "table", "rows"]
    tokens = [t[0] for t in index.tokenize(terms)]
    rows, score = index.bm25_scores(terms)
    wrows, wscore = index.weighted_bm25({t: 1.0 for t in tokens})
    assert np.array_equal(rows, wrows) and np.allclose(score, wscore, rtol=1e-12)


def test_prf_arm_expands_with_the_first_pass_pages_words(small):
    c, store = small
    arm = arms.make("global-index(prf=5,prf_terms=8)", c, store)
    assert arm.label == "global-index(prf=5,prf_terms=8)"
    weights = arm.feedback.expand(["double", "spacing"])
    assert len(weights) > 2 and sum(weights.values()) == pytest.approx(1.0)
    assert weights["doubl"] >= 0.25 and weights["space"] >= 0.25  # the original words keep half, shared
    top = arm.search("double spacing", 20).hits
    assert all(arm.search("double spacing", k).hits == top[:k] for k in (1, 5))
    assert arms.make("global-index(prf=0)", c, store).search("double spacing", 5).hits == \
        arms.make("global-index", c, store).search("double spacing", 5).hits
    with pytest.raises(arms.ArmError, match="prf_weight"):
        arms.validate("global-index(prf=5,prf_weight=2)")

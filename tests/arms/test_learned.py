import numpy as np
import pytest

from evalkit import arms, qrels
from evalkit.arms.learned import FEATURES, LearnedArm, fit, training_set

from ..conftest import SMALL_QUERIES


@pytest.fixture(scope="module")
def dev(small, tmp_path_factory):
    path = tmp_path_factory.mktemp("learned") / "q.toml"
    path.write_text(SMALL_QUERIES)
    return qrels.load(path).queries


def test_fit_is_deterministic_given_a_seed(small, dev):
    c, store = small
    a, b = fit(c, store, dev, seed=7, negatives=5), fit(c, store, dev, seed=7, negatives=5)
    assert a == b and a.startswith("learned(weights=") and len(a.split("=")[1].split(":")) == len(FEATURES) + 1
    # another seed draws other negatives (5 of each query's ~200 candidates), so other weights
    assert fit(c, store, dev, seed=8, negatives=5) != a


def test_training_set_labels_judged_pages_and_draws_negatives(small, dev):
    c, store = small
    arm = LearnedArm(c, store)
    x, y = training_set(arm, dev, negatives=5, seed=0)
    answerable = [q for q in dev if q.answerable]
    assert x.shape[1] == len(FEATURES) and len(x) == len(y)
    assert (y == 0).sum() == 5 * len(answerable)  # every query has more than 5 non-relevant candidates
    assert 0 < y.sum() <= sum(len(q.relevant) for q in answerable)  # a relevant page the lists missed is absent
    assert np.all((x[:, 0] >= 0) & (x[:, 0] <= 1)) and np.all(x[:, 2] >= 0)


def test_learned_arm_ranks_by_its_logistic_and_keeps_the_prefix_property(small, dev):
    c, store = small
    arm = arms.make(fit(c, store, dev, seed=0, negatives=20), c, store)
    top = arm.search("double spacing of the text", 30).hits
    assert all(arm.search("double spacing of the text", k).hits == top[:k] for k in (1, 5, 10))
    assert [h.score for h in top] == sorted((h.score for h in top), reverse=True) and 0 < top[0].score < 1


def test_learned_arm_without_or_with_bad_weights_is_refused(small):
    c, store = small
    with pytest.raises(arms.ArmError, match="needs weights"):
        arms.make("learned", c, store).search("tables", 5)
    with pytest.raises(arms.ArmError, match="weights wants 7 numbers"):
        arms.validate("learned(weights=1:2:3)")

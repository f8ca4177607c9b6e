import math

import numpy as np
import pytest

from evalkit import arms
from evalkit.arms import ArmError
from evalkit.arms.conformal import guarantee, p_value, pseudo_queries, refused
from evalkit.arms.policies import make_policy
from evalkit.records import Answer
from evalkit.refusal import clopper_pearson_upper


def test_p_value_by_hand():
    cal = np.array([0.1, 0.2, 0.2, 0.4])
    assert p_value(cal, 0.05) == 1 / 5
    assert p_value(cal, 0.2) == 4 / 5  # ties count for the query
    assert p_value(cal, 0.3) == 4 / 5 and p_value(cal, 9.0) == 1.0


def test_refusing_at_alpha_refuses_at_most_alpha_of_exchangeable_queries():
    # the conformal guarantee, checked by simulation: calibration and test drawn from one distribution
    rng = np.random.default_rng(0)
    rates = []
    for _ in range(400):
        cal = np.sort(rng.normal(size=39))
        rates.append(np.mean([p_value(cal, s) <= 0.05 for s in rng.normal(size=50)]))
    assert np.mean(rates) <= 0.05 + 0.005  # exactly floor(0.05 * 40) / 40 = 0.05 in expectation


def test_pseudo_queries_are_seeded_passages_of_the_pages():
    pages = ["one two three four five", "short", "a b c d e f g h"]
    q = pseudo_queries(pages, 30, 4, seed=1)
    assert q == pseudo_queries(pages, 30, 4, seed=1) and q != pseudo_queries(pages, 30, 4, seed=2)
    assert len(q) == 30 and all(len(x.split()) == 4 for x in q)
    assert all(x in pages[0] or x in pages[2] for x in q)
    assert pseudo_queries(["too short"], 5, 4, 0) == []


def test_conformal_policy_gives_the_p_value_of_its_base_policy(small):
    c, store = small
    pol = make_policy("conformal(n=40,seed=3)", c, store)
    calibration = pol.passages(12)
    assert pol.label == "conformal(n=40,seed=3)" and len(calibration) == 40
    base = make_policy("spread", c, store)
    q = "How do I put extra space between rows of a table?"
    v = pol.assess(q, Answer())
    assert v.confidence == p_value(calibration, base.assess(q, Answer()).confidence)
    assert 0 < v.confidence <= 1 and "p-value of spread" in v.measure
    # the calibration is the base policy's confidence on the pseudo-queries themselves
    pages = [t for d in sorted(c.documents, key=lambda d: d.sha256) for t in store.texts(d)]
    first = pseudo_queries(pages, 40, 12, 3)[0]
    assert base.assess(first, Answer()).confidence in calibration


def test_words_0_compares_each_query_with_passages_of_its_own_length(small):
    c, store = small
    pol = make_policy("conformal(n=30,words=0)", c, store)
    base = make_policy("spread", c, store)
    assert pol.by_length == {}  # nothing is drawn until a query comes
    pages = [t for d in sorted(c.documents, key=lambda d: d.sha256) for t in store.texts(d)]
    for q in ("space between rows of a table", "How do I put extra space between the rows of a long table?"):
        n = len(q.split())
        v = pol.assess(q, Answer())
        own = np.sort([base.assess(p, Answer()).confidence for p in pseudo_queries(pages, 30, n, 0)])
        assert v.confidence == p_value(own, base.assess(q, Answer()).confidence) and f"{n}-word passages" in v.measure
    assert sorted(pol.by_length) == [6, 13]


def test_conformal_refuses_a_policy_that_reads_a_ranking(small):
    c, store = small
    with pytest.raises(ArmError, match="conformal.*reads the arm's ranking"):
        make_policy("conformal(policy=score)", c, store)
    with pytest.raises(ArmError, match="unknown policy 'sprad'"):
        arms.validate("admit(arm=keyword,policy=conformal(policy=sprad))")


def test_names_with_rare_vetoes_lower_case_names_no_page_holds(small):
    c, store = small
    plain = make_policy("names", c, store)
    rare = make_policy("names(rare=2)", c, store)
    q = "make a qrcode of the table with xgboost"
    assert plain.assess(q, Answer()).confidence == 1.0  # lower case: not a name to the spelling rule
    v = rare.assess(q, Answer())
    assert v.confidence == -math.inf and v.evidence == "the query names 'qrcode' or 'xgboost', which no page contains"
    # a rare word some page holds is not vetoed (booktabs is in the corpus); nor is a common word it lacks
    assert rare.assess("booktabs rules in a table", Answer()).confidence == 1.0
    assert rare.assess("a lottery table", Answer()).confidence == 1.0


@pytest.mark.parametrize("n,alpha", [(19, 0.05), (20, 0.05), (42, 0.05), (61, 0.1), (9, 0.05)])
def test_refusing_below_alpha_refuses_at_most_alpha_of_new_answerable_queries(n, alpha):
    """Seeded simulation: calibration and new scores exchangeable (with ties: scores on a coarse grid)."""
    rng = np.random.default_rng(7)
    trials = 20_000
    cal = np.sort(np.round(rng.beta(2, 5, size=(trials, n)), 2), axis=1)
    new = np.round(rng.beta(2, 5, size=trials), 2)
    hit = np.mean([p_value(c, s) < alpha for c, s in zip(cal, new, strict=True)])
    assert hit <= guarantee(n, alpha) + 3 * math.sqrt(alpha / trials)
    assert guarantee(n, alpha) <= alpha
    if n + 1 <= 1 / alpha:  # the least p-value, 1/(n+1), is not below alpha: nothing can be refused
        assert guarantee(n, alpha) == 0 and hit == 0


def test_the_bound_printed_covers_the_drawn_threshold_s_rate_95_percent_of_the_time():
    """With uniform scores the wrongful-refusal rate of a drawn threshold is known exactly (the share of scores
    whose p-value is below alpha); the Clopper–Pearson bound on the calibration count covers it >= 95%."""
    rng, n, alpha, trials = np.random.default_rng(11), 40, 0.1, 4000
    bound = [clopper_pearson_upper(k, n) for k in range(n + 1)]  # solved once per count, not once per trial
    covered = []
    for _ in range(trials):
        cal = np.sort(rng.random(n))
        k = refused(cal, alpha)
        # k calibration scores refused: a new score is refused below the (k + 1)-th lowest (n * alpha > 1 here)
        rate = cal[k]
        covered.append(rate <= bound[k])
    assert np.mean(covered) >= 0.94

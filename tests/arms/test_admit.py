import math

import numpy as np
import pytest

from evalkit import arms
from evalkit.arms import ArmError
from evalkit.arms.policies import (agreement, coverage, fit_logistic, idf, logistic, make_policy, score_feature, spread)
from evalkit.records import Answer

QUERIES = ["space between rows of a table", "double spacing of the text", "define a new float type",
           "insert pages of another PDF", "pgfplots addplot logarithmic axis", "How long should brisket rest?"]


@pytest.mark.parametrize("inner", ["keyword", "hybrid(keyword=global-index)", "global-index"])
@pytest.mark.parametrize("policy", ["semantic", "idf-mass", "score(feature=diff1,of=global-index)",
                                    "score(feature=std)",
                                    "spread", "spread(over=pages)", "names(policy=spread)"])
def test_a_wrapped_arm_answers_with_the_inner_ranking(small, inner, policy):
    c, store = small
    plain = arms.make(inner, c, store)
    wrapped = arms.make(f"admit(arm={inner},policy={policy})", c, store)  # threshold -inf: never refuses
    for q in QUERIES:
        for k in (1, 10):
            mine, theirs = wrapped.search(q, k), plain.search(q, k)
            assert mine.hits == theirs.hits
            assert mine.refused == (not theirs.hits)  # an empty answer is a refusal with or without the wrapper
            assert mine.confidence is not None and not math.isnan(mine.confidence)


def test_refusal_below_threshold_with_a_reason_and_confidence(small):
    c, store = small
    spec = "admit(arm=hybrid(keyword=global-index),policy=semantic,threshold=0.99)"
    arm = arms.make(spec, c, store)
    assert arm.label == spec
    r = arm.search("pgfplots addplot logarithmic axis", 10)
    assert r.refused and not r.hits and r.confidence < 0.99
    assert r.reason.startswith("no page contains 'pgfplots' or 'addplot' or 'logarithmic' or 'axis'; closest page ")
    assert "best semantic match" in r.reason and "< 0.99" in r.reason
    lex = arms.make("admit(arm=global-index,policy=idf-mass,threshold=0.99)", c, store).search(
        "pgfplots addplot", 10)
    assert lex.refused and lex.reason.startswith("no page contains 'pgfplots' or 'addplot'")


def test_spread_refuses_with_a_reason_and_reads_every_window(small):
    c, store = small
    arm = arms.make("admit(arm=hybrid(keyword=global-index),policy=spread,threshold=1)", c, store)
    r = arm.search("pgfplots addplot logarithmic axis", 10)
    windows = len(arm.policy.semantic.matrix)
    assert r.refused and 0 < r.confidence < 1
    assert r.reason.startswith("no page contains 'pgfplots' or 'addplot' or 'logarithmic' or 'axis'; closest page ")
    assert "(best semantic match 0." in r.reason
    assert r.reason.endswith(f"; spread of semantic similarity over {windows} windows {r.confidence:.3g} < 1")
    pages = make_policy("spread(over=pages)", c, store).assess("pgfplots addplot", Answer())
    assert pages.measure == f"spread of semantic similarity over {c.pages} pages"
    with pytest.raises(ArmError, match="policy 'spread': of=global-index is not a semantic arm"):
        make_policy("spread(of=global-index)", c, store)


def test_names_vetoes_a_query_naming_what_no_page_holds_and_leaves_the_rest_to_its_policy(small):
    c, store = small
    arm = arms.make("admit(arm=hybrid(keyword=global-index),policy=names(policy=spread),threshold=0.01)", c, store)
    r = arm.search(r"Draw it with \addplot in an Overleaf project, like \toprule", 10)
    assert r.refused and r.confidence == -math.inf
    assert r.reason == "the query names 'addplot' or 'Overleaf', which no page contains"
    # every name on some page (\toprule, \addlinespace: booktabs): the spread decides, and at 0.01 it answers
    asked = r"\addlinespace between rows after \toprule"
    answered = arm.search(asked, 10)
    assert not answered.refused
    assert answered.hits == arms.make("hybrid(keyword=global-index)", c, store).search(asked, 10).hits
    assert answered.confidence == make_policy("spread", c, store).assess(asked, Answer()).confidence
    # recording only (threshold -inf), a vetoed query is answered and records -inf, which calibration refuses
    record = arms.make("admit(arm=global-index,policy=names)", c, store)
    vetoed = record.search(r"\addplot a table with rows", 10)
    assert vetoed.confidence == -math.inf and vetoed.hits and not vetoed.refused
    assert record.search(r"\toprule rules", 10).confidence == 1.0
    with pytest.raises(ArmError, match="unknown policy 'sprad'"):
        arms.make("admit(arm=keyword,policy=names(policy=sprad))", c, store)


def test_admit_labels_are_canonical_and_bad_specs_are_named(small):
    c, store = small
    a = arms.make("admit(arm=keyword(idf_scope=doc),policy=score(feature=max),threshold=0.5)", c, store)
    assert a.label == "admit(arm=keyword,policy=score,threshold=0.5)"
    for spec, message in [("admit(policy=semantic)", "needs arm=SPEC"), ("admit(arm=keyword)", "needs policy=SPEC"),
                          ("admit(arm=keyword,policy=nope)", "unknown policy 'nope'"),
                          ("admit(arm=keyword,policy=score(feature=mean))", "policy 'score': parameter 'feature'"),
                          ("admit(arm=keyword,policy=evidence(weights=1:2))", "weights wants 5 numbers"),
                          ("admit(arm=keyword,policy=semantic,threshold=high)", "'threshold' wants a float")]:
        with pytest.raises(ArmError, match=message):
            arms.make(spec, c, store)


def test_a_misspelt_policy_stops_a_run_before_anything_is_written(small, tmp_path):
    from evalkit import qrels
    from evalkit import runner

    c, store = small
    (tmp_path / "q.toml").write_text('[set]\nname = "q"\n[[query]]\nid = "a"\nclass = "abstain"\ntext = "x"\n'
                                     'judgments = []\n')
    with pytest.raises(ArmError, match="unknown policy 'semntic'"):
        runner.run(c, store, qrels.load(tmp_path / "q.toml"), ["keyword", "admit(arm=keyword,policy=semntic)"],
                   tmp_path / "res", progress=False)
    assert not (tmp_path / "res").exists()


def test_evidence_signals_are_bounded(small):
    c, store = small
    p = make_policy("evidence", c, store)
    for q in QUERIES:
        s = p.signals(q)
        assert 0 <= s["coverage"] <= 1 and 0 <= s["agreement"] <= 1 and 0 <= s["familiarity"] <= 1
        assert 0 < p.assess(q, Answer()).confidence < 1
    assert p.signals("pgfplots addplot")["coverage"] == 0.0


# ---- pure parts ---------------------------------------------------------------------------------------------

def test_score_features_by_hand():
    s = [0.9, 0.6, 0.3, 0.2]
    assert score_feature(s, "max") == 0.9
    assert score_feature(s, "diff1") == pytest.approx(0.3)
    assert score_feature(s, "std") == pytest.approx(np.std(s))        # population std, as MTEB's np.std
    assert score_feature([0.5], "diff1") == 0.0
    assert score_feature(s, "nqc", k=2) == pytest.approx(0.15 / 0.5)  # std(0.9, 0.6) / mean of all
    assert score_feature(s, "wig", k=2, n_terms=4) == pytest.approx((0.75 - 0.5) / 2)
    assert score_feature([], "max") == -math.inf


def test_spread_by_hand():
    assert spread(np.array([0.1, 0.3])) == pytest.approx(0.1)  # population: sqrt(((-0.1)^2 + 0.1^2) / 2)
    assert spread(np.array([0.25, 0.25, 0.25])) == 0.0
    assert spread(np.array([])) == -math.inf


def test_idf_coverage_agreement_by_hand():
    assert idf(0, 10) == pytest.approx(math.log(1 + 10.5 / 0.5))
    assert idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))
    w = {"a": 3.0, "b": 1.0}
    assert coverage(w, {"a": frozenset({1}), "b": frozenset({1, 2})}) == 1.0
    assert coverage(w, {"a": frozenset({1}), "b": frozenset({2})}) == 0.75
    assert coverage(w, {"a": frozenset(), "b": frozenset({2})}) == 0.25
    assert agreement(["x", "y"], ["y", "z"]) == pytest.approx(1 / 3)
    assert agreement([], []) == 0.0


def test_fit_logistic_recovers_the_direction_and_stays_finite():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(200, 2))
    y = (rng.uniform(size=200) < logistic(x, np.array([-2.0, 4.0, 0.0]))).astype(float)
    w = fit_logistic(x, y, l2=0.01)
    assert w[1] > 2 and abs(w[2]) < 1.5
    separable = fit_logistic(np.array([[0.0], [1.0]]), np.array([0.0, 1.0]))
    assert np.all(np.isfinite(separable)) and separable[1] > 0


def test_an_installed_plug_in_policy_is_found(small, tmp_path, monkeypatch):
    """A real installed distribution with an ``evalkit.admission`` entry point, like a plug-in arm."""
    c, store = small
    site = tmp_path / "site"
    (site / "evalkit_policy_demo-0.1.dist-info").mkdir(parents=True)
    (site / "evalkit_policy_demo.py").write_text(
        "from evalkit.arms.policies import Policy, Verdict\n"
        "class Length(Policy):\n"
        "    name = 'length'\n"
        "    defaults = {'words': 3}\n"
        "    def assess(self, query, result):\n"
        "        return Verdict(len(query.split()) / self.params['words'], 'words per expected')\n")
    (site / "evalkit_policy_demo-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: evalkit-policy-demo\nVersion: 0.1\n")
    (site / "evalkit_policy_demo-0.1.dist-info" / "entry_points.txt").write_text(
        "[evalkit.admission]\nlength = evalkit_policy_demo:Length\n")
    monkeypatch.syspath_prepend(str(site))
    arm = arms.make("admit(arm=global-index,policy=length(words=4),threshold=1)", c, store)
    assert arm.label == "admit(arm=global-index,policy=length(words=4),threshold=1.0)"
    assert arm.search("booktabs table rules", 5).reason == "words per expected 0.75 < 1"
    assert not arm.search("booktabs table rules and spacing", 5).refused

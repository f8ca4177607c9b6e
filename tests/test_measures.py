import math

import pytest
import pytrec_eval
from hypothesis import given
from hypothesis import strategies as st

from evalkit import measures as M
from evalkit.records import Answer, Hit, Judgment, Query

L2_3 = math.log2(3)  # discount of rank 2


# ---------------------------------------------------------------------------------------------------
# Hand-computed reference cases


def test_ndcg_ideal_comes_from_all_judged_items_not_from_the_retrieved_ones():
    qrels = {"a#1": 3, "b#1": 2, "c#1": 1, "d#1": 0}
    # only b#1 retrieved (rank 2); a#1 and c#1 are judged but never retrieved
    got = M.ndcg(["x#1", "b#1", "d#1"], qrels, 10)
    ideal = 3 / 1 + 2 / L2_3 + 1 / 2
    assert got == pytest.approx((2 / L2_3) / ideal, abs=1e-15)
    # an ideal built from the retrieved items would have given 1.0 here; ours does not
    assert M.ndcg(["b#1"], qrels, 10) == pytest.approx(2 / ideal)


def test_ndcg_cutoff_cuts_the_ideal_too_and_uses_linear_gain():
    qrels = {"a#1": 3, "b#1": 2, "c#1": 1}
    assert M.ndcg(["c#1", "a#1"], qrels, 2) == pytest.approx((1 + 3 / L2_3) / (3 + 2 / L2_3))
    assert M.ndcg(["a#1", "b#1", "c#1"], qrels, 2) == 1.0
    assert M.ndcg(["x#1", "y#1", "a#1"], qrels, 2) == 0.0  # relevant item below the cutoff
    assert M.ndcg(["a#1", "b#1"], qrels, None) == pytest.approx((3 + 2 / L2_3) / (3 + 2 / L2_3 + 1 / 2))


def test_ndcg_of_empty_qrels_or_ranking_is_zero():
    assert M.ndcg(["a#1"], {}, 10) == 0.0
    assert M.ndcg([], {"a#1": 2}, 10) == 0.0


def test_rr_uses_the_whole_ranking_and_ignores_zero_gain():
    ranking = [f"x#{i}" for i in range(1, 15)] + ["a#1"]
    assert M.rr(ranking, {"a#1": 1}) == pytest.approx(1 / 15)
    assert M.rr(["z#1", "n#1", "a#1"], {"n#1": 0, "a#1": 2}) == pytest.approx(1 / 3)
    assert M.rr(["z#1"], {"a#1": 2}) == 0.0
    assert M.rr(["z#1", "a#1"], {"a#1": 2}, k=1) == 0.0


def test_recall_and_success():
    qrels = {"a#1": 1, "b#1": 3, "c#1": 2, "d#1": 1, "z#1": 0}
    ranking = ["a#1", "z#1", "b#1"] + [f"x#{i}" for i in range(7)] + ["c#1"]  # c#1 at rank 11
    assert M.recall(ranking, qrels, 10) == 0.5
    assert M.recall(ranking, qrels, None) == 0.75
    assert M.recall(ranking, {}, 10) == 0.0
    assert M.success(["z#1", "a#1"], qrels, 1) == 0.0
    assert M.success(["z#1", "a#1"], qrels, 3) == 1.0


def test_judged_counts_every_judged_item_gain_zero_included():
    qrels = {"a#1": 3, "b#1": 0, "c#1": 1}
    assert M.judged(["a#1", "x#1", "b#1", "y#1"], qrels, 10) == 0.5  # 2 of the 4 shown
    assert M.judged(["x#1", "b#1", "a#1"], qrels, 2) == 0.5
    eleven = ["a#1", "b#1", "c#1"] + [f"x#{i}" for i in range(7)] + ["d#1"]
    assert M.judged(eleven, {**qrels, "d#1": 2}, 10) == 0.3  # d#1 at rank 11 is past the cutoff
    assert M.judged(["x#1"], qrels, 10) == 0.0
    assert math.isnan(M.judged([], qrels, 10))  # nothing shown: nothing whose judging is in doubt
    assert M.MEASURES["Judged@10"] == M.Measure("Judged@10", M.judged, "page", 10, audit=True)


def test_repeated_ids_are_refused():
    with pytest.raises(ValueError, match="repeats"):
        M.ndcg(["a#1", "a#1"], {"a#1": 1}, 10)


def test_doc_collapse_and_doc_qrels():
    assert M.to_docs(["a.pdf#1", "a.pdf#2", "b.pdf#5", "a.pdf#3", "c.pdf#1"]) == ("a.pdf", "b.pdf", "c.pdf")
    assert M.to_docs(["odd#name.pdf#3"]) == ("odd#name.pdf",)  # the page number is after the LAST '#'
    assert M.doc_qrels({"a#1": 1, "a#7": 3, "b#2": 2, "c#1": 0}) == {"a": 3, "b": 2, "c": 0}
    # nDCG@10(doc): b (gain 2) at doc rank 1, a (gain 3) at doc rank 2; ideal over docs is 3, 2
    m = M.MEASURES["nDCG@10(doc)"]
    got = m(["b#9", "b#2", "a#5", "x#1"], {"a#1": 1, "a#7": 3, "b#2": 2})
    assert got == pytest.approx((2 + 3 / L2_3) / (3 + 2 / L2_3))
    assert M.MEASURES["RR(doc)"](["x#1", "x#2", "x#3", "a#9"], {"a#1": 1}) == 0.5
    assert M.MEASURES["RR"](["x#1", "x#2", "x#3", "a#9"], {"a#1": 1}) == 0.0  # a#9 itself is not judged


def test_gold_doc_counts_distinct_documents_and_gold_hit_counts_hits():
    qrels = {"gold.pdf#4": 2, "weak.pdf#1": 1}
    crowd = [f"a.pdf#{i}" for i in range(1, 6)]  # five hits of one document at the top
    gold_2nd = crowd + ["gold.pdf#9"]  # gold is the 2nd distinct document
    gold_4th = crowd + ["b.pdf#1", "c.pdf#1", "gold.pdf#4"]  # gold is the 4th distinct document
    assert M.gold_doc(gold_2nd, qrels) == 1.0  # any page of a gold document counts
    assert M.gold_doc(gold_4th, qrels) == 0.0
    assert M.gold_hit(gold_2nd, qrels) == 0.0  # the first 3 hits are all a.pdf
    assert M.gold_hit(gold_4th, qrels) == 0.0
    assert M.gold_hit(["a.pdf#1", "gold.pdf#1"], qrels) == 1.0
    assert M.gold_doc(["weak.pdf#1"], qrels) == 0.0  # gain 1 does not make a document gold
    assert M.MEASURES["GoldDoc@3"](gold_2nd, qrels) == 1.0
    assert M.MEASURES["GoldHit@3"](gold_2nd, qrels) == 0.0
    assert M.measure("GoldDoc@4")(gold_4th, qrels) == 1.0


def test_registry_names_and_parsing():
    for name in ("nDCG@10", "nDCG@10(doc)", "GoldDoc@3", "GoldHit@3", "RR", "RR(doc)", "Recall@10",
                 "Recall@10(doc)", "Success@1", "Success@3", "Success@10", "Success@1(doc)",
                 "Success@3(doc)", "Success@10(doc)"):
        assert M.MEASURES[name].name == name
    assert M.MEASURES["nDCG@10"] == M.Measure("nDCG@10", M.ndcg, "page", 10)
    assert M.measure("nDCG@5") == M.Measure("nDCG@5", M.ndcg, "page", 5)
    assert M.measure("Success@20(doc)") == M.Measure("Success@20(doc)", M.success, "doc", 20)
    assert M.measure("RR").cutoff is None and M.MEASURES["GoldDoc@3"].cutoff == 3
    for bad in ("ndcg@10", "MAP", "Success", "nDCG@0", "GoldDoc@3(doc)", "nDCG@10 ", "RR(page)", "Judged",
                "Judged@10(doc)"):
        with pytest.raises(ValueError, match=bad.replace("(", r"\(").replace(")", r"\)")):
            M.measure(bad)


def _query(cls="needle", judgments=(("a.pdf", 2, 3), ("b.pdf", 1, 1))):
    return Query(id="q1", cls=cls, text="?", judgments=tuple(Judgment(d, p, g) for d, p, g in judgments))


def test_evaluate_abstain_is_nan_and_refused_or_empty_answerable_is_zero():
    hits = Answer(hits=(Hit("b.pdf", 1, 0.9), Hit("a.pdf", 2, 0.5)))
    abst = M.evaluate(_query("abstain", ()), hits)
    assert set(abst) == set(M.DEFAULT) and all(math.isnan(v) for n, v in abst.items() if n != "Judged@10")
    for r in (Answer.refusal("below threshold"), Answer(),
              Answer(hits=(Hit("a.pdf", 2, 1.0),), refused=True, reason="refused anyway")):
        scores = M.evaluate(_query(), r)
        assert set(scores) == set(M.DEFAULT) and all(v == 0.0 for n, v in scores.items() if n != "Judged@10")
        assert math.isnan(scores["Judged@10"])  # a refusal shows no page to judge


def test_judged_is_measured_on_abstain_queries_too():
    """On an abstain query, Judged@10 is the share of the top 10 read and found not to answer."""
    hits = Answer(hits=(Hit("b.pdf", 1, 0.9), Hit("a.pdf", 2, 0.5), Hit("c.pdf", 1, 0.1)))
    got = M.evaluate(_query("abstain", (("a.pdf", 2, 0), ("b.pdf", 1, 0))), hits)
    assert got["Judged@10"] == pytest.approx(2 / 3) and math.isnan(got["nDCG@10"])
    assert M.evaluate(_query(), hits)["Judged@10"] == pytest.approx(2 / 3)
    got = M.evaluate(_query(), hits, names=("nDCG@10", "RR", "GoldDoc@1", "Recall@10(doc)"))
    assert got == {"nDCG@10": pytest.approx((1 + 3 / L2_3) / (3 + 1 / L2_3)), "RR": 1.0,
                   "GoldDoc@1": 0.0, "Recall@10(doc)": 1.0}


def test_evaluate_refuses_a_page_judged_twice():
    with pytest.raises(ValueError, match="twice"):
        M.evaluate(_query(judgments=(("a.pdf", 1, 1), ("a.pdf", 1, 2))), Answer())


def test_refusal_outcomes_and_both_rates():
    hits = Answer(hits=(Hit("a.pdf", 1, 1.0),))
    assert M.refusal_outcome(_query("abstain", ()), Answer.refusal("no")) == "correct_refusal"
    assert M.refusal_outcome(_query("abstain", ()), Answer()) == "correct_refusal"
    assert M.refusal_outcome(_query("abstain", ()), hits) == "answered_abstain"
    assert M.refusal_outcome(_query(), Answer.refusal("no")) == "wrongful_refusal"
    assert M.refusal_outcome(_query(), Answer()) == "wrongful_refusal"
    assert M.refusal_outcome(_query(), hits) == "answered"
    outcomes = ["correct_refusal", "answered_abstain", "answered_abstain", "wrongful_refusal"] + ["answered"] * 3
    assert M.refusal_rates(outcomes) == {"correct_refusal_rate": 1 / 3, "wrongful_refusal_rate": 1 / 4}
    only_answerable = M.refusal_rates(["answered", "wrongful_refusal"])
    assert set(only_answerable) == {"correct_refusal_rate", "wrongful_refusal_rate"}
    assert math.isnan(only_answerable["correct_refusal_rate"]) and only_answerable["wrongful_refusal_rate"] == 0.5
    assert all(math.isnan(v) for v in M.refusal_rates([]).values())
    with pytest.raises(ValueError, match="refused"):
        M.refusal_rates(["refused"])


def test_an_error_is_neither_a_refusal_nor_an_answer():
    failed = Answer(hits=(Hit("a.pdf", 1, 1.0),), error="timeout")
    assert M.refusal_outcome(_query(), failed) == "error"
    assert M.refusal_outcome(_query("abstain", ()), failed) == "error"
    assert M.ranking_of(failed) == ()  # hits carried by an error rank nothing
    scores = M.evaluate(_query(), failed)  # an errored answerable query scores 0; nothing shown, nothing judged
    assert {v for n, v in scores.items() if not M.measure(n).audit} == {0.0} and math.isnan(scores["Judged@10"])
    # each error stays in its class's denominator: 1 correct refusal of 2 abstain, 1 wrongful of 4 answerable
    outcomes = ["correct_refusal", "error", "wrongful_refusal", "answered", "error", "error"]
    abstain = [True, True, False, False, False, False]
    assert M.refusal_rates(outcomes, abstain) == {"correct_refusal_rate": 0.5, "wrongful_refusal_rate": 0.25}
    with pytest.raises(ValueError, match="abstain flag"):
        M.refusal_rates(["error"])


def test_ties_at():
    assert M.ties_at([3, 2, 2, 1], 1) == 0
    assert M.ties_at([3, 2, 2, 1], 2) == 1
    assert M.ties_at([3, 2, 2, 1], 3) == 2
    assert M.ties_at([5, 4, 3, 4], 2) == 1  # a tie with an item below the cutoff still counts
    assert M.ties_at([1.0, 1.0, 1.0], 10) == 3
    assert M.ties_at([], 3) == 0


def test_latency_summary():
    s = M.latency_summary([1, 2, 3, 4, 100])
    assert s["median"] == 3 and s["mean"] == 22 and s["p95"] == pytest.approx(4 + 0.8 * 96)
    assert all(math.isnan(v) for v in M.latency_summary([]).values())


# ---------------------------------------------------------------------------------------------------
# Agreement with trec_eval (pytrec_eval)

TREC = {"ndcg_cut_10", "recip_rank", "recall_10"}
DOCS = ("a.pdf", "B.pdf", "c-2.pdf", "doc10.pdf", "doc9.pdf")
UNIVERSE = tuple(f"{d}#{p}" for d in DOCS for p in range(1, 7))


def _trec(qrels, run):
    """A fresh evaluator per call: pytrec_eval has carried state between queries before (FIELD_NOTES)."""
    return pytrec_eval.RelevanceEvaluator({"q": qrels}, TREC).evaluate({"q": run} if run is not None else {})


def _strictly_decreasing(ranking):
    """What evalkit's runner writes: scores strictly decreasing in evalkit's order, so trec_eval keeps it."""
    return {pid: float(len(ranking) - i) for i, pid in enumerate(ranking)}


def _trec_order(ranking, scores):
    """trec_eval's own order: score descending, then document id descending."""
    return [pid for _, pid in sorted(zip(scores, ranking, strict=True), reverse=True)]


def _ours(ranking, qrels):
    return {"ndcg_cut_10": M.ndcg(ranking, qrels, 10), "recip_rank": M.rr(ranking, qrels),
            "recall_10": M.recall(ranking, qrels, 10)}


ZERO = {m: 0.0 for m in TREC}


@st.composite
def scored_queries(draw):
    """Graded qrels (at least one gain > 0, some judged gain 0) and an arm's ranking with tied raw scores."""
    qrels = draw(st.dictionaries(st.sampled_from(UNIVERSE), st.integers(0, 3), min_size=1, max_size=14))
    if not any(g > 0 for g in qrels.values()):
        qrels[next(iter(qrels))] = draw(st.integers(1, 3))
    pids = draw(st.lists(st.sampled_from(UNIVERSE), unique=True, max_size=len(UNIVERSE)))
    raw = draw(st.lists(st.integers(0, 4), min_size=len(pids), max_size=len(pids)))
    # The arm's total order: raw score descending, ties broken by the arm (here: draw order, stable sort).
    order = sorted(range(len(pids)), key=lambda i: -raw[i])
    return qrels, [pids[i] for i in order], [float(raw[i]) for i in order]


@pytest.mark.slow
@given(scored_queries())
def test_page_measures_agree_with_pytrec_eval(case):
    qrels, ranking, raw = case
    ours = _ours(ranking, qrels)
    if not ranking:
        assert ours == ZERO
        assert _trec(qrels, {}).get("q", ZERO) == ZERO  # omitted or zero, never anything else
        return
    theirs = _trec(qrels, _strictly_decreasing(ranking))["q"]
    assert ours == pytest.approx(theirs, abs=1e-9, rel=0)
    # Given the raw (tied) scores, trec_eval re-sorts ties by document id descending: it then agrees with
    # evalkit applied to THAT order, which is why evalkit writes strictly decreasing scores instead.
    tied = _trec(qrels, dict(zip(ranking, raw, strict=True)))["q"]
    assert _ours(_trec_order(ranking, raw), qrels) == pytest.approx(tied, abs=1e-9, rel=0)
    # Doc-level measures are the same definitions over the collapsed ranking and best-page qrels.
    docs, dq = M.to_docs(ranking), M.doc_qrels(qrels)
    dtheirs = _trec(dq, _strictly_decreasing(docs))["q"]
    assert M.MEASURES["nDCG@10(doc)"](ranking, qrels) == pytest.approx(dtheirs["ndcg_cut_10"], abs=1e-9)
    assert M.MEASURES["RR(doc)"](ranking, qrels) == pytest.approx(dtheirs["recip_rank"], abs=1e-9)
    assert M.MEASURES["Recall@10(doc)"](ranking, qrels) == pytest.approx(dtheirs["recall_10"], abs=1e-9)


@pytest.mark.slow
@given(scored_queries())
def test_judged_agrees_with_trec_eval_precision_over_all_judged_items(case):
    """Judged@10 is trec_eval's P_10 with every judged item (gain 0 too) made relevant, over the
    min(10, len) items shown instead of 10 (ir_measures' definition)."""
    qrels, ranking, _ = case
    if not ranking:
        assert math.isnan(M.judged(ranking, qrels, 10))
        return
    p10 = pytrec_eval.RelevanceEvaluator({"q": {pid: 1 for pid in qrels}}, {"P_10"}).evaluate(
        {"q": _strictly_decreasing(ranking)})["q"]["P_10"]
    assert M.judged(ranking, qrels, 10) == pytest.approx(p10 * 10 / min(10, len(ranking)), abs=1e-9)


def test_tied_scores_let_document_names_decide_in_trec_eval():
    qrels = {"a.pdf#1": 1}
    ranking = ["a.pdf#1", "b.pdf#1"]  # the arm put a first; both carry the same raw score
    assert _trec(qrels, {"a.pdf#1": 1.0, "b.pdf#1": 1.0})["q"]["recip_rank"] == 0.5  # b sorts first
    assert _trec(qrels, _strictly_decreasing(ranking))["q"]["recip_rank"] == 1.0
    assert M.rr(ranking, qrels) == 1.0
    # and the rank column is ignored: only scores order a run
    assert _trec(qrels, {"b.pdf#1": 2.0, "a.pdf#1": 1.0})["q"]["recip_rank"] == 0.5


def test_empty_run_is_dropped_by_pytrec_eval_but_scored_zero_by_evalkit():
    qrels = {"a.pdf#1": 2}
    # A run file with no lines for a query: pytrec_eval leaves the query out, so its means skip it.
    assert _trec(qrels, None) == {}
    scores = M.evaluate(Query("q", "needle", "?", (Judgment("a.pdf", 1, 2),)), Answer())
    assert scores["nDCG@10"] == scores["RR"] == scores["Recall@10"] == 0.0
    assert _ours([], qrels) == ZERO

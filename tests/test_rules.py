import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from evalkit import comparison, dirs, rules, stats
from evalkit.latency import PairedTiming, Untimed
from evalkit.rules import RulesError, robustness_report

from .conftest import ENVIRONMENT, write_results


def rules_file(tmp_path, text: str, name: str = "gate.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def evaluate(tmp_path, text: str, pair: comparison.Pair) -> tuple[rules.Outcome, ...]:
    return rules.evaluate(rules.load(rules_file(tmp_path, text)), pair)


def make_pair(tmp_path, base: dict, cand: dict, classes: list[str], **kw) -> comparison.Pair:
    d = write_results(tmp_path / "run", {"base": base, "cand": cand}, classes, **kw)
    return comparison.pair(comparison.side(f"{d}:base"), comparison.side(f"{d}:cand"))


@pytest.fixture
def classed(tmp_path):
    """needle: a consistent drop of 0.2; trap: no change on average but noisy; spread: almost no change."""
    rng = np.random.default_rng(0)
    n = 22
    needle = rng.uniform(0.3, 0.9, n)
    trap = rng.uniform(0.1, 0.9, n)
    spread = rng.uniform(0.1, 0.9, n)
    base = np.r_[needle, trap, spread]
    cand = np.r_[needle - 0.2 + rng.normal(0, 0.02, n), np.clip(trap + rng.normal(0, 0.3, n), 0, 1),
                 spread + rng.normal(0, 0.01, n)]
    classes = ["needle"] * n + ["trap"] * n + ["spread"] * n
    return make_pair(tmp_path, {"nDCG@10": list(base)}, {"nDCG@10": list(cand)}, classes)


# ---- the shipped rules file -------------------------------------------------------------------------------

def test_the_shipped_gate_toml_parses_and_its_digest_is_its_sha256():
    r = rules.load(dirs.shipped("gate.toml"))
    assert r.sha256 == hashlib.sha256(dirs.shipped("gate.toml").read_bytes()).hexdigest()
    assert [x.type for x in r.rules] == ["non-inferiority", "class-drop", "lost-queries", "refusal", "refusal",
                                         "latency"]
    assert r.settings.resamples >= 10_000 and r.settings.alpha == 0.05 and not r.settings.underpowered_blocks
    ni = r.rules[0]
    assert (ni.measure, ni.margin, ni.cls) == ("nDCG@10(doc)", 0.02, "all")


# ---- bad rules files: each names the file, the rule and the field ------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("[[rule]\ntype = 1", r"not valid TOML"),
    ("[[rule]]\ntype = 'no-such-rule'",
     r"rule 1 \(no-such-rule\): unknown type 'no-such-rule' \(types: non-inferiority"),
    ("[[rule]]\nmeasure = 'RR'", r"rule 1: missing field 'type'"),
    ("[[rule]]\ntype = 'latency'\n[[rule]]\ntype = 'floor'\nmeasure = 'RR'", r"rule 2 \(floor\): missing field 'min'"),
    ("[[rule]]\ntype = 'non-inferiority'\nmargin = 'small'",
     r"rule 1 \(non-inferiority\): field 'margin': expected float, got 'small'"),
    ("[[rule]]\ntype = 'non-inferiority'\nmargn = 0.1", r"unknown field 'margn' \(fields: class, margin, measure, "
                                                        r"name\)"),
    ("[[rule]]\ntype = 'non-inferiority'\nmeasure = 'nDCG@ten'",
     r"rule 1 \(non-inferiority\): field 'measure' unknown measure"),
    ("[[rule]]\ntype = 'non-inferiority'\nclass = 'abstain'",
     r"field 'class' 'abstain' is not 'all' or an answerable class"),
    ("[[rule]]\ntype = 'non-inferiority'\nmargin = -0.1", r"field 'margin' must not be negative"),
    ("[[rule]]\ntype = 'class-drop'\nclasses = 'trap'", r"field 'classes': expected a list of strings"),
    ("[[rule]]\ntype = 'lost-queries'\nmeasure = 'nDCG@10'", r"field 'measure' 'nDCG@10' is not a 0/1 measure"),
    ("[[rule]]\ntype = 'lost-queries'\nmax_queries = 2.5", r"field 'max_queries': expected int"),
    ("[[rule]]\ntype = 'refusal'\nrate = 'wrong'", r"field 'rate' is 'wrongful' or 'correct', not 'wrong'"),
    ("[gate]\nalpha = 5\n[[rule]]\ntype = 'latency'", r"\[gate\]: field 'alpha' must lie strictly between 0 and 1"),
    ("[gate]\nunderpowered_blocks = 'yes'\n[[rule]]\ntype = 'latency'", r"field 'underpowered_blocks': expected bool"),
    ("[gate]\nalpha = 0.05", r"no \[\[rule\]\] tables"),
    ("[rules]\ntype = 'latency'", r"unknown table 'rules'"),
    ("[[rule]]\ntype = 'non-inferiority'\nmargin = nan", r"rule 1 \(non-inferiority\): field 'margin': expected a "
                                                         r"finite number, got nan"),
    ("[[rule]]\ntype = 'latency'\n[[rule]]\ntype = 'floor'\nmin = -inf",
     r"rule 2 \(floor\): field 'min': expected a finite number, got -inf"),
    ("[[rule]]\ntype = 'class-drop'\nmax_drop = inf", r"rule 1 \(class-drop\): field 'max_drop': expected a finite "
                                                      r"number, got inf"),
    ("[[rule]]\ntype = 'latency'\nmax_ratio = nan", r"rule 1 \(latency\): field 'max_ratio': expected a finite number, "
                                                    r"got nan"),
    ("[gate]\nconfidence = nan\n[[rule]]\ntype = 'latency'",
     r"\[gate\]: field 'confidence': expected a finite number, got nan"),
    ("[[rule]]\ntype = 'latency'\n[[rule]]\ntype = 'latency'",
     r"two rules are called 'latency ratio <= 1.2 \(side by side\)'; give one a name"),
])
def test_a_bad_rules_file_names_the_rule_and_field(tmp_path, text, message):
    p = rules_file(tmp_path, text)
    with pytest.raises(RulesError, match=message) as e:
        rules.load(p)
    assert str(p) in str(e.value)


def test_a_missing_rules_file_is_an_error(tmp_path):
    with pytest.raises(RulesError, match="No such file"):
        rules.load(tmp_path / "absent.toml")
    assert issubclass(RulesError, comparison.CompareError)  # the CLI exits 2 on both


# ---- rule semantics on chosen numbers -----------------------------------------------------------------------

def test_class_drop_fails_a_significant_drop_and_labels_what_it_cannot_see(tmp_path, classed):
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'class-drop'\nmeasure = 'nDCG@10'\nmax_drop = 0.05", classed)
    status = {d.label: d.status for d in o.details}
    assert status == {"needle": "fail", "spread": "pass", "trap": "underpowered"}
    assert o.status == "fail" and "needle dropped" in o.summary and "Holm over 3 classes" in o.summary
    c = o.numbers["classes"]
    assert c["trap"]["mdd"] > 0.05 >= c["spread"]["mdd"] and c["trap"]["power"] < 0.8 <= c["spread"]["power"]
    assert [c[k]["p_holm"] for k in ("needle", "spread", "trap")] == pytest.approx(
        stats.holm([c[k]["p"] for k in ("needle", "spread", "trap")]))
    (only,) = evaluate(tmp_path, "[[rule]]\ntype = 'class-drop'\nmeasure = 'nDCG@10'\nclasses = ['spread', 'trap']",
                       classed)
    assert only.status == "underpowered" and "trap cannot detect it" in only.summary


def test_non_inferiority_is_decided_by_the_lower_bound(tmp_path, classed):
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'non-inferiority'\nmeasure = 'nDCG@10'\nclass = 'spread'", classed)
    assert o.status == "pass" and o.numbers["low"] > -0.02
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'non-inferiority'\nmeasure = 'nDCG@10'\nclass = 'needle'", classed)
    assert o.status == "fail" and "non-inferiority not shown" in o.summary
    # a wide CI around 0 does not show non-inferiority either: the burden of proof is on the candidate
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'non-inferiority'\nmeasure = 'nDCG@10'\nclass = 'trap'", classed)
    assert o.status == "fail" and o.numbers["low"] < -0.02 < o.numbers["high"]


def test_lost_queries_counts_one_to_zero_changes(tmp_path):
    base = {"nDCG@10": [0.5] * 6, "GoldDoc@3": [1, 1, 1, 0, 0, 1]}
    cand = {"nDCG@10": [0.5] * 6, "GoldDoc@3": [0, 0, 1, 1, 0, 1]}
    pair = make_pair(tmp_path, base, cand, ["needle", "trap", "trap", "trap", "needle", "abstain"])
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'lost-queries'\nmax_queries = 1", pair)
    assert o.status == "fail" and o.numbers["lost"] == ["q000", "q001"] and o.numbers["gained"] == ["q003"]
    assert [(d.label, d.text) for d in o.details] == [("needle", "1: q000"), ("trap", "1: q001")]
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'lost-queries'\nmax_queries = 2", pair)
    assert o.status == "pass"


@pytest.mark.parametrize("newly_refused, status", [(6, "fail"), (2, "underpowered"), (0, "pass")])
def test_refusal_rules_use_an_exact_paired_test(tmp_path, newly_refused, status):
    classes = ["needle"] * 10 + ["abstain"] * 10
    base = ["answered"] * 10 + ["correct_refusal"] * 10
    cand = ["wrongful_refusal"] * newly_refused + ["answered"] * (10 - newly_refused) + \
           ["answered_abstain"] * newly_refused + ["correct_refusal"] * (10 - newly_refused)
    pair = make_pair(tmp_path, {"nDCG@10": [0.5] * 20}, {"nDCG@10": [0.5] * 20}, classes,
                     outcomes={"base": base, "cand": cand})
    text = "[[rule]]\ntype = 'refusal'\nrate = 'wrongful'\n[[rule]]\ntype = 'refusal'\nrate = 'correct'"
    wrongful, correct = evaluate(tmp_path, text, pair)
    assert wrongful.status == correct.status == status
    assert wrongful.numbers["worse"] == newly_refused
    assert wrongful.numbers["p"] == pytest.approx(stats.mcnemar_p(newly_refused, 0))
    assert correct.numbers["cand"] == pytest.approx(1 - newly_refused / 10)


def test_a_refusal_rule_with_no_query_of_its_kind_is_skipped_saying_so(tmp_path, classed):
    text = "[[rule]]\ntype = 'refusal'\nrate = 'wrongful'\n[[rule]]\ntype = 'refusal'\nrate = 'correct'"
    wrongful, correct = evaluate(tmp_path, text, classed)  # 66 answerable queries, no abstain query
    assert wrongful.status == "pass" and wrongful.numbers["n"] == 66
    assert correct.status == "skipped" and correct.summary == "the query set has no abstain queries"
    abstain = make_pair(tmp_path / "abstain", {"nDCG@10": [0.0] * 3}, {"nDCG@10": [0.0] * 3}, ["abstain"] * 3)
    wrongful, correct = evaluate(tmp_path, text, abstain)
    assert wrongful.status == "skipped" and wrongful.summary == "the query set has no answerable queries"
    assert correct.status == "pass" and correct.numbers["n"] == 3


def test_floor_is_on_the_candidates_mean(tmp_path):
    pair = make_pair(tmp_path, {"nDCG@10": [0.0] * 4}, {"nDCG@10": [0.5] * 4, "GoldDoc@3": [1, 1, 1, 0]}, ["trap"] * 4)
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'floor'\nmin = 0.75", pair)
    assert o.status == "pass" and o.numbers["mean"] == 0.75
    (o,) = evaluate(tmp_path, "[[rule]]\ntype = 'floor'\nmin = 0.8\nclass = 'trap'", pair)
    assert o.status == "fail" and "0.750" in o.summary
    with pytest.raises(RulesError, match=r"rule 'floor GoldDoc@3 \(needle\) >= 0.8': class 'needle' has no answerable "
                                         r"queries"):
        evaluate(tmp_path, "[[rule]]\ntype = 'floor'\nmin = 0.8\nclass = 'needle'", pair)


def _timing(ratios: np.ndarray, seed: int = 0) -> PairedTiming:
    base = np.random.default_rng(seed).uniform(0.002, 0.02, ratios.size)
    return PairedTiming(tuple(base), tuple(base * ratios), warmup=5)


def test_latency_decides_on_the_paired_timing_and_never_on_recorded_latencies(tmp_path):
    scores = {"nDCG@10": [0.5] * 40}
    pair = make_pair(tmp_path / "same", scores, scores, ["trap"] * 40, latency={"base": 0.010, "cand": 0.013})
    rule = rules.load(rules_file(tmp_path, "[[rule]]\ntype = 'latency'\nmax_ratio = 1.2"))
    rng = np.random.default_rng(1)
    verdict = lambda timing: rules.evaluate(rule, pair, timing)[0]  # noqa: E731
    o = verdict(None)  # recorded ratio 1.3 > 1.2, but recorded latencies do not decide
    assert o.status == "skipped" and "no side-by-side timing" in o.summary and "ratio 1.30" in o.summary
    o = verdict(Untimed("arm 'my-plugin' of base cannot be built here: unknown arm 'my-plugin'"))
    assert o.status == "skipped" and "cannot re-time: arm 'my-plugin'" in o.summary
    o = verdict(_timing(rng.lognormal(np.log(1.02), 0.05, 40)))
    assert o.status == "pass" and o.numbers["high"] <= 1.2 and o.numbers["recorded"]["ratio"] == pytest.approx(1.3)
    o = verdict(_timing(rng.lognormal(np.log(2.0), 0.05, 40)))
    assert o.status == "fail" and o.numbers["low"] > 1.2 and "> 1.2; recorded" in o.summary
    o = verdict(_timing(rng.lognormal(np.log(1.2), 0.5, 40)))
    assert o.status == "underpowered" and o.numbers["low"] < 1.2 < o.numbers["high"]
    o = verdict(_timing(np.full(5, 8.0)))  # five queries: however clear, no 95% interval of a median
    assert o.status == "underpowered" and "with too few queries for a 95% interval (it takes 6)" in o.summary
    o = verdict(_timing(rng.lognormal(np.log(8.0), 0.05, 6)))  # six, all eight times slower: a regression
    assert o.status == "fail" and o.numbers["low"] > 1.2 and "over 6 queries (after 5 untimed)" in o.summary


def test_latency_decides_also_when_the_runs_environments_differ(tmp_path):
    scores = {"nDCG@10": [0.5] * 4}
    a = write_results(tmp_path / "a", {"x": scores}, ["trap"] * 4)
    b = write_results(tmp_path / "b", {"x": scores}, ["trap"] * 4, environment={**ENVIRONMENT, "machine": {"cpus": 64}})
    rule = rules.load(rules_file(tmp_path, "[[rule]]\ntype = 'latency'"))
    (o,) = rules.evaluate(rule, comparison.pair(comparison.side(a), comparison.side(b)), _timing(np.full(30, 1.0)))
    assert o.status == "pass" and "other environments" in o.summary and o.numbers["ratio"] == pytest.approx(1.0)


def _robustness(path: Path, arm: str = "cand", shift: float = 0.01) -> None:
    report = robustness_report(path, "cand")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"arm": arm, "permutations": 5, "seed": 0, "measures": {
        "nDCG@10": {"original": 0.5, "min": 0.5 - shift, "max": 0.5, "max_abs_shift": shift}}}))


def test_robustness_reads_the_candidates_report(tmp_path):
    scores = {"nDCG@10": [0.5] * 4}
    pair = make_pair(tmp_path, scores, scores, ["trap"] * 4)
    text = "[[rule]]\ntype = 'robustness'\nmax_shift = 0.02"
    with pytest.raises(RulesError, match=r"robustness.json not found: run `evalkit robustness --corpus fixture "
                                         r"--qrels qrels/fixture.toml --arm 'cand' --out .*` first"):
        evaluate(tmp_path, text, pair)
    results = pair.cand.results.path
    _robustness(results, shift=0.01)
    (o,) = evaluate(tmp_path, text, pair)
    assert o.status == "pass" and o.numbers["max_abs_shift"] == 0.01 and o.numbers["permutations"] == 5
    _robustness(results, shift=0.05)
    assert evaluate(tmp_path, text, pair)[0].status == "fail"
    _robustness(results, arm="base")
    with pytest.raises(RulesError, match="is for arm 'base', not 'cand'"):
        evaluate(tmp_path, text, pair)
    _robustness(results)
    with pytest.raises(RulesError, match="has no measure 'RR'"):
        evaluate(tmp_path, text + "\nmeasure = 'RR'", pair)
    robustness_report(results, "cand").write_text("{")
    with pytest.raises(RulesError, match="is not a robustness report"):
        evaluate(tmp_path, text, pair)


def test_identical_runs_pass_every_relative_rule(tmp_path, classed):
    same = comparison.pair(classed.base, classed.base)
    outcomes = rules.evaluate(rules.load(dirs.shipped("gate.toml")), same, _timing(np.ones(30)))
    skipped = [o.rule for o in outcomes if o.status == "skipped"]  # no abstain query: no correct refusal rate
    assert {o.status for o in outcomes} == {"pass", "skipped"} and skipped == ["refusal: correct refusal may not fall"]
    assert [o.status for o in rules.evaluate(rules.load(dirs.shipped("gate.toml")),
                                             same)][-1] == "skipped"  # not re-timed


def test_finite_turns_nan_into_null():
    assert rules.finite({"a": [1.0, float("nan")], "b": (float("inf"), "x")}) == {"a": [1.0, None], "b": [None, "x"]}


def test_the_gate_says_no_variance_for_a_class_where_the_arms_are_identical(tmp_path):
    same = [0.2, 0.5, 0.5, 0.3, 0.7, 0.4]  # six queries: enough for the sign-flip test to decide at all
    scores = {"base": {"nDCG@10": same + [0.5, 0.1, 0.9]}, "cand": {"nDCG@10": same + [0.1, 0.9, 0.2]}}
    res = write_results(tmp_path / "r", scores, ["needle"] * 6 + ["trap"] * 3)
    pair = comparison.pair(comparison.side(f"{res}:base"), comparison.side(f"{res}:cand"))
    (o,) = evaluate(tmp_path, '[[rule]]\ntype = "class-drop"\n', pair)
    needle = next(d for d in o.details if d.label == "needle")
    assert "no variance" in needle.text and "MDD 0.000" not in needle.text


def test_class_drop_says_n_too_small_instead_of_an_mdd_beyond_the_range(tmp_path, two_per_class):
    pair = comparison.pair(comparison.side(f"{two_per_class}:base"), comparison.side(f"{two_per_class}:cand"))
    (o,) = evaluate(tmp_path, '[[rule]]\ntype = "class-drop"\n', pair)
    assert o.status == "underpowered" and [d.label for d in o.details] == ["needle", "trap"]
    assert all("n too small" in d.text and "MDD" not in d.text for d in o.details)

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from evalkit import comparison, gating
from evalkit import escape as esc
from evalkit.latency import PairedTiming
from evalkit.reports import prose
from evalkit.results import Results

from .conftest import evalkit_in_namespace, write_results

RULES = """
[[rule]]
type = "non-inferiority"
measure = "nDCG@10"
[[rule]]
type = "class-drop"
measure = "nDCG@10"
[[rule]]
type = "floor"
measure = "nDCG@10"
min = 0.1
[[rule]]
type = "latency"
"""


@pytest.fixture
def runs(tmp_path):
    """base; a candidate that moves needle queries at random and drops every trap query by 0.3; and one
    identical to base."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.4, 0.9, 44)
    classes = ["needle"] * 22 + ["trap"] * 22
    worse = np.r_[base[:22] + rng.normal(0, 0.1, 22), base[22:] - 0.3]
    return write_results(tmp_path / "run", {"base": {"nDCG@10": list(base)}, "worse": {"nDCG@10": list(worse)},
                                            "same": {"nDCG@10": list(base)}}, classes)


def verdict(runs, cand, tmp_path, text=RULES, **kw):
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return gating.evaluate(comparison.side(f"{runs}:base"), comparison.side(f"{runs}:{cand}"), path, **kw)


def test_a_regression_fails_and_names_its_rule_and_class(runs, tmp_path):
    v = verdict(runs, "worse", tmp_path)
    assert v.exit_code == 1 and not v.passed
    assert [o.status for o in v.outcomes] == ["fail", "fail", "pass", "skipped"]  # latency: not re-timed
    assert "class-drop nDCG@10 per class >= -0.05 [trap]" in v.headline()
    assert v.rules_sha256 == __import__("hashlib").sha256(RULES.encode()).hexdigest()
    text = v.text()
    assert v.rules_sha256 in text and "FAIL" in text and "trap       fail" in text and "exit 1" in text


def test_identical_runs_pass(runs, tmp_path):
    v = verdict(runs, "same", tmp_path)
    assert v.exit_code == 0 and v.passed and [o.status for o in v.outcomes] == ["pass"] * 3 + ["skipped"]
    assert v.headline().startswith("evalkit gate: PASS (exit 0)")


def test_runs_of_different_depths_cannot_be_gated(runs, tmp_path):
    other = write_results(tmp_path / "shallow", {"base": {"nDCG@10": [0.5] * 44}}, ["needle"] * 22 + ["trap"] * 22)
    m = other / "manifest.json"
    m.write_text(m.read_text().replace('"depth": 100', '"depth": 10'))
    path = tmp_path / "gate.toml"
    path.write_text(RULES)
    with pytest.raises(comparison.CompareError, match="kept 100 and 10 hits per query"):
        gating.evaluate(comparison.side(f"{runs}:base"), comparison.side(f"{other}:base"), path)


def test_underpowered_blocks_only_when_the_rules_say_so(runs, tmp_path):
    rng = np.random.default_rng(4)
    base = rng.uniform(0.2, 0.8, 22)
    noisy = np.clip(base + rng.normal(0, 0.3, 22), 0, 1)
    d = write_results(tmp_path / "noisy", {"base": {"nDCG@10": list(base)}, "noisy": {"nDCG@10": list(noisy)}},
                      ["spread"] * 22)
    rule = "[[rule]]\ntype = 'class-drop'\nmeasure = 'nDCG@10'\n"
    v = verdict(d, "noisy", tmp_path, rule)
    assert v.outcomes[0].status == "underpowered" and v.exit_code == 0
    v = verdict(d, "noisy", tmp_path, "[gate]\nunderpowered_blocks = true\n" + rule)
    assert v.exit_code == 1 and "class-drop" in v.headline()


def test_json_round_trips_and_has_no_nan(runs, tmp_path):
    v = verdict(runs, "worse", tmp_path)
    data = json.loads(v.to_json())
    assert data["exit_code"] == 1 and data["passed"] is False and data["rules_sha256"] == v.rules_sha256
    json.dumps(data, allow_nan=False)  # strict JSON
    back = gating.Verdict.from_dict(data)
    assert back.text() == v.text() and back.exit_code == 1
    assert [o.details for o in back.outcomes] == [o.details for o in v.outcomes]


def test_junit_parses_with_one_case_per_rule(runs, tmp_path):
    v = verdict(runs, "worse", tmp_path, RULES + "[[rule]]\ntype = 'class-drop'\nname = 'needle alone'\n"
                                              "measure = 'nDCG@10'\nclasses = ['needle']\nmax_drop = 0.01\n")
    root = ET.fromstring(v.junit())
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [o.rule for o in v.outcomes]
    assert suite.get("tests") == "5" and suite.get("failures") == "2" and suite.get("skipped") == "2"
    assert [c.find("failure") is not None for c in cases] == [True, True, False, False, False]
    assert cases[4].find("skipped").get("message").startswith("underpowered")
    assert "trap" in cases[1].find("failure").text
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["rules_sha256"] == v.rules_sha256


def test_markdown_and_html_show_every_rule_and_the_rules_digest(runs, tmp_path):
    v = verdict(runs, "worse", tmp_path)
    md = v.markdown()
    assert md.startswith("### evalkit gate: FAIL") and v.rules_sha256 in md
    rows = [line for line in md.splitlines() if line.startswith("| **")]
    assert len(rows) == len(v.outcomes) and "<details><summary>class-drop" in md
    page = v._repr_html_()
    assert "<table>" in page and v.rules_sha256 in page and page.count("<tr>") > len(v.outcomes)
    assert "&gt;=" in page  # rule names are escaped


def test_show_reads_gate_json_and_says_when_there_is_none(runs, tmp_path):
    none = gating.show(runs)
    assert isinstance(none,
                      gating.NoVerdict) and "No gate verdict" in repr(none) and "evalkit gate" in none._repr_html_()
    v = verdict(runs, "worse", tmp_path)
    (runs / gating.GATE_FILE).write_text(v.to_json())
    shown = gating.show(runs)
    assert isinstance(shown, gating.Verdict) and shown.text() == v.text()


def test_gate_json_records_what_it_was_computed_on_and_the_report_shows_it_only_while_that_holds(runs, tmp_path):
    v = verdict(runs, "worse", tmp_path)
    (runs / gating.GATE_FILE).write_text(v.to_json())
    recorded = json.loads((runs / gating.GATE_FILE).read_text())["computed_on"]
    assert recorded["candidate"]["arm"] == "worse" and recorded["baseline"]["arm"] == "base"
    assert recorded["candidate"]["qrels"] == "q0ffee" and len(recorded["candidate"]["per_query"]) == 64
    assert isinstance(gating.show(runs), gating.Verdict)
    import pandas as pd
    pq = pd.read_parquet(runs / "per_query.parquet")
    pq.loc[0, "nDCG@10"] = 1.0  # the run's measures changed after the verdict (a rerun, a resume)
    pq.to_parquet(runs / "per_query.parquet", index=False)
    stale = gating.show(runs)
    assert isinstance(stale, gating.NoVerdict) and "per_query changed since the verdict" in repr(stale)


def test_an_edited_verdict_is_not_shown_as_the_gates(runs, tmp_path):
    """gate.json is data: a FAIL edited to PASS is evaluated again from its rules on the runs, and the report
    shows the mismatch instead of the edited verdict."""
    v = verdict(runs, "worse", tmp_path)
    forged = json.loads(v.to_json())
    for o in forged["outcomes"]:
        o["status"] = "pass"
    forged.update(passed=True, exit_code=0)
    (runs / gating.GATE_FILE).write_text(json.dumps(forged))
    shown = gating.show(runs)
    assert isinstance(shown, gating.NoVerdict), shown
    assert "does not match what its rules give" in shown.why and "records 'pass'" in shown.why
    assert "evaluated again 'fail'" in shown.why and "PASS" not in prose._gate_sentence(Results.load(runs))
    forged = json.loads(v.to_json())  # the same statuses, a figure changed (or an older evalkit's wording)
    forged["outcomes"][0]["summary"] += " (edited)"
    (runs / gating.GATE_FILE).write_text(json.dumps(forged))
    why = gating.show(runs).why
    assert f"records '{v.outcomes[0].status}', evaluated again the same, with other figures or words" in why, why
    (tmp_path / "gate.toml").write_text(RULES + "\n")  # the rules changed since: nothing to evaluate again
    (runs / gating.GATE_FILE).write_text(v.to_json())
    assert "rules file" in gating.show(runs).why and "changed since the verdict" in gating.show(runs).why


def test_a_verdict_is_evaluated_again_on_the_timing_it_records(runs, tmp_path):
    timing = PairedTiming(tuple(0.01 + 0.001 * i for i in range(12)), tuple(0.05 + 0.001 * i for i in range(12)), 2)
    v = verdict(runs, "same", tmp_path, timing=timing)
    assert v.outcomes[-1].status == "fail" and v.timing["paired"]["warmup"] == 2
    (runs / gating.GATE_FILE).write_text(v.to_json())
    assert isinstance(gating.show(runs), gating.Verdict)  # its own timing gives its own latency outcome
    edited = json.loads(v.to_json())
    edited["timing"]["paired"]["cand_s"] = edited["timing"]["paired"]["base_s"]  # the timing cannot be swapped either
    (runs / gating.GATE_FILE).write_text(json.dumps(edited))
    assert "latency" in gating.show(runs).why


def test_a_verdict_without_digests_is_not_shown(runs, tmp_path):
    v = json.loads(verdict(runs, "worse", tmp_path).to_json())
    del v["computed_on"]
    (runs / gating.GATE_FILE).write_text(json.dumps(v))
    assert "records no digests" in repr(gating.show(runs))


@pytest.mark.parametrize("status", ["running", "failed", "interrupted"])
def test_gate_and_compare_refuse_a_run_that_is_not_complete(runs, tmp_path, status):
    m = json.loads((runs / "manifest.json").read_text())
    (runs / "manifest.json").write_text(json.dumps({**m, "status": status}))
    with pytest.raises(comparison.CompareError, match=f"the run is {'interrupted' if status == 'running' else status}"
                                                   r".*, not complete \(manifest.json field 'status'\)"):
        verdict(runs, "worse", tmp_path)


def test_the_gate_says_what_a_small_set_can_detect_before_the_rules(tmp_path, two_per_class):
    rules_path = tmp_path / "gate.toml"
    rules_path.write_text('[[rule]]\ntype = "non-inferiority"\n[[rule]]\ntype = "class-drop"\n')
    v = gating.evaluate(comparison.side(f"{two_per_class}:base"), comparison.side(f"{two_per_class}:cand"), rules_path)
    assert v.detectable == ("nDCG@10(doc) at 80% power: all n too small (n 4); needle n too small (n 2); "
                            "trap n too small (n 2)",)  # 4 queries: the sign-flip test's smallest p is 1/8
    lines = v.text().splitlines()
    assert lines.index(f"detects   {v.detectable[0]}") < min(i for i, line in enumerate(lines)
                                                             if line.startswith(("PASS", "FAIL", "UNDERPOWERED")))
    assert "4.084" not in v.text() and "2.478" not in v.text()
    assert esc.markdown(v.detectable[0]) in v.markdown() and esc.html(v.detectable[0]) in v._repr_html_()
    assert gating.Verdict.from_dict(json.loads(v.to_json())).detectable == v.detectable


@pytest.mark.slow
@pytest.mark.parametrize("cand, code, says", [("worse", 1, "FAIL"), ("same", 0, "PASS")])
def test_a_read_only_candidate_folder_still_gets_its_verdict_and_exit_code(runs, tmp_path, cand, code, says):
    """CI gates a checkout it may not write to: the verdict and its exit code stand, and one line says that
    gate.json (the report's copy) could not be written and why; the folder is left as it was."""
    rules = tmp_path / "gate.toml"
    rules.write_text(RULES.split("[[rule]]\ntype = \"latency\"")[0])
    before = sorted(p.name for p in runs.iterdir())
    p = evalkit_in_namespace(f"mount --bind {runs} {runs}; mount -o remount,bind,ro {runs}",
                             ["gate", "--baseline", f"{runs}:base", "--candidate", f"{runs}:{cand}", "--rules",
                              str(rules)])
    assert p.returncode == code and f"evalkit gate: {says} (exit {code})" in p.stdout, (p.stdout, p.stderr)
    assert p.stderr == (f"evalkit: warning: {runs / gating.GATE_FILE}: read-only file system (write to another "
                        f"folder): the verdict stands, but the report of {runs} will not show it\n"), p.stderr
    assert sorted(p.name for p in runs.iterdir()) == before

"""The gate on a partially graded set: rules on measures decided from the person's graded queries plus a
judge's predictions (evalkit.judged), undecided verdicts, their exit codes, and gate.json's judge identity."""
import dataclasses
import html
import json
import os
from contextlib import chdir
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from evalkit import api, comparison, estimates, gating, judged, qrels, rules
from evalkit.cli import main
from evalkit.records import Judgment
from evalkit.reports import prose
from evalkit.results import Results

from .conftest import write_results

RULES = """
[[rule]]
type = "non-inferiority"
measure = "nDCG@10(doc)"
margin = 0.02
[[rule]]
type = "class-drop"
measure = "nDCG@10(doc)"
max_drop = 0.05
[[rule]]
type = "lost-queries"
measure = "GoldDoc@3"
max_queries = 3
[[rule]]
type = "floor"
measure = "nDCG@10"
min = 0.1
[[rule]]
type = "refusal"
rate = "wrongful"
"""
N = 64
DECIDE = """
[[rule]]
type = "non-inferiority"
measure = "nDCG@10(doc)"
margin = 0.05
[[rule]]
type = "refusal"
rate = "wrongful"
"""


def _values(delta: float, seed: int = 1) -> dict[str, dict[str, np.ndarray]]:
    """Per-query measures of two arms whose mean difference is about ``delta``."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, N)
    cand = np.clip(base + delta + rng.normal(0, 0.1, N), 0, 1)
    return {arm: {"nDCG@10": v, "nDCG@10(doc)": v, "GoldDoc@3": (v > 0.45).astype(float)}
            for arm, v in (("base", base), ("cand", cand))}


def _classes() -> list[str]:
    return [comparison.ANSWERABLE[i % len(comparison.ANSWERABLE)] for i in range(N)]


def _predicted(values: dict[str, np.ndarray], ids: list[str], rng, bias: float) -> pd.DataFrame:
    """The judge's expectation of each measure: the truth plus noise plus ``bias``."""
    noisy = {m: np.clip(v + bias + rng.normal(0, 0.05, N), 0, 1) for m, v in values.items()}
    return pd.DataFrame({m: noisy[m] for m in estimates.MEASURES}, index=pd.Index(ids, name="query"))


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(RULES)
    return path


@dataclasses.dataclass(frozen=True)
class _Given:
    """A judge loader (as :class:`evalkit.judged.Loader`) handing the gate a judge built here; the synthetic runs
    hold every query already."""

    judge: judged.Judge

    def sides(self, base, cand):
        return base, cand

    def __call__(self, pair):
        return self.judge


def _gate(tmp_path, rules_file, delta, graded, *, cand_bias=0.0, seed=0, undecided="fail", rules_text=None):
    """Gate cand against base over synthetic runs, a person having graded the first ``graded`` queries of a
    random order, the judge predicting every query (its candidate predictions off by ``cand_bias``)."""
    vals = _values(delta)
    ids = [f"q{i:03d}" for i in range(N)]
    res = write_results(tmp_path / "r", {a: {m: list(v) for m, v in by.items()} for a, by in vals.items()}, _classes())
    rng = np.random.default_rng(7)
    person = rng.permutation(ids)[:graded]
    preds = tmp_path / "judge.csv"
    if not preds.exists():
        preds.write_text("query,doc,page,p_ge1,p_ge2,p_eq3\nq000,a.pdf,1,0.5,0.2,0.1\n")
    judge = judged.Judge(str(preds), judged.sha256(preds), "", {q: () for q in person},
                         _predicted(vals["base"], ids, rng, 0.0), _predicted(vals["cand"], ids, rng, cand_bias))
    if rules_text:
        rules_file.write_text(rules_text)
    elif seed:
        rules_file.write_text(f"[gate]\nseed = {seed}\n{RULES}")
    return gating.evaluate(comparison.side(res, "base"), comparison.side(res, "cand"), rules_file,
                           judge=_Given(judge), undecided=undecided), person


def test_an_undecided_rule_names_the_queries_to_grade_drawn_reproducibly(tmp_path, rules_file):
    verdict, person = _gate(tmp_path, rules_file, 0.04, 10)
    rule = verdict.outcomes[0]
    assert rule.status == "undecided"
    pick = rule.numbers["grade_next"]
    assert 0 < len(pick) <= N - 10 and not set(pick) & set(person) and len(set(pick)) == len(pick)
    assert f"undecided: grade {len(pick)} more queries: {pick[0]}, " in rule.summary  # no pool recorded: no pages
    assert _gate(tmp_path, rules_file, 0.04, 10)[0].outcomes[0].numbers["grade_next"] == pick
    assert _gate(tmp_path, rules_file, 0.04, 10, seed=5)[0].outcomes[0].numbers["grade_next"] != pick
    assert verdict.exit_code == 1 and verdict.headline().startswith("evalkit gate: UNDECIDED (exit 1")
    assert _gate(tmp_path, rules_file, 0.04, 10, undecided="pass")[0].exit_code == 0


def test_an_undecided_verdict_reads_undecided_in_every_form_never_fail(tmp_path, rules_file, monkeypatch):
    """The report said FAIL for a gate the terminal called UNDECIDED: gate.json held only passed = false."""
    verdict, _ = _gate(tmp_path, rules_file, 0.04, 10)
    assert verdict.status == "undecided" and not verdict.passed
    again = gating.Verdict.from_dict(json.loads(verdict.to_json()))
    assert json.loads(verdict.to_json())["status"] == again.status == "undecided"
    assert verdict.markdown().startswith("### evalkit gate: UNDECIDED") and "FAIL" not in verdict.markdown()
    assert ">UNDECIDED</b>" in verdict._repr_html_() and ">FAIL<" not in verdict._repr_html_()
    failed = dataclasses.replace(verdict, outcomes=(dataclasses.replace(verdict.outcomes[0], status="fail"),
                                                    *verdict.outcomes[1:]))
    undecided = [o.rule for o in verdict.outcomes[1:] if o.status == "undecided"]
    assert failed.status == "fail" and failed.headline().endswith(  # an undecided rule is not called failed
        f"Failed: {verdict.outcomes[0].rule}. Undecided: {'; '.join(undecided)}") and undecided
    monkeypatch.setattr(gating, "show", lambda path: verdict)  # the report's sentence, on the verdict it reads
    sentence = prose._gate_sentence(SimpleNamespace(path=tmp_path))
    assert ": **UNDECIDED** (" in sentence and "; undecided: " in sentence and "FAIL" not in sentence
    monkeypatch.setattr(gating, "show", lambda path: failed)
    sentence = prose._gate_sentence(SimpleNamespace(path=tmp_path))
    assert ": **FAIL** (" in sentence and "; failed: " in sentence and "; undecided: " in sentence


def test_an_undecided_rule_never_asks_for_no_more_queries(tmp_path, rules_file):
    """Class-drop's intervals are at 1 - alpha / classes: what deciding them takes is counted at that level,
    and an open interval asks for at least one more query."""
    verdict, _ = _gate(tmp_path, rules_file, 0.0, 24)
    parts = [n for o in verdict.outcomes for _, n in judged.asks(o)]
    assert parts and all(n["grade_next"] or n["to_grade"] == estimates.NOT_DECIDABLE for n in parts)
    assert "grade 0 more" not in verdict.text()


@pytest.mark.parametrize("delta, status", [(-0.3, "fail"), (0.2, "pass")])
def test_a_clear_difference_is_decided_from_a_few_graded_queries(tmp_path, rules_file, delta, status):
    verdict, _ = _gate(tmp_path, rules_file, delta, 12)
    assert verdict.outcomes[0].status == status
    assert verdict.outcomes[0].numbers["graded"] == 12 and verdict.outcomes[0].numbers["n"] == N


def test_a_judge_that_flatters_the_candidate_is_corrected_not_believed(tmp_path, rules_file):
    """The judge predicts the candidate 0.4 better than it is: its labels alone would pass a candidate that
    is 0.3 worse; the correction on the graded queries fails it."""
    verdict, _ = _gate(tmp_path, rules_file, -0.3, 12, cand_bias=0.4)
    rule = verdict.outcomes[0]
    assert rule.status == "fail" and rule.numbers["high"] < -0.02


def test_with_every_query_graded_the_verdict_is_the_plain_gates(tmp_path, rules_file):
    verdict, _ = _gate(tmp_path, rules_file, -0.01, N)
    res = tmp_path / "r"
    plain = gating.evaluate(comparison.side(res, "base"), comparison.side(res, "cand"), rules_file)
    assert [(o.status, o.summary) for o in verdict.outcomes] == [(o.status, o.summary) for o in plain.outcomes]
    assert verdict.exit_code == plain.exit_code


def test_a_rule_on_a_measure_the_judge_cannot_predict_is_refused(tmp_path, rules_file):
    with pytest.raises(rules.RulesError, match="measure 'RR': a judge's predictions give"):
        _gate(tmp_path, rules_file, 0.0, 10, rules_text='[[rule]]\ntype = "non-inferiority"\nmeasure = "RR"\n')


def test_gate_json_records_the_judge_and_is_refused_once_the_predictions_change(tmp_path, rules_file, capsys):
    """The verdict the report shows is evaluated again with the judge it records (gating.show), so a gate.json
    decided with a judge stands while its predictions do, and is refused once they change."""
    res, q, preds = _cli_set(tmp_path, 10)
    main(["gate", "--baseline", f"{res}:base", "--candidate", f"{res}:cand", "--rules", str(rules_file),
          "--judge", preds, "--qrels", q])
    stored = gating.read(Path(res) / gating.GATE_FILE)
    assert stored.judge["sha256"] == judged.sha256(preds) and stored.undecided == "fail"
    assert stored.judge["graded_queries"] == [f"q{i:03d}" for i in range(10)]
    assert set(stored.judge["agreement"]) == {o.rule for o in stored.outcomes if "judge_r" in o.numbers}
    said = " ".join(t for o in stored.outcomes for t in [o.summary, *(d.text for d in o.details)])
    undecided = stored.judge["undecided"]  # what deciding each undecided rule takes, in the words the gate printed
    assert set(undecided) == {k for o in stored.outcomes for k, _ in judged.asks(o)}
    assert all(v["to_grade"] in said for v in undecided.values())
    shown = stored.text()  # beside the verdict: who graded what, r per rule, what deciding each rule takes
    assert "graded by a person: 10 queries whole: q000, q001, " in shown and "judge-person r: " in shown
    assert all(f"{label}: {v['to_grade']}" in shown for label, v in undecided.items())
    assert all(f"<li>{html.escape(label)}: " in stored._repr_html_() for label in undecided)
    with chdir(rules_file.parent):  # the verdict names its rules file as the gate was given it
        assert isinstance(gating.show(Path(res)), gating.Verdict)
        Path(preds).write_text("query,doc,page,p_ge1,p_ge2,p_eq3\nq000,a.pdf,1,0.9,0.2,0.1\n")
        assert "the judge changed since the verdict" in repr(gating.show(Path(res)))
        assert main(["report", str(res)]) == 2


def test_graded_whole_means_every_pooled_page_graded(tmp_path):
    path = tmp_path / "q.toml"
    path.write_text("""
[[query]]
id = "whole"
class = "needle"
text = "a"
pooled = ["a.pdf#1", "a.pdf#2"]
judgments = [{ doc = "a.pdf", page = 1, gain = 0 }, { doc = "a.pdf", page = 2, gain = 3 }]
[[query]]
id = "part"
class = "needle"
text = "b"
pooled = ["a.pdf#1", "a.pdf#2"]
judgments = [{ doc = "a.pdf", page = 1, gain = 2 }]
[[query]]
id = "none"
class = "needle"
text = "c"
pooled = ["a.pdf#1"]
[[query]]
id = "legacy"
class = "needle"
text = "d"
judgments = [{ doc = "a.pdf", page = 4, gain = 1 }]
""")
    assert judged.graded_queries(qrels.load(path)) == {"whole", "legacy"}


# ---- the command line, end to end: predictions read from a file, rankings from the runs ----------------


def _cli_set(tmp_path, graded: int) -> tuple[str, str, str]:
    """A results directory with recorded answers, the query file it was scored with (the first ``graded``
    queries graded whole) and a judge's predictions of every pooled page; returns (results, qrels, preds)."""
    vals = _values(0.0)
    ids = [f"q{i:03d}" for i in range(N)]
    res = write_results(tmp_path / "r", {a: {m: list(v) for m, v in by.items()} for a, by in vals.items()}, _classes())
    rng = np.random.default_rng(3)
    (res / "runs").mkdir()
    for arm in ("base", "cand"):
        lines = [json.dumps({"query": q, "hits": [[f"d{k}.pdf", 1, 1.0] for k in rng.permutation(5)], "refused": False})
                 for q in ids]
        (res / "runs" / f"{arm}.jsonl").write_text("\n".join(lines) + "\n")
    pooled = ", ".join(f'"d{k}.pdf#1"' for k in range(5))
    grades = ", ".join(f'{{ doc = "d{k}.pdf", page = 1, gain = {k % 4} }}' for k in range(5))
    text = "".join(f'[[query]]\nid = "{q}"\nclass = "{c}"\ntext = "t"\npooled = [{pooled}]\n'
                   + (f"judgments = [{grades}]\n" if i < graded else "")
                   for i, (q, c) in enumerate(zip(ids, _classes(), strict=True)))
    (tmp_path / "q.toml").write_text(text)
    manifest = json.loads((res / "manifest.json").read_text())
    manifest["qrels"]["digest"] = qrels.load(tmp_path / "q.toml").digest
    (res / "manifest.json").write_text(json.dumps(manifest))
    rows = [(q, f"d{k}.pdf", 1, *sorted(rng.uniform(0, 1, 3), reverse=True)) for q in ids for k in range(5)]
    pd.DataFrame(rows, columns=list(estimates.COLUMNS)).to_csv(tmp_path / "judge.csv", index=False)
    return str(res), str(tmp_path / "q.toml"), str(tmp_path / "judge.csv")


@pytest.mark.parametrize("extra, code", [([], 1), (["--undecided", "pass"], 0)])
def test_gate_with_judge_exits_1_on_undecided_unless_told_to_pass(tmp_path, rules_file, capsys, extra, code):
    res, q, preds = _cli_set(tmp_path, 10)
    argv = ["gate", "--baseline", f"{res}:base", "--candidate", f"{res}:cand", "--rules", str(rules_file),
            "--judge", preds, "--qrels", q, *extra]
    assert main(argv) == code
    out = capsys.readouterr().out
    assert "UNDECIDED" in out and "10 of 64 queries graded" in out
    assert json.loads((tmp_path / "r" / gating.GATE_FILE).read_text())["judge"]["graded_queries"] == \
        [f"q{i:03d}" for i in range(10)]


def test_gate_with_judge_exits_2_on_predictions_it_cannot_use(tmp_path, rules_file, capsys):
    res, q, preds = _cli_set(tmp_path, 10)
    pd.read_csv(preds).drop(columns="p_eq3").to_csv(preds, index=False)
    argv = ["gate", "--baseline", f"{res}:base", "--candidate", f"{res}:cand", "--rules", str(rules_file),
            "--judge", preds, "--qrels", q]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "lack the column(s) p_eq3" in err and len(err.splitlines()) == 1


def test_ek_gate_takes_the_judge(tmp_path, rules_file):
    res, q, preds = _cli_set(tmp_path, 10)
    verdict = api.gate(res, res, rules_file, baseline_arm="base", candidate_arm="cand", judge=preds, queries=q,
                       record=False)
    assert verdict.judge["sha256"] == judged.sha256(preds) and verdict.outcomes[0].status == "undecided"
    assert verdict.judge["queries"] == q and verdict.judge["predictions"] == preds


def test_compare_with_judge_prints_each_predicted_difference_and_what_deciding_it_takes(tmp_path, capsys):
    res, q, preds = _cli_set(tmp_path, 10)
    assert main(["compare", f"{res}:base", f"{res}:cand", "--judge", preds, "--qrels", q]) == 0
    out = capsys.readouterr().out
    for m in estimates.MEASURES:
        assert f"  {m} " in out
    assert "10 of 64 queries graded" in out and "not estimated (a judge's predictions give" in out and "RR" in out
    frame = api.compare(Results.load(res), "base", "cand", judge=preds, queries=q)
    assert set(frame.index.get_level_values("measure")) == set(estimates.MEASURES)
    assert set(frame.index.get_level_values("class")) == {comparison.ALL, *comparison.ANSWERABLE}
    row = frame.loc[("cand", "GoldDoc@3", "all")]
    assert (row["graded"], row["n"]) == (10, N) and (frame["graded"] <= frame["n"]).all()


def test_decidable_says_after_each_grade_what_the_gate_can_say_and_which_page_is_next(tmp_path, rules_file):
    res, q, preds = _cli_set(tmp_path, 10)
    rules_file.write_text(DECIDE)
    qs = qrels.load(q)
    now = judged.decidable(res, "base", "cand", preds, qs, rules_file)
    assert now.startswith("not yet (") and "nDCG@10(doc) (all) > -0.05: undecided" in now
    assert "refusal: wrongful refusal may not rise: pass" in now  # every rule, with what the gate says of it
    k = int(now.split("undecided: grade ")[1].split()[0])
    assert f"undecided: grade {k} more queries ({5 * k} pages): " in now
    ask = now.split("grade next: query ")[1].split(",")[0]
    assert ask in qs.pooled and ask not in judged.graded_queries(qs)
    assert now.endswith("(5 of its 5 pooled pages left)")
    first = qs.pooled[ask][0]
    assert f"page {first[0]}#{first[1]} " in now
    graded_one = dataclasses.replace(qs, queries=tuple(
        dataclasses.replace(x, judgments=(Judgment(*first, 0),)) if x.id == ask else x for x in qs.queries))
    after = judged.decidable(res, "base", "cand", preds, graded_one, rules_file)
    assert f"grade next: query {ask}, " in after and after.endswith("(4 of its 5 pooled pages left)")
    everything = dataclasses.replace(qs, queries=tuple(
        dataclasses.replace(x, judgments=tuple(Judgment(*p, 1) for p in qs.pooled[x.id])) for x in qs.queries))
    assert judged.decidable(res, "base", "cand", preds, everything, rules_file).startswith("decided: ")


@pytest.mark.slow
def test_the_workbench_decider_rescoring_one_query_per_grade_says_what_a_fresh_one_says(tmp_path, rules_file):
    """The Decider keeps what does not change while a person grades and rescores only the queries whose
    grades changed: after each grade its answer is the one decidable computes from nothing."""
    res, q, preds = _cli_set(tmp_path, 10)
    rules_file.write_text(DECIDE)
    qs = qrels.load(q)
    decider = judged.Decider(res, "base", "cand", preds, rules_file)
    before = decider.decide(qs)
    assert before.status == "undecided" and before.text() == judged.decidable(res, "base", "cand", preds, qs,
                                                                               rules_file)
    ask = before.next.split()[1].rstrip(",")
    for n in range(1, 6):  # the person grades the query asked for, page by page
        qs = dataclasses.replace(qs, queries=tuple(dataclasses.replace(
            x, judgments=tuple(Judgment(*p, 3) for p in qs.pooled[x.id][:n])) if x.id == ask else x
            for x in qs.queries))
        after = decider.decide(qs)
        assert after.text() == judged.decidable(res, "base", "cand", preds, qs, rules_file)
    assert ask in decider.judge.graded and after.text() != before.text()
    assert ask not in after.grade.split(": ", 1)[1]  # graded whole: no longer asked for


def test_to_grade_says_queries_pages_and_which_in_one_way():
    assert estimates.to_grade(4, 37, True, [f"q{i}" for i in range(12)], 3) == \
        "undecided: grade 4 more queries (≈ 37 pages): q0, q1, q2, …"
    assert estimates.to_grade(1, 1) == "undecided: grade 1 more query (1 page)"


def test_a_verdict_gated_with_relative_paths_is_read_back_from_another_folder(tmp_path, rules_file):
    """gate.json records the judge's files resolved: the report re-evaluates the verdict from its own folder
    (a notebook gates from notebooks/, the report runs elsewhere)."""
    res, q, preds = _cli_set(tmp_path, 10)
    with chdir(tmp_path):
        rel = [os.path.relpath(p, tmp_path) for p in (res, q, preds)]
        main(["gate", "--baseline", f"{rel[0]}:base", "--candidate", f"{rel[0]}:cand", "--rules", str(rules_file),
              "--judge", rel[2], "--qrels", rel[1]])
    (tmp_path / "elsewhere").mkdir()
    with chdir(tmp_path / "elsewhere"):
        assert isinstance(gating.show(Path(res)), gating.Verdict)


def test_the_verdicts_note_says_where_qrels_judge_refused_the_judges_grades(tmp_path):
    """The gate used a judge refused for every class without a word (newcomer trial): its note says so, and
    what it means for the intervals; the refusals are read from the judge's record, when there is one."""
    from evalkit.autojudge.record import META, refused_classes

    preds = tmp_path / "judge" / "predictions.csv"
    preds.parent.mkdir()
    preds.write_text("query,doc,page,p_ge1,p_ge2,p_eq3\nq000,a.pdf,1,0.5,0.2,0.1\n")
    assert refused_classes(preds) == ()  # no judge.json: predictions made elsewhere say nothing
    (preds.parent / META).write_text("{")
    assert refused_classes(preds) == ()  # an unreadable record does not stop the gate
    (preds.parent / META).write_text(json.dumps({
        "judge": "abc", "agreement": [{"class": "needle", "kappa": 0.22}, {"class": "trap", "kappa": 0.61}],
        "verdicts": {"needle": "refused: kappa 0.22 < 0.40", "trap": "accepted"}}))
    assert refused_classes(preds) == ("needle",)
    empty = pd.DataFrame()
    judge = judged.Judge(str(preds), judged.sha256(preds), "", {"q000": ()}, empty, empty)
    assert "refused" not in judge.note()
    judge = dataclasses.replace(judge, refused=refused_classes(preds))
    assert "; evalkit qrels judge refused its grades for needle: the intervals still hold" in judge.note()

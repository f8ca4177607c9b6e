import json

import pytest

from evalkit import qrels, recorded, simulate

from .conftest import query, query_file, write_results

N = 6  # needle queries


def sim_set(path):
    """Each query: one gold page (gain 3) that arm `good` ranks first and arm `bad` does not list; nine
    pages both list, judged 0; `bad` also lists one page nobody judged."""
    sets = [query(f"q{q}", "needle", f"question {q}", (f"gold{q}.pdf", 1, 3, "x"),
                  *(("common.pdf", q * 10 + i, 0) for i in range(1, 10))) for q in range(N)]
    return qrels.load(query_file(path, *sets, name="sim", corpus="fixture"))


def answers_of(q):
    common = [["common.pdf", q * 10 + i, 1.0] for i in range(1, 10)]
    return {"good": [[f"gold{q}.pdf", 1, 2.0], *common], "bad": [*common, ["unjudged.pdf", q + 1, 0.5]]}


@pytest.fixture
def case(tmp_path):
    qs = sim_set(tmp_path / "sim.toml")
    d = write_results(tmp_path / "results", {"good": {"nDCG@10": [0.5] * N}, "bad": {"nDCG@10": [0.5] * N}},
                      ["needle"] * N, queries=qs.digest, ids=[f"q{q}" for q in range(N)])
    (d / "runs").mkdir()
    for arm in ("good", "bad"):
        (d / "runs" / f"{arm}.jsonl").write_text("".join(
            json.dumps({"query": f"q{q}", "text": "", "hits": answers_of(q)[arm], "refused": False, "reason": "",
                        "error": "", "latency": 0.01}) + "\n" for q in range(N)))
    rules = tmp_path / "gate.toml"
    rules.write_text('[[rule]]\ntype = "lost-queries"\nmeasure = "GoldDoc@3"\nmax_queries = 0\n')
    return qs, d, rules


def test_rescoring_with_the_full_judgments_gives_the_known_scores(case):
    qs, d, _ = case
    ans = recorded.answers(simulate.Results.load(d))
    full = simulate.truth(qs, simulate.Results.load(d), ans, ["nDCG@10", "Judged@10"], None)
    assert full.means["page"]["good"] == 1.0 and full.means["page"]["bad"] == 0.0
    assert full.gold == N


def test_the_whole_pool_reproduces_the_full_judgments_and_half_of_it_does_not(case):
    qs, d, rules = case
    sim = simulate.simulate(qs, d, ["depth(k=10)", "maxmean"], rules, budgets=(1, 2, 5))
    c = sim.curves
    assert sim.depth_pages == N * 11  # gold + 9 shared + 1 unjudged per query
    assert sim.unjudged == {"depth": N, "maxmean": N}
    last = c.groupby("strategy").tail(1)
    assert (last["pages"] == N * 11).all() and (last["gold_found"] == 1.0).all()
    assert (last["shift_page"] == 0).all() and (last["gate_vs_full"] == 0).all()
    # the gold page is the only one that decides: `good` keeps its GoldDoc@3 only once it is found
    one = c[(c["strategy"] == "depth") & (c["budget"] == 1)].iloc[0]
    assert one["pages"] == N and one["gold_found"] < 1.0


def test_maxmean_finds_every_gold_page_within_two_pages_a_query(case):
    """Both arms tie at first; whichever is tried, a non-relevant page sends the next turn to the other
    arm, whose first page is gold or not relevant: by two pages per query `good`'s first page is read."""
    qs, d, rules = case
    sim = simulate.simulate(qs, d, ["maxmean"], rules, budgets=(1, 2))
    two = sim.curves[sim.curves["budget"] == 2].iloc[0]
    assert two["gold_found"] == 1.0 and two["tau_page"] == 1.0 and two["shift_page"] == 0.0
    assert two["gate_vs_full"] == 0
    assert sim.summary.loc["maxmean", "pages to target (vs full)"] <= 2 * N


def test_leave_one_arm_out_scores_a_new_arm_against_a_pool_it_did_not_build(case):
    qs, d, _ = case
    loo = simulate.simulate(qs, d, ["depth(k=10)"], None, budgets=(1,)).loo.set_index("arm")
    # without `good`, its gold pages are never read: nDCG@10 falls from 1 to 0; 9 of its 10 pages judged
    assert loo.loc["good", "nDCG@10 bias"] == -1.0
    assert loo.loc["good", "Judged@10"] == pytest.approx(0.9)
    # without `bad`, nothing is lost: it found no relevant page, and its unjudged page stays unjudged
    assert loo.loc["bad", "nDCG@10 bias"] == 0.0 and loo.loc["bad", "Judged@10"] == pytest.approx(0.9)


def test_a_run_of_another_query_set_is_refused(case, tmp_path):
    _, d, _ = case
    other = tmp_path / "other.toml"
    other.write_text((tmp_path / "sim.toml").read_text().replace('"sim"', '"other"'))
    with pytest.raises(recorded.ResultsError, match="query set"):
        simulate.simulate(qrels.load(other), d, ["depth"], None)


@pytest.mark.slow
def test_the_command_writes_its_files_and_refuses_a_missing_directory(case, tmp_path, capsys):
    from evalkit.cli import main

    _, d, rules = case
    assert main(["qrels", "simulate", str(tmp_path / "sim.toml"), "--results", str(d), "--rules", str(rules),
                 "--strategies", "depth,maxmean", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "pages to target" in out and (tmp_path / "o" / "simulation.png").exists()
    assert main(["qrels", "simulate", str(tmp_path / "sim.toml"), "--results", str(tmp_path / "nowhere")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_figure_and_the_files_are_written(case, tmp_path):
    qs, d, rules = case
    sim = simulate.simulate(qs, d, ["depth(k=10)", "mtf"], rules, budgets=(1, 3))
    paths = simulate.write(sim, tmp_path / "out")
    assert [p.name for p in paths] == ["simulation.csv", "summary.csv", "loo.csv", "simulation.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    text = simulate.render(sim, rules)
    assert "never judged is read as gain 0" in text and "leave-one-arm-out" in text and "person-hours" not in text


def test_the_pages_to_the_target_are_priced_in_person_hours(case):
    from evalkit.effort import ReadingModel

    qs, d, rules = case
    sim = simulate.simulate(qs, d, ["depth(k=10)", "maxmean"], rules, budgets=(1, 3))
    model = ReadingModel(80, 250, 10.8, "measured over 2 graded pages in .sim.toml.time")  # 30 s a page
    lines = simulate.render(sim, rules, model).splitlines()
    at = lines.index(model.statement)
    assert lines[at + 1] == f"  the depth-10 pool read whole: {sim.depth_pages} pages = {sim.depth_pages / 120:.2f} h"
    row = sim.summary.loc["maxmean"]
    pages = int(row["pages to target (tau alone)"])
    assert lines[at + 3].startswith(f"  maxmean: {pages} pages (tau alone) = {pages / 120:.2f} h; ")


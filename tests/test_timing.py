"""The latency rule re-times both arms side by side: a deliberately slowed arm fails against a baseline
whatever load its run was recorded under, and a candidate whose slowdown is only the machine's passes.

The arms are re-timed on a simulated machine (:class:`evalkit.timing.Clock` is a parameter), where a search
costs what its arm says and the load is what the test sets: the rule's logic is checked, never this
machine's speed or load (those are measured by `evalkit bench`)."""
import importlib
import json
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from evalkit import comparison, gating, qrels, timing
from evalkit.cli import main
from evalkit.latency import PairedTiming, Untimed
from evalkit.runner import run

from .conftest import install_plugin, write_results

COST = 0.0005  # seconds of computing per keyword search on the simulated machine
DELAY = 0.002  # what the slowed arm adds per search
WAKE = 0.0001  # after a sleep, the moment a loaded machine takes to give the sleeper a core
SLOW = textwrap.dedent(f'''
    from evalkit.arms.keyword import KeywordArm
    from evalkit.timing import Clock


    class Machine:
        """A simulated machine whose ``clock`` the re-timing reads: a search costs what its arm says, and
        at ``load`` (other runnable processes per core) every second of computing also waits ``load``
        seconds in the run queue; a sleep waits on the arm's own account, then for a core to wake on."""

        def __init__(self):
            self.now = self.queued = self.load = 0.0
            self.clock = Clock(lambda: self.now, lambda: self.queued)

        def compute(self, seconds):
            self.queued += self.load * seconds
            self.now += (1 + self.load) * seconds

        def sleep(self, seconds):
            self.queued += self.load * {WAKE}
            self.now += seconds + self.load * {WAKE}


    MACHINE = Machine()


    class SimKeyword(KeywordArm):
        """The keyword arm on MACHINE, where each search computes for {COST} s."""
        name = "sim-keyword"

        def search(self, query, k):
            MACHINE.compute({COST})
            return super().search(query, k)


    class SlowKeyword(SimKeyword):
        """sim-keyword made slower on purpose: ``delay`` seconds more per search, asleep (an arm that
        waits) or, with ``spin``, computing (an arm that works)."""
        name = "slow-keyword"
        defaults = {{**KeywordArm.defaults, "delay": {DELAY}, "spin": False}}

        def search(self, query, k):
            (MACHINE.compute if self.params["spin"] else MACHINE.sleep)(self.params["delay"])
            return super().search(query, k)
''')
WORDS = ("table", "caption", "float", "spacing", "citation", "bibliography", "figure", "column", "page", "rule")
MAX_RATIO = 1.5
RULES = f"[[rule]]\ntype = 'latency'\nmax_ratio = {MAX_RATIO}\n"
SLOWER = 20  # the machine the second baseline was recorded on: this many times slower
LOAD = 11  # the load average the re-timing is also simulated under (2 cores shared by many sessions)
ARMS = ["keyword", "sim-keyword", "slow-keyword", "slow-keyword(spin=true)"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    arms = {"sim-keyword": "evalkit_slow_demo:SimKeyword", "slow-keyword": "evalkit_slow_demo:SlowKeyword"}
    return install_plugin(tmp_path_factory.mktemp("site"), "evalkit_slow_demo", SLOW, arms)


@pytest.fixture
def machine(site, monkeypatch):
    """The plug-in's simulated machine, quiet, with the plug-in on sys.path so its arms can be built."""
    monkeypatch.syspath_prepend(str(site))
    m = importlib.import_module("evalkit_slow_demo").MACHINE
    monkeypatch.setattr(m, "load", 0.0)
    return m


@pytest.fixture(scope="module")
def runs(small, site, tmp_path_factory):
    """``quiet``: keyword, sim-keyword and the slowed arms over 45 real two-word queries, with the latencies
    the quiet simulated machine records (:func:`_record`); ``loaded``: the same answers with every latency as a
    machine SLOWER times slower records them."""
    c, store = small
    d = tmp_path_factory.mktemp("timing")
    texts = [f"{a} {b}" for i, a in enumerate(WORDS) for b in WORDS[i + 1:]]
    (d / "q.toml").write_text("".join(f'[[query]]\nid = "t{i:02d}"\nclass = "abstain"\ntext = "{t}"\njudgments = []\n'
                                      for i, t in enumerate(texts)))
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(site))
        quiet = run(c, store, qrels.load(d / "q.toml"), ARMS, d / "quiet", progress=False)
    _record(quiet, 1)
    loaded = Path(shutil.copytree(quiet, d / "loaded"))
    _record(loaded, SLOWER)
    return {"quiet": quiet, "loaded": loaded, "rules": _rules(d), "cache": store.path}


def _record(results: Path, slower: float) -> None:
    """Every latency in ``results`` as a machine ``slower`` times slower than the quiet simulated one records it
    (the runner's own clock is this machine's)."""
    frame = pd.read_parquet(results / "per_query.parquet")
    frame["latency_s"] = [(COST + DELAY * arm.startswith("slow-")) * slower for arm in frame["arm"]]
    frame.to_parquet(results / "per_query.parquet", index=False)


def _rules(d: Path) -> Path:
    (d / "gate.toml").write_text(RULES)
    return d / "gate.toml"


def _gate(runs, base: str, cand: str, machine, load: float = 0.0):
    """The latency rule's outcome, both arms re-timed on the simulated machine at ``load``."""
    machine.load = load
    b, c = comparison.side(base), comparison.side(cand)
    t = timing.for_gate(b, c, runs["rules"], runs["cache"], clock=machine.clock)
    outcome = gating.evaluate(b, c, runs["rules"], timing=t).outcomes[0]
    return outcome.status, outcome.numbers["recorded"]["ratio"], outcome


@pytest.mark.parametrize("arm", ["slow-keyword", "slow-keyword(spin=true)"])
def test_a_slowed_arm_fails_against_baselines_recorded_under_any_load(runs, machine, arm):
    """Asleep (an arm that waits) or spinning (an arm that computes), the slowed arm fails, whichever
    baseline run it meets and whatever load it is re-timed under: its extra time is its own, not time spent
    waiting for a core."""
    cand = f"{runs['quiet']}:{arm}"
    quiet = _gate(runs, f"{runs['quiet']}:sim-keyword", cand, machine)
    loaded = _gate(runs, f"{runs['loaded']}:sim-keyword", cand, machine, LOAD)
    assert quiet[1] > MAX_RATIO > loaded[1]  # the recorded latencies alone would have disagreed
    assert quiet[0] == loaded[0] == "fail", (quiet[2].summary, loaded[2].summary)
    assert quiet[2].numbers["clock"] == loaded[2].numbers["clock"] == "unqueued"
    assert quiet[2].numbers["low"] > MAX_RATIO and "re-timed side by side over" in quiet[2].summary
    assert loaded[2].numbers["ratio"] == pytest.approx(quiet[2].numbers["ratio"])  # the load's queue waits left out


def test_a_slowdown_that_is_only_the_machine_passes_against_either_baseline(runs, machine):
    cand = f"{runs['loaded']}:sim-keyword"  # recorded on the slow machine
    quiet = _gate(runs, f"{runs['quiet']}:sim-keyword", cand, machine, LOAD)
    loaded = _gate(runs, f"{runs['loaded']}:sim-keyword", cand, machine)
    assert quiet[1] == pytest.approx(SLOWER) and loaded[1] == pytest.approx(1.0)
    assert quiet[0] == loaded[0] == "pass", (quiet[2].summary, loaded[2].summary)
    assert quiet[2].numbers["high"] <= MAX_RATIO and quiet[2].numbers["clock"] == "unqueued"


def test_evalkit_gate_retimes_and_fails_the_slowed_arm(runs, machine, monkeypatch, capsys):
    monkeypatch.setattr(timing, "SYSTEM", machine.clock)  # the command line re-times on the default clock
    machine.load = LOAD
    code = main(["gate", "--baseline", f"{runs['loaded']}:sim-keyword", "--candidate", f"{runs['quiet']}:slow-keyword",
                 "--rules", str(runs["rules"]), "--cache", str(runs["cache"]), "--json",
                 str(runs["rules"].parent / "v.json")])
    out = capsys.readouterr()
    assert code == 1 and "FAIL" in out.out and "re-timed side by side over 40 queries (after 5 untimed)" in out.out
    assert out.out.startswith("re-timing sim-keyword and slow-keyword side by side over 45 queries")
    numbers = json.loads((runs["rules"].parent / "v.json").read_text())["outcomes"][0]["numbers"]
    assert numbers["n"] == 40 and numbers["warmup"] == 5 and numbers["ratio"] > MAX_RATIO


def test_an_arm_not_installed_here_skips_the_rule_saying_so(runs):
    """slow-keyword's plug-in is not on sys.path in this test: its run cannot be re-timed."""
    b, c = comparison.side(f"{runs['quiet']}:keyword"), comparison.side(f"{runs['quiet']}:slow-keyword")
    t = timing.for_gate(b, c, runs["rules"], runs["cache"])
    assert isinstance(t, Untimed) and "arm 'slow-keyword'" in t.reason and "cannot be built here" in t.reason
    o = gating.evaluate(b, c, runs["rules"], timing=t).outcomes[0]
    assert o.status == "skipped" and "cannot re-time: arm 'slow-keyword'" in o.summary and "not deciding" in o.summary


def first_pages(query, k):
    return []  # answers nothing, quickly: only its registration matters here


def test_a_notebook_function_is_retimed_in_its_notebook_and_the_shell_says_why_not(small, runs, monkeypatch):
    """The notebook (its ek.arm registered) re-times it; the shell (a process without it) skips the latency
    rule saying the arm is a notebook function, not "unknown arm" (issue 33)."""
    from evalkit import arms
    from evalkit.arms import function

    monkeypatch.setattr(arms, "_LOCAL", {})
    spec = function.register(first_pages, "mine")
    c, store = small
    out = run(c, store, qrels.load(runs["quiet"].parent / "q.toml"), ["keyword", spec],
              runs["quiet"].parent / f"fn-{spec}", progress=False)
    b, f = comparison.side(f"{out}:keyword"), comparison.side(f"{out}:{spec}")
    assert isinstance(timing.for_gate(b, f, runs["rules"], runs["cache"]), PairedTiming)
    monkeypatch.setattr(arms, "_LOCAL", {})
    t = timing.for_gate(b, f, runs["rules"], runs["cache"])
    assert isinstance(t, Untimed) and f"arm {spec!r} is a notebook function (ek.arm)" in t.reason
    o = gating.evaluate(b, f, runs["rules"], timing=t).outcomes[0]
    assert o.status == "skipped" and "re-timing it needs the notebook that registered it" in o.summary


def test_a_corpus_that_is_gone_or_changed_skips_the_rule(runs, tmp_path):
    moved = Path(shutil.copytree(runs["quiet"], tmp_path / "moved"))
    m = json.loads((moved / "manifest.json").read_text())
    m["corpus"]["root"] = str(tmp_path / "nowhere")
    (moved / "manifest.json").write_text(json.dumps(m))
    t = timing.retime(comparison.side(f"{moved}:keyword"), comparison.side(f"{moved}:keyword"), runs["cache"])
    assert isinstance(t, Untimed) and "10 document(s) missing" in t.reason
    fixture = write_results(tmp_path / "fixture", {"a": {"nDCG@10": [0.5] * 4}}, ["trap"] * 4)
    t = timing.retime(comparison.side(fixture), comparison.side(fixture), runs["cache"])
    assert isinstance(t, Untimed) and "does not list the documents" in t.reason


def test_no_latency_rule_means_no_retiming(runs, tmp_path):
    (tmp_path / "r.toml").write_text("[[rule]]\ntype = 'floor'\nmin = 0.0\n")
    side = comparison.side(f"{runs['quiet']}:keyword")
    assert timing.for_gate(side, side, tmp_path / "r.toml", runs["cache"]) is None


class Recorder:
    """An arm stand-in that records the order it is asked in (the real arms are timed above)."""

    def __init__(self, name: str, log: list):
        self.name, self.log = name, log

    def search(self, query: str, k: int):
        self.log.append((self.name, query))


def test_queries_alternate_who_goes_first_after_an_untimed_warmup():
    log: list = []
    t = timing.interleaved(Recorder("b", log), Recorder("c", log), list("pqrstu"), k=10, warmup=2)
    assert [len(v) for v in t.values()] == [4] * 4 and all(x >= 0 for v in t.values() for x in v)
    assert log == [("b", "p"), ("c", "p"), ("b", "q"), ("c", "q"), ("b", "r"), ("c", "r"), ("c", "s"), ("b", "s"),
                   ("b", "t"), ("c", "t"), ("c", "u"), ("b", "u")]
    assert PairedTiming(tuple(t["base"]), tuple(t["cand"]), 2).clock == "wall"  # no CPU times: the wall clock


def test_sides_that_cannot_be_gated_are_refused_before_any_arm_is_built(runs, tmp_path):
    other = write_results(tmp_path / "other", {"a": {"nDCG@10": [0.5] * 4}}, ["trap"] * 4)
    with pytest.raises(comparison.CompareError, match="different corpora"):
        timing.for_gate(comparison.side(other), comparison.side(f"{runs['quiet']}:keyword"), runs["rules"],
                        runs["cache"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_default_clock_is_this_machines_wall_clock_and_run_queue_wait():
    before = timing.SYSTEM.queued()
    assert timing.SYSTEM.wall is time.perf_counter and 0 <= before <= timing.SYSTEM.queued()

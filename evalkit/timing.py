"""Re-timing two arms side by side for the gate's latency rule (:mod:`evalkit.latency` says why).

Both arms are rebuilt from their results directories' manifests (spec, corpus, depth, page text mode) in
this process, asked ``warmup`` queries untimed, then every other query once each, alternating which arm
goes first, so a moment of load lands on both and the first asker's cold pages are shared out evenly,
on the wall clock and less the time each search waited for a core (:mod:`evalkit.latency`). A
query is asked once per arm because asking it again would time the arms' per-query caches. When the arms
cannot be rebuilt here (a plug-in not installed, the corpus missing or changed), the result says why and
the rule is skipped. This module builds arms; the gate itself only reads the :class:`PairedTiming`.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import arms, calibration, comparison, dirs, rules
from .corpora import Corpus, verify
from .latency import PairedTiming, Untimed
from .pages import VISIBLE_ONLY, PageStore
from .records import Document
from .recorded import read_records

WARMUP = 5  # untimed queries asked of both arms first: imports, SQLite pages, model sessions


def queued_seconds() -> float:
    """Seconds this thread has waited in the run queue for a core (``/proc/thread-self/schedstat``, Linux);
    NaN where the kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return math.nan


@dataclass(frozen=True)
class Clock:
    """What a re-timing reads around each search: seconds on the wall clock and seconds this thread has
    waited for a core so far. A parameter, so the rule's logic can be checked on a simulated machine whose
    load and speed the caller sets (tests/test_timing.py), apart from this machine's."""

    wall: Callable[[], float] = time.perf_counter
    queued: Callable[[], float] = queued_seconds


SYSTEM = Clock()  # this machine's clocks: the one every re-timing reads unless it is given another


def interleaved(base: arms.Arm, cand: arms.Arm, queries: Sequence[str], k: int,
                warmup: int = WARMUP, clock: Clock | None = None) -> dict[str, list[float]]:
    """Seconds per query of each arm, wall clock (``base``, ``cand``) and wall clock less the time spent
    waiting for a core (``base_unqueued``, ``cand_unqueued``), asked alternately (even queries baseline
    first, odd candidate first) after ``warmup`` queries asked of both untimed (at most half the list, so
    a short one keeps most); read on ``clock`` (default :data:`SYSTEM`)."""
    clock = clock or SYSTEM
    warmup = min(warmup, len(queries) // 2)
    for q in queries[:warmup]:
        base.search(q, k)
        cand.search(q, k)
    times: dict[str, list[float]] = {"base": [], "cand": [], "base_unqueued": [], "cand_unqueued": []}
    for i, q in enumerate(queries[warmup:]):
        for name, arm in ((("base", base), ("cand", cand)) if i % 2 == 0 else (("cand", cand), ("base", base))):
            t0, q0 = clock.wall(), clock.queued()  # the wait is read inside the wall interval, so never exceeds it
            arm.search(q, k)
            queued = clock.queued() - q0
            wall = clock.wall() - t0
            times[name].append(wall)
            times[f"{name}_unqueued"].append(max(wall - queued, 0.0))  # two kernel clocks: no -1 ns
    return times


def recorded_corpus(side: comparison.Side) -> Corpus | Untimed:
    """The corpus a results directory was run on, from its manifest, if its files are still there unchanged."""
    c = side.results.manifest["corpus"]
    docs = tuple(Document(name, sha, 0) for name, sha in sorted(c.get("documents", {}).items()))
    corpus = Corpus(c["name"], Path(c.get("root", "")), docs)
    if not docs or corpus.digest() != c["digest"]:
        return Untimed(f"{side.results.path}'s manifest does not list the documents of corpus {c['name']!r}")
    v = verify(corpus)
    if v.missing or v.changed:
        return Untimed(f"corpus {c['name']!r} is not in {corpus.root} as it was run ({len(v.missing)} document(s) "
                       f"missing, {len(v.changed)} changed)")
    return corpus


def query_texts(side: comparison.Side) -> dict[str, str]:
    """Query id -> text, as the side's arm was asked it (its recorded answers)."""
    info = next(a for a in side.results.manifest["arms"] if a["label"] == side.arm)
    return {qid: rec["text"] for qid, rec in read_records(side.results.path / "runs" / f"{info['file']}.jsonl").items()}


def _spec(side: comparison.Side) -> str:
    return next(a["spec"] for a in side.results.manifest["arms"] if a["label"] == side.arm)


def retime(base: comparison.Side, cand: comparison.Side, cache: Path | None = None, warmup: int = WARMUP,
           log: Callable[[str], None] | None = None, clock: Clock | None = None) -> PairedTiming | Untimed:
    """Both sides' arms timed side by side over the queries both answered (texts as the candidate was
    asked them), on the candidate's corpus with its page text mode, read on ``clock``; :class:`Untimed`
    saying why not."""
    corpus = recorded_corpus(cand)
    if isinstance(corpus, Untimed):
        return corpus
    texts, done = query_texts(cand), set(query_texts(base))
    queries = [texts[q] for q in sorted(texts) if q in done]
    hidden = "drop" if VISIBLE_ONLY in cand.results.manifest.get("extractor", "") else "index"
    store = PageStore(cache, hidden)
    built: list[arms.Arm] = []
    try:
        corpus = store.ingest(corpus, progress=False).corpus
        for side in (base, cand):
            try:
                built.append(arms.make(_spec(side), corpus, store))
                built[-1].prepare()
            except Exception as e:  # noqa: BLE001 - a plug-in not installed, a model not here: say so, skip
                return Untimed(f"arm {_spec(side)!r} of {side.results.path} cannot be built here: {e}")
        if log:
            log(f"re-timing {built[0].label} and {built[1].label} side by side over {len(queries)} queries")
        before = calibration.load_average()[0]
        t = interleaved(built[0], built[1], queries, cand.results.manifest.get("depth", 100), warmup, clock)
        unqueued = [tuple(t[f"{s}_unqueued"]) if not any(map(math.isnan, t[f"{s}_unqueued"])) else ()
                    for s in ("base", "cand")]
        return PairedTiming(tuple(t["base"]), tuple(t["cand"]), min(warmup, len(queries) // 2),
                            (before, calibration.load_average()[0]), *unqueued)
    finally:
        for arm in built:
            arm.close()
        store.close()


def for_gate(base: comparison.Side, cand: comparison.Side, rules_path: Path | str | None, cache: Path | None = None,
             allow_different_queries: bool = False,
             log: Callable[[str], None] | None = None, clock: Clock | None = None) -> PairedTiming | Untimed | None:
    """The paired timing a rules file's latency rule needs (None when it has no latency rule), read on
    ``clock``. Sides that cannot be gated at all (another corpus or query set) are refused first, before
    any arm is built."""
    if not any(isinstance(r, rules.Latency) for r in rules.load(rules_path or dirs.rules_path()).rules):
        return None
    comparison.pair(base, cand, allow_different_queries)
    return retime(base, cand, cache, log=log, clock=clock)

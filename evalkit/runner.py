"""The runner: every arm over every query, into a self-describing results directory.

    results/<name>/
      manifest.json        what ran, on which bytes, with which versions, on which machine
      runs/<arm>.jsonl     the raw answers, one line per query, appended as they come (what --resume reads)
      runs/<arm>.trec      TREC run files, page ids "<doc>#<page>", strictly decreasing scores
      per_query.parquet    one row per (graded query, arm): class, kind, measures, outcome, confidence, latency,
                           ties (an ungraded query, without judgment, is answered but not measured: the
                           manifest lists it under qrels.ungraded, for the judge's gate)
      summary.csv          per arm and class

The score column of the .trec files is ``n - rank + 1``: trec_eval re-sorts by score (then by document id,
descending) and compares scores at single precision, so an arm's own scores, which tie inside fused bands
and differ by less than 1e-7 elsewhere, would let it reorder the arm's ranking. The arms' own scores
are kept in the .jsonl files and in every per-query record.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from . import answers, arms, executor, ids, recorded, resultsdir
from .atomic import replacing
from .corpora import Corpus
from .defaults import DEPTH
from .embeddings import ModelSpec
from .environment import completed, environment
from .oserrors import naming
from .pages import EXTRACTOR, PageStore
from .qrels import QuerySet, ungraded
from .records import Answer, Hit, Query, page_id
from .results import Results, summarize
from .resultsdir import slug
from .version import __version__

CHUNK_TEXTS = 10  # chunks whose text a record keeps: what the evidence measure at 10 reads


class RunError(Exception):
    """A run that cannot start or resume as asked; the message says why and what to do."""


def model_ids(arm: arms.Arm) -> list[dict]:
    """The embedding models behind an arm and everything it is built from, at any depth (a hybrid's
    semantic input, an admission wrapper's arm and policy)."""
    found, seen = [], set()

    def visit(obj: arms.Configurable) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        spec = getattr(obj, "spec", None)
        if isinstance(spec, ModelSpec):
            model = {"arm": obj.label, "name": spec.model, "weights": spec.weights_id(),
                     "max_tokens": spec.max_tokens, "window": spec.window, "cache_key": spec.key}
            if model not in found:
                found.append(model)
        for v in vars(obj).values():
            if isinstance(v, arms.Configurable):
                visit(v)

    visit(arm)
    return found


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def trec_lines(qid: str, hits: tuple[Hit, ...], tag: str) -> list[str]:
    """TREC run lines in the arm's order, scores ``n - rank + 1`` (strictly decreasing integers)."""
    n = len(hits)
    return [f"{ids.encode(qid)} Q0 {page_id(h.doc, h.page)} {rank} {n - rank + 1} {tag}\n"
            for rank, h in enumerate(hits, 1)]


def _record(q: Query, result: Answer, latency: float, cut: int | None = None) -> dict:
    """The jsonl record of one answer: what :func:`evalkit.recorded.answer` reads back and --resume compares
    by query text. A
    chunk retriever's chunks are kept with the pages each was mapped to (the text of the first
    :data:`CHUNK_TEXTS` only); ``cut``: the depth an answer longer than it was cut to."""
    rec = {"query": q.id, "text": q.text, "hits": [[h.doc, h.page, h.score] for h in result.hits],
           "refused": result.refused, "reason": result.reason, "confidence": result.confidence,
           "error": result.error, "latency": latency}
    if cut is not None:
        rec["cut_to_k"] = cut
    if result.chunks:
        rec["chunks"] = [[c.doc, list(c.pages), c.score, c.text if i < CHUNK_TEXTS else ""]
                         for i, c in enumerate(result.chunks)]
    return rec


def checked(result: Answer, pages: dict[str, int], k: int) -> tuple[Answer, bool]:
    """The answer as recorded, and whether it was longer than ``k``: its first k pages
    (:func:`evalkit.answers.within`) when valid (:func:`evalkit.answers.problem`), else an error of its query
    that says what was wrong, so one bad answer never stops a run nor reaches a measure."""
    result, cut = answers.within(result, k)
    problem = answers.problem(result, pages)
    return (replace(result, hits=(), chunks=(), error=f"invalid answer: {problem}") if problem else result), cut


def answer(arm: arms.Arm, query: str, k: int) -> Answer:
    """One query answered as a run records it (an exception or an invalid answer is the query's error), for
    `evalkit search`: what one query shows is what a run would have measured."""
    return checked(_timed_search(arm, query, k)[0], page_counts(arm), k)[0]


def page_counts(arm: arms.Arm) -> dict[str, int]:
    """Each document's pages, the range an answer's pages are checked against."""
    return {d.name: d.pages or len(arm.store.texts(d)) for d in arm.corpus.documents}  # 0: not counted yet


@dataclass(frozen=True)
class CheckedArms:
    """Arm specs :func:`check_arms` accepted for depth ``k``: :func:`run` given them does not check again."""

    specs: tuple[str, ...]
    k: int


def check_arms(specs: Sequence[str], k: int) -> CheckedArms:
    """Refuse, before any work, arm lists a run cannot use: empty, misspelt, out of range, or one arm twice."""
    if not specs or not all(s.strip() for s in specs):
        raise RunError(f"--arms lists no arm or an empty one: {','.join(specs)!r}")
    if k < 1:
        raise RunError(f"-k must be at least 1 (hits kept per query), not {k}")
    for spec in specs:
        arms.validate(spec)
    if twins := arms.same_arm(list(specs)):
        raise RunError(f"--arms names one arm twice ({twins[0]!r} and {twins[1]!r}): it would count every query twice")
    return CheckedArms(tuple(specs), k)


def run(corpus: Corpus, store: PageStore, qs: QuerySet, specs: Sequence[str] | CheckedArms, out: Path,
        k: int = DEPTH, resume: bool = False, progress: bool = True) -> Path:
    """Run ``specs`` over ``qs`` and write the results directory ``out``; returns ``out``.

    With ``resume``, a directory from an earlier run on the same corpus and depth is continued: an answer
    already recorded for a query with the same text is not asked again and nothing recorded is lost.
    Judgments may have changed (every measure is recomputed), queries may be added or reworded (only
    those are asked), and arms may be added (they run) or left out (their files stay, but the tables and
    the manifest list only ``specs``). Specs are checked before anything is written, unless
    :func:`check_arms` checked them for this ``k`` already."""
    checked = specs if isinstance(specs, CheckedArms) else check_arms(specs, k)
    if checked.k != k:
        checked = check_arms(checked.specs, k)
    plan = {"corpus": {"name": corpus.name, "digest": corpus.digest(), "root": str(corpus.root),
                       "documents": {d.name: d.sha256 for d in corpus.documents}},
            "qrels": {"name": qs.name, "path": str(qs.path or ""), "digest": qs.digest, "queries": len(qs.queries),
                      "gains": {str(g): d for g, d in sorted(qs.gains.items(), reverse=True)},
                      "ungraded": list(ungraded(qs))},
            "depth": k, "extractor": store.extractor}
    with resultsdir.owned(out) as out:
        manifest_path = out / "manifest.json"
        if manifest_path.exists():
            if not resume:
                raise RunError(f"{out} already holds a run: pass --resume (resume=True in Python) to continue it "
                               "and measure it with the query set as it is now, or choose another --out")
            old = resultsdir.read_json(manifest_path)
            old.setdefault("extractor", EXTRACTOR)  # runs from before it was recorded indexed all text
            for key in ("corpus", "depth", "extractor"):
                if old.get(key) != plan[key]:
                    raise RunError(f"cannot resume {out}: its {key} differs from this run's "
                                   "(remove the directory or choose another --out)")
            manifest = {**old, "qrels": plan["qrels"], "specs": list(checked.specs)}
        else:
            manifest = {**plan, "specs": list(checked.specs), "evalkit": __version__, "started": _now(),
                        "environment": environment(), "arms": []}
        manifest["status"] = "running"
        manifest.pop("error", None)
        resultsdir.write_json(manifest_path, manifest)
        if left := manifest["qrels"]["ungraded"]:
            print(f"evalkit: {len(left)} of {len(qs.queries)} queries are ungraded (no judgment yet: "
                  f"{', '.join(left[:5])}{' …' if len(left) > 5 else ''}): every arm answers them, and they are "
                  "measured only with a judge (`evalkit qrels judge`, then `evalkit gate --judge`)", file=sys.stderr)
        try:
            _run_all(corpus, store, qs, list(checked.specs), out, manifest, k, progress)
        except BaseException as e:  # Ctrl-C or a failing arm: the manifest says so, and --resume continues
            manifest.update(status="interrupted" if isinstance(e, KeyboardInterrupt) else "failed",
                            error=f"{type(e).__name__}: {e}".strip(), finished=_now())
            resultsdir.write_json(manifest_path, manifest)
            raise
    return out


def _run_all(corpus: Corpus, store: PageStore, qs: QuerySet, specs: list[str], out: Path, manifest: dict,
             k: int, progress: bool) -> None:
    manifest_path, runs, counted = out / "manifest.json", out / "runs", store.counted()
    runs.mkdir(exist_ok=True)
    described = {a["file"] for a in manifest["arms"]}
    for stale in sorted(runs.glob("*.jsonl")):  # answers no manifest entry describes are never read
        if stale.stem not in described:
            os.replace(stale, stale.with_name(f"{stale.name}.untrusted"))
            print(f"{stale}: not described by {manifest_path}; moved aside to {stale.name}.untrusted", file=sys.stderr)
    built = {a["spec"]: a for a in manifest["arms"]}
    files: dict[str, str] = {}
    for spec in specs:
        t0 = time.perf_counter()
        arm = arms.make(spec, corpus, store)
        if executor.current() is not None and not arm.travels:
            raise RunError(f"arm {arm.label!r} is defined in this process (a notebook's retriever), so the "
                           "executor's workers cannot build it: run it without an executor, or package it "
                           "as a plug-in (entry point group evalkit.arms)")
        if executor.current() is None:  # on an executor the workers' instances answer, and prepare themselves
            arm.prepare()
        info: dict[str, Any] = {"spec": spec, "label": arm.label, "file": slug(arm.label), "params": arm.params,
                "class": f"{type(arm).__module__}.{type(arm).__qualname__}",
                "build_seconds": round(time.perf_counter() - t0, 3)}
        if info["file"] in files:
            raise RunError(f"arms {files[info['file']]!r} and {spec!r} have the same label {arm.label!r}")
        files[info["file"]] = spec
        if models := model_ids(arm):
            info["models"] = models
        built[spec] = {**built.get(spec, {}), **info}
        manifest["arms"] = [built[s] for s in specs if s in built]
        resultsdir.write_json(manifest_path, manifest)
        try:
            _run_arm(arm, spec, qs, runs / f"{info['file']}.jsonl", k, progress)
            _say_answers(arm.label, qs, runs / f"{info['file']}.jsonl", k)
            if description := _describe(arm, spec):
                built[spec]["describe"] = description
                resultsdir.write_json(manifest_path, manifest)
        finally:
            _close(arm, spec)
        with replacing(runs / f"{info['file']}.trec") as tmp:
            tmp.write_text("".join(line for rec in recorded.ordered(qs, runs / f"{info['file']}.jsonl")
                                   for line in trec_lines(rec[0].id, recorded.answer(rec[1]).hits, info["file"])))

    frame = per_query(qs, manifest["arms"], runs)
    frame.attrs["evalkit"] = resultsdir.measured(manifest)  # what these measures belong to, kept in the file
    with replacing(out / "per_query.parquet") as tmp:
        frame.to_parquet(tmp, index=False)
    with replacing(out / "summary.csv") as tmp:
        summarize(frame).to_csv(tmp, index=False)
    manifest.update(status="complete", finished=_now(), environment=completed(manifest.get("environment", {})))
    resultsdir.write_json(manifest_path, manifest)
    # this run's, not the open store's; empty on an executor: its workers read the cache
    if used := store.usage(since=counted):
        print(f"cache {store.path}: {used}", file=sys.stderr)


def _run_arm(arm: arms.Arm, spec: str, qs: QuerySet, path: Path, k: int, progress: bool) -> None:
    """Ask ``arm`` every query not answered yet and append the answers to ``path`` in query order (so an
    interrupted run, local or distributed, leaves a prefix that --resume continues)."""
    lines = path.read_text().splitlines() if path.exists() else []
    done = recorded.records(lines)
    if len(done) != len(lines):  # drop a half-written line (and answers superseded by a re-asked query)
        with replacing(path) as tmp:
            tmp.write_text("".join(json.dumps(r) + "\n" for r in done.values()))
    todo = [q for q in qs.queries if done.get(q.id, {}).get("text") != q.text]
    ex = executor.current()
    answers: Iterator[tuple[int, tuple[Answer, float]]]
    if ex is None:
        answers = ((i, _timed_search(arm, q.text, k)) for i, q in enumerate(todo))
    else:  # QUERIES_PER_TASK to a task: the answers come back as they would one by one
        starts = range(0, len(todo), QUERIES_PER_TASK)
        done_tasks = ex.map(search_task, [(*_where(spec, arm), tuple(q.text for q in todo[s:s + QUERIES_PER_TASK]), k)
                                          for s in starts])
        answers = ((starts[i] + j, answer) for i, got in done_tasks for j, answer in enumerate(got))
    ready: dict[int, tuple[Answer, float]] = {}
    written = 0
    pages = page_counts(arm)
    with naming(path), open(path, "a") as f, tqdm(total=len(todo), desc=arm.label, unit="query", file=sys.stderr,
                                                  disable=not progress or not todo) as bar:
        for i, answer in answers:
            ready[i] = answer
            bar.update()
            while written in ready:
                result, latency = ready.pop(written)
                result, cut = checked(result, pages, k)
                f.write(json.dumps(_record(todo[written], result, latency, k if cut else None)) + "\n")
                f.flush()
                written += 1


def _timed_search(arm: arms.Arm, query: str, k: int) -> tuple[Answer, float]:
    """One answer and its wall-clock time. An exception is that query's error (a retriever's bug on one
    query does not stop the run), except :class:`evalkit.arms.ArmFailure`: an arm that cannot go on."""
    t0 = time.perf_counter()
    try:
        result = arm.search(query, k)
    except arms.ArmFailure:
        raise
    except Exception as e:  # noqa: BLE001 - whatever a retriever raises is recorded as its error
        result = Answer(error=f"{type(e).__name__}: {e}")
    return result, time.perf_counter() - t0


def _say_answers(label: str, qs: QuerySet, path: Path, k: int) -> None:
    """One line on stderr for an arm with errors: how many, and the first query's, so a user sees at once
    which arm and query to look at (every error is in the results: ``errors`` and ``error`` columns); and
    one for an arm that answered more than ``k`` hits (cut to k: ``cut_to_k`` in its records)."""
    recs = recorded.ordered(qs, path)
    errors = [(q.id, rec["error"]) for q, rec in recs if rec.get("error")]
    if errors:
        print(f"evalkit: arm {label!r}: {len(errors)} of {len(qs.queries)} queries recorded as errors, "
              f"first query {errors[0][0]!r}: {errors[0][1]}", file=sys.stderr)
    if cut := [q.id for q, rec in recs if rec.get("cut_to_k")]:
        print(f"evalkit: arm {label!r}: {len(cut)} of {len(qs.queries)} answers held more than k = {k} hits, "
              f"first query {cut[0]!r}: the first {k} were kept", file=sys.stderr)


_WORKER_ARMS: dict[tuple, arms.Arm] = {}
# Queries sent to a worker in one task: a task costs the client, the scheduler and the worker tens of CPU-ms
# whatever it holds, more than a lexical search itself (benchmarks/executor_tasks.py: the latex set on four
# lexical arms over two local workers, 18.2 s of wall time in one-query tasks and 9.1 s in tasks of 8).
QUERIES_PER_TASK = 8


def _where(spec: str, arm: arms.Arm) -> tuple[str, Corpus, str, str]:
    """What a worker needs to build the same arm: spec, corpus, cache path and hidden-text mode."""
    return spec, arm.corpus, str(arm.store.path), "drop" if arm.store.visible_only else "index"


def _worker_key(spec: str, corpus: Corpus, cache: str, hidden_text: str) -> tuple:
    """What a worker keeps an arm under: one key, so the queries and the description find one instance."""
    return spec, corpus.digest(), cache, hidden_text


def search_task(spec: str, corpus: Corpus, cache: str, hidden_text: str, queries: tuple[str, ...],
                k: int) -> list[tuple[Answer, float]]:
    """A few queries on one arm, each timed where it runs: the task a remote executor runs. A worker process
    builds each arm once (reading indexes and vectors from the cache at the same path), prepares it, and
    keeps it until the arm's run is recorded (:func:`release_task`)."""
    key = _worker_key(spec, corpus, cache, hidden_text)
    if key not in _WORKER_ARMS:
        arm = arms.make(spec, corpus, PageStore(Path(cache), hidden_text=hidden_text))
        arm.prepare()
        _WORKER_ARMS[key] = arm
    return [_timed_search(_WORKER_ARMS[key], query, k) for query in queries]


def release_task(spec: str, corpus: Corpus, cache: str, hidden_text: str) -> None:
    """Close and forget this worker's instance of an arm once its run is recorded: its server stops, and
    the next run starts afresh instead of adding to this one's restarts and warm-ups."""
    arm = _WORKER_ARMS.pop(_worker_key(spec, corpus, cache, hidden_text), None)
    if arm is not None:
        arm.close()
        arm.store.close()


def describe_task(spec: str, corpus: Corpus, cache: str, hidden_text: str) -> dict | None:
    """What this worker's instance of an arm describes (None where the worker answered none of its queries)."""
    arm = _WORKER_ARMS.get(_worker_key(spec, corpus, cache, hidden_text))
    return arm.describe() if arm is not None else None


def _describe(arm: arms.Arm, spec: str) -> dict:
    """The arm's description from the instances that answered: this one, or on an executor each worker's
    (a remote worker may run another server version, restart its server, warm up on its own), by address."""
    ex = executor.current()
    if ex is None:
        return arm.describe()
    workers = {w: d for w, d in sorted(ex.each_worker(describe_task, *_where(spec, arm)).items()) if d}
    return {"workers": workers} if workers else {}


def _close(arm: arms.Arm, spec: str) -> None:
    """Close the arm's instances once its run ends, answered or failed: this one, and on an executor each
    worker's (:func:`release_task`)."""
    arm.close()
    if (ex := executor.current()) is not None:
        ex.each_worker(release_task, *_where(spec, arm))


def per_query(qs: QuerySet, arm_infos: list[dict], runs: Path) -> pd.DataFrame:
    """:func:`evalkit.recorded.per_query` of the measured queries: an ungraded one
    (:func:`evalkit.qrels.ungraded`) has no judgment to measure against, so it is left out, as trec_eval
    leaves out a query without judgments, not counted as a 0; the judge's gate reads its answers."""
    left = set(ungraded(qs))
    return recorded.per_query(replace(qs, queries=tuple(q for q in qs.queries if q.id not in left)), arm_infos, runs)


def rescore(qs: QuerySet, results_path: Path) -> pd.DataFrame:
    """The arms' recorded answers in a results directory scored with ``qs``'s current judgments (queries
    both hold; a query reworded since it was asked is left out), one row per (query, arm): what the power
    planner (:mod:`evalkit.planning`) reads the spread of differences from."""
    res = Results.load(results_path)
    infos = res.manifest["arms"]
    asked = [recorded.read_records(res.path / "runs" / f"{a['file']}.jsonl") for a in infos]
    shared = tuple(q for q in qs.queries if all(a.get(q.id, {}).get("text") == q.text for a in asked))
    return per_query(replace(qs, queries=shared), infos, res.path / "runs")

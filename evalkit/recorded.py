"""A results directory's recorded answers read back, and its measures recomputed under other judgments:
what the replays, the local judge and the gate with a judge all read. A reader: nothing here imports the
runner, the arms, the gate or PyMuPDF."""
from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from . import estimates, measures
from .pooling import PageKey
from .qrels import QuerySet
from .records import Answer, Chunk, Hit, Judgment, Query, page_id
from .results import Results
from .resultsdir import PER_QUERY_COLUMNS, ResultsError


def records(lines: Iterable[str]) -> dict[str, dict]:
    """The records of an arm's ``runs/<file>.jsonl`` lines, the latest per query; a line cut short by an
    interruption is skipped (the runner asks its query again)."""
    done = {}
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        done[rec["query"]] = rec
    return done


def read_records(path: Path) -> dict[str, dict]:
    """:func:`records` of the file ``path``; none when it does not exist yet."""
    return records(path.read_text().splitlines() if path.exists() else [])


def ordered(qs: QuerySet, path: Path) -> list[tuple[Query, dict]]:
    """Each query of ``qs`` with its record in the arm's file ``path``, in the query set's order."""
    recs = read_records(path)
    return [(q, recs[q.id]) for q in qs.queries]


def per_query(qs: QuerySet, arm_infos: Sequence[dict], runs: Path) -> pd.DataFrame:
    """One row per (query of ``qs``, arm) with every default measure, the refusal outcome (or ``error``, with
    its message), latency and ties, from the answers recorded in ``runs``: the rows of ``per_query.parquet``."""
    rows = []
    for info in arm_infos:
        for q, rec in ordered(qs, runs / f"{info['file']}.jsonl"):
            result = answer(rec)
            rows.append({"query": q.id, "class": q.cls, "kind": q.kind, "arm": info["label"],
                         **measures.evaluate(q, result), measures.EVIDENCE: measures.evidence(q, result),
                         "outcome": measures.refusal_outcome(q, result),
                         "refused": not result.error and (result.refused or not result.hits),
                         "confidence": math.nan if result.confidence is None else result.confidence,
                         "error": result.error,
                         "hits": len(result.hits), "latency_s": rec["latency"],
                         "ties@10": measures.ties_at([h.score for h in result.hits], 10)})
    return pd.DataFrame(rows, columns=None if rows else list(PER_QUERY_COLUMNS))


def answer(rec: dict) -> Answer:
    """The answer a record holds: what the runner recorded (its ``_record`` is the inverse), chunks and
    confidence included."""
    chunks = tuple(Chunk(d, t, s, pages=tuple(p)) for d, p, s, t in rec.get("chunks", ()))
    return Answer(tuple(Hit(d, p, s) for d, p, s in rec["hits"]), rec["refused"], rec.get("reason", ""),
                  confidence=rec.get("confidence"), error=rec.get("error", ""), chunks=chunks)


def answers(results: Results) -> dict[str, dict[str, Answer]]:
    """Every arm's recorded answers, ``{arm label: {query id: Answer}}``, read from ``runs/<file>.jsonl``."""
    out: dict[str, dict[str, Answer]] = {}
    for info in results.manifest["arms"]:
        path = results.path / "runs" / f"{info['file']}.jsonl"
        if not path.exists():
            raise ResultsError(f"{path} is missing: the answers of arm {info['label']!r} are needed to rescore it")
        out[info["label"]] = {qid: answer(rec) for qid, rec in read_records(path).items()}
    return out


def check_run(qs: QuerySet, results: Results) -> None:
    """Refuse a results directory run with another query set (its answers would be of other queries)."""
    if results.manifest["qrels"].get("digest") not in (qs.digest, None):
        raise ResultsError(f"{results.path} was run with query set {results.manifest['qrels'].get('name')!r} "
                           f"({results.manifest['qrels']['digest'][:12]}), not this one ({qs.digest[:12]}): run it "
                           f"again with --resume (resume=True in Python), which asks only new or reworded queries "
                           f"and measures every query with the grades as they are now")


def rankings(ans: Mapping[str, Mapping[str, Answer]], qid: str) -> dict[str, tuple[PageKey, ...]]:
    """One query's rankings as page keys; a refusal, an error or a missing answer ranks nothing."""
    out = {}
    for arm, by_query in ans.items():
        r = by_query.get(qid)
        out[arm] = () if r is None or r.refused or r.error else tuple((h.doc, h.page) for h in r.hits)
    return out


def gains(q: Query) -> dict[PageKey, int]:
    return {(j.doc, j.page): j.gain for j in q.judgments}


def rescore(qs: QuerySet, ans: Mapping[str, Mapping[str, Answer]], base: pd.DataFrame,
            found: Mapping[str, Mapping[PageKey, int]], names: Sequence[str] = measures.DEFAULT) -> pd.DataFrame:
    """``base`` (a results directory's per-query rows) with the measures ``names`` recomputed under the
    judgments ``found`` per query instead of the query set's own; every other measure column is dropped
    (it would still speak of the full judgments), outcomes, latency and the rest are kept."""
    names = list(dict.fromkeys(names))
    values: dict[tuple[str, str], dict[str, float]] = {}
    for q in qs.queries:
        judged = found.get(q.id, {})
        reduced = replace(q, judgments=tuple(Judgment(d, p, g) for (d, p), g in judged.items()))
        for arm, by_query in ans.items():
            if q.id in by_query:
                values[(q.id, arm)] = measures.evaluate(reduced, by_query[q.id], names)
    out = base.drop(columns=[m for m in measures.DEFAULT if m in base.columns and m not in names])
    new = pd.DataFrame([values.get((q, a), {}) for q, a in zip(base["query"], base["arm"], strict=True)],
                       index=base.index,
                       columns=names)
    out[names] = new[names]
    return out


@dataclass(frozen=True, eq=False)
class Rejudged(Results):
    """A results directory seen through other judgments: its manifest, with per-query rows rescored, so
    the gate and the comparison functions decide on them unchanged."""

    frame: pd.DataFrame | None = None

    @property
    def per_query(self) -> pd.DataFrame:
        return self.frame


def judge_rows(path: Path, frame: pd.DataFrame, results_path: Path, measure: str,
               arms: Collection[str] | None = None) -> pd.DataFrame:
    """Rows (query, class, arm, measures) like ``frame``'s of the judge's expected measures, from its
    predictions file and the arms' recorded answers (every arm's, or those of ``arms``); ValueError for a
    measure the judge cannot predict."""
    if measure not in estimates.MEASURES:
        raise ValueError(f"--measure {measure!r}: a judge's predictions give {', '.join(estimates.MEASURES)}")
    ans = {a: v for a, v in answers(Results.load(results_path)).items() if arms is None or a in arms}
    return expected_rows(estimates.read_predictions(path), frame, ans)


def expected_rows(table: pd.DataFrame, frame: pd.DataFrame, ans: Mapping[str, Mapping[str, Answer]]) -> pd.DataFrame:
    """:func:`judge_rows` from a predictions table and recorded answers already read (the workbench reads each
    once when it opens, not once per use)."""
    queries = list(frame.drop_duplicates("query")[["query", "class"]].itertuples(index=False, name=None))
    ranked = {a: {q: [page_id(*p) for p in rankings(ans, q)[a]] for q, _ in queries} for a in ans}
    values = estimates.predicted(queries, ranked, table)
    return pd.DataFrame([{"query": q, "class": c, "arm": a, **dict(zip(estimates.MEASURES, values[i, :, j],
                                                                       strict=True))}
                         for i, (q, c) in enumerate(queries) for j, a in enumerate(ans)])

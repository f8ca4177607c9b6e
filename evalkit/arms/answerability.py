"""The local judge's answerability of a query: how likely the wrapped arm's top pages answer it, calibrated into
a conformal p-value on the user's own judged queries of the corpus. The policy that admits with it is
:class:`~evalkit.arms.policies.JudgePolicy`; the judge and its features are :mod:`evalkit.autojudge`'s.

**Features at run time.** A new query has no pool and no grades: the judge reads only what one ranking and the
corpus give (:data:`ARM`, the wrapped arm's ranking, stands for "every arm"): the text signals, the page's
position, the arm's rank of the page and the share of the arm's top ``depth`` in the page's document. The
features that need every arm's run (each arm's rank, the share of arms listing a page, the document's share of
the whole pool) are left out; ``benchmarks/admit_judge.py`` measures what that costs.

**Split conformal.** The query file's queries are split (seeded, by a hash of their ids): every abstain query
and a ``share`` of the answerable ones train the judge; the other answerable queries calibrate it. A query's
score is a summary of the judge's P(gain >= g) over the arm's top pages; its confidence is its conformal p-value
among the calibration queries' scores (:func:`evalkit.arms.conformal.p_value`). A refusal at p < alpha refuses
at most a share alpha of new answerable queries exchangeable with the calibration queries (the guarantee needs
nothing of the judge: it was fitted on other queries), and :func:`evalkit.refusal.clopper_pearson_upper` bounds,
at 95%, the refusal rate of the threshold the calibration set actually drew.
"""
from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..autojudge import features, model, session
from ..autojudge.features import Settings, TextSignals
from ..pooling import PageKey, Rankings
from ..records import Query
from ..refusal import clopper_pearson_upper
from ..text import names
from .lexical import fts5_idf, query_terms
from .conformal import guarantee, p_value, refused

ARM = "arm"  # the one ranking a run-time feature reads: the wrapped arm's
COLUMN = {1: "p_ge1", 2: "p_ge2", 3: "p_eq3"}


def summarise(chances: Sequence[float], how: str) -> float:
    """One number from the chances of the top pages (best first): the largest (``max``), their mean, or the
    chance that at least one is relevant were they independent (``any``). 0 for no pages."""
    p = np.asarray(chances, dtype=float)
    if not len(p):
        return 0.0
    if how == "max":
        return float(p.max())
    if how == "mean":
        return float(p.mean())
    if how == "any":
        return float(1 - np.prod(1 - p))
    raise ValueError(f"unknown summary {how!r} (summaries: max, mean, any)")


@dataclass(frozen=True)
class Reading:
    """How a judge's chances become one score per query: which chance (gain >= ``gain``), over the arm's top
    ``top`` pages, summarised ``how``; the features at pool ``depth``."""

    gain: int = 2
    top: int = 3
    how: str = "mean"
    depth: int = 10


QUERY = ("spread", "absent_mass", "absent_names")


@dataclass(frozen=True)
class RunTime(Settings):
    """The judge's features for admission: :class:`~evalkit.autojudge.features.Settings`' columns over one
    ranking, then :data:`QUERY`, what the corpus says of the query as a whole (the same on each of its pages):
    the spread of its cosine over every window (the ``spread`` policy's signal), the share of its IDF mass in
    words no page holds, and how many of the names it uses no page holds (the ``names`` veto's signal). A
    page-level judge sees a page, not whether anything answers; these let it learn, from the grades of the
    file's abstain queries, what a query nothing answers looks like."""

    query: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return (*super().names, *(QUERY if self.query else ()))

    def digest(self) -> str:
        return hashlib.sha256(f"{super().digest()}\x00{self.names}".encode()).hexdigest()


def settings(signals: TextSignals, depth: int, query: bool = True) -> RunTime:
    return RunTime(depth, (ARM,), signals.key, query)


def query_signals(signals, query: str) -> tuple[float, float, float]:
    """:data:`QUERY` of one query from a corpus's signals (:class:`~evalkit.arms.signals.CorpusSignals`:
    its global index and, unless built without vectors, the semantic arm's windows)."""
    terms = query_terms(query)
    index, sem = signals.index, signals.semantic
    idf = {t: fts5_idf(np.array([float(index.n_pages)]), np.array([float(len(index.pages_with(t)))]))[0]
           for t in terms}
    total = sum(idf.values())
    absent = sum(v for t, v in idf.items() if not index.pages_with(t)) / total if total > 0 else 0.0
    spread = float(np.std(sem.window_scores(query))) if sem is not None and len(sem.starts) else 0.0
    return spread, absent, float(sum(not index.pages_with(n) for n in names(query)))


def frame(queries: Sequence[Query], rankings: Mapping[str, Sequence[PageKey]], signals: TextSignals,
          depth: int, judged: bool, query: bool = True) -> pd.DataFrame:
    """The feature rows of ``queries`` from one ranking each (``rankings``: query id -> pages, best first):
    the arm's top ``depth`` pages, and with ``judged`` the judged pages too (to train on); without, exactly the
    rows a new query gets at run time. ``query``: with the :data:`QUERY` columns."""
    qs = list(queries) if judged else [replace(q, judgments=()) for q in queries]
    per_query: dict[str, Rankings] = {q.id: {ARM: list(rankings[q.id])} for q in qs}
    rows = features.table(qs, per_query, signals, Settings(depth, (ARM,), signals.key))
    if query:
        whole = {q.id: query_signals(signals, q.text) for q in qs}
        for i, name in enumerate(QUERY):
            rows[name] = [whole[q][i] for q in rows["query"]]
    return rows


def scores(judge: model.Judge, rows: pd.DataFrame, rankings: Mapping[str, Sequence[PageKey]],
           reading: Reading) -> dict[str, float]:
    """Each query's score: ``reading``'s summary of the judge's chances over the arm's top pages."""
    preds = session.predict(judge, rows)
    chance = {(q, d, int(p)): c for q, d, p, c in zip(preds["query"], preds["doc"], preds["page"],
                                                       preds[COLUMN[reading.gain]], strict=True)}
    return {q: summarise([chance[(q, d, p)] for d, p in list(rankings[q])[:reading.top] if (q, d, p) in chance],
                         reading.how) for q in dict.fromkeys(rows["query"])}


def split(queries: Sequence[Query], share: float, seed: int) -> tuple[list[Query], list[Query]]:
    """(train, calibrate): every abstain query and ``share`` (rounded, at least one) of the answerable ones,
    in the order of sha256(seed, id), train; the other answerable queries calibrate."""
    answerable = sorted((q for q in queries if q.answerable),
                        key=lambda q: hashlib.sha256(f"{seed}\x00{q.id}".encode()).hexdigest())
    cut = max(1, round(share * len(answerable)))
    return [q for q in queries if not q.answerable] + answerable[:cut], answerable[cut:]


@dataclass(frozen=True, eq=False)
class Calibration:
    """A judge fitted on the training queries and the sorted scores of the answerable calibration queries."""

    judge: model.Judge
    reading: Reading
    scores: np.ndarray
    trained_on: int
    texts: frozenset[str]  # every query text of the file: a query asked again is in-sample

    @property
    def n(self) -> int:
        return len(self.scores)

    def p_value(self, score: float) -> float:
        return p_value(self.scores, score)

    def bound(self, alpha: float) -> tuple[int, float, float]:
        """At a refusal threshold ``alpha`` on the p-value: calibration queries refused, the conformal
        guarantee on a new answerable query, and the 95% Clopper–Pearson upper bound on the threshold's
        wrongful-refusal rate for the number calibrated on."""
        k = refused(self.scores, alpha)
        return k, guarantee(self.n, alpha), clopper_pearson_upper(k, self.n)


def calibrate(queries: Sequence[Query], rank: Callable[[str], Sequence[PageKey]], signals: TextSignals,
              reading: Reading, spec: model.Spec, share: float, db: sqlite3.Connection | None = None) -> Calibration:
    """Train the judge on one part of ``queries`` (each query ranked by ``rank``, the wrapped arm) and score
    the answerable rest: the split-conformal calibration of the judge's answerability."""
    train, held = split(queries, share, spec.seed)
    if not held:
        raise ValueError(f"{sum(q.answerable for q in queries)} answerable queries: none left to calibrate on "
                         "once the judge has its share (want at least two answerable queries)")
    rankings = {q.id: list(dict.fromkeys(rank(q.text)))[:reading.depth] for q in queries}
    taught = frame(train, rankings, signals, reading.depth, judged=True)
    if not taught["gain"].notna().any():
        raise ValueError("no graded page among the training queries' pages: nothing to train the judge on")
    judge = session.fit(taught, settings(signals, reading.depth), spec, db)
    got = scores(judge, frame(held, rankings, signals, reading.depth, judged=False), rankings, reading)
    return Calibration(judge, reading, np.sort(np.array([got[q.id] for q in held])), len(train),
                       frozenset(" ".join(q.text.split()).lower() for q in queries))


def score(cal: Calibration, query: str, ranking: Sequence[PageKey], signals: TextSignals) -> float:
    """A new query's score from the wrapped arm's ranking, with the features a run-time query has."""
    q = Query(id="query", cls="", text=query)
    rankings = {q.id: list(dict.fromkeys(ranking))[:cal.reading.depth]}
    if not rankings[q.id]:
        return 0.0
    return scores(cal.judge, frame([q], rankings, signals, cal.reading.depth, judged=False), rankings,
                  cal.reading)[q.id]


def in_sample(cal: Calibration, query: str) -> bool:
    return " ".join(query.split()).lower() in cal.texts

"""Rename and re-score: does an arm's score depend on the documents' file names?

A published "per-document fusion beats a global index" was decided by a tie broken on file name, and
renaming the files at random reversed it (FIELD_NOTES.md). This check gives every document a seeded
random name, builds the arm on the renamed corpus, asks every query, maps the hits back to the original
names and scores them against the unchanged query set. An arm whose order never looks at names moves by
exactly 0 on every measure.

The renamed corpus is a temporary folder of symbolic links (``<random hex>.pdf``), so an arm that reads
the files itself sees the new names too. Page texts, per-document FTS5 indexes and vectors are keyed by
sha256 and are reused; the corpus-wide index is keyed by the corpus digest (which holds the names), so it
is rebuilt for every permutation under the corpus name ``<name>~renamed``, each build replacing the last.
"""
from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from . import arms, measures
from .corpora import Corpus
from .defaults import DEPTH
from .defaults import ROBUSTNESS_MEASURES as MEASURES
from .pages import PageStore
from .qrels import QuerySet
from .records import Answer, Hit, page_id

TOP = 10  # a query whose first TOP hits differ under some renaming counts as a changed ranking


def random_names(corpus: Corpus, seed: int, permutation: int) -> dict[str, str]:
    """Original name -> a new, distinct ``<16 hex digits>.pdf``, the same for the same (seed, permutation)."""
    rng = random.Random(f"evalkit-robustness:{seed}:{permutation}")
    names: dict[str, str] = {}
    taken: set[str] = set()
    for d in corpus.documents:
        while (new := f"{rng.getrandbits(64):016x}.pdf") in taken:
            pass
        names[d.name] = new
        taken.add(new)
    return names


@contextmanager
def renamed(corpus: Corpus, names: dict[str, str]) -> Iterator[Corpus]:
    """``corpus`` with every document under its new name, in a temporary folder of links to the files."""
    with tempfile.TemporaryDirectory(prefix="evalkit-renamed-") as tmp:
        for d in corpus.documents:
            os.symlink(corpus.path(d).resolve(), Path(tmp) / names[d.name])
        docs = sorted((replace(d, name=names[d.name]) for d in corpus.documents), key=lambda d: d.name)
        yield Corpus(f"{corpus.name}~renamed", Path(tmp), tuple(docs), corpus.description)


def answers(arm: arms.Arm, qs: QuerySet, k: int, original: dict[str, str], progress: bool = False,
            desc: str = "") -> dict[str, Answer]:
    """Every query's result, hits mapped back to the original names through ``original`` (new -> old)."""
    out = {}
    for q in tqdm(qs.queries, desc=desc or arm.label, unit="query", disable=not progress, file=sys.stderr):
        r = arm.search(q.text, k)
        unknown = sorted({h.doc for h in r.hits} - set(original))
        if unknown:  # e.g. names remembered from another build: the arm depends on names by construction
            raise ValueError(f"arm {arm.label!r} answered query {q.id!r} with document {unknown[0]!r}, which the "
                             f"corpus it was built on does not hold")
        out[q.id] = replace(r, hits=tuple(Hit(original[h.doc], h.page, h.score) for h in r.hits))
    return out


def scores(qs: QuerySet, results: dict[str, Answer], names: Sequence[str]) -> pd.DataFrame:
    """One row per query: class, every measure in ``names`` (NaN on abstain queries) and the top hits."""
    rows = []
    for q in qs.queries:
        r = results[q.id]
        rows.append({"query": q.id, "class": q.cls, **measures.evaluate(q, r, names),
                     "top": tuple(page_id(h.doc, h.page) for h in r.hits[:TOP])})
    return pd.DataFrame(rows).set_index("query")


@dataclass(frozen=True)
class Robustness:
    """Per-query scores of one arm under its original names (permutation 0) and under each renaming."""

    arm: str
    spec: str
    seed: int
    names: tuple[str, ...]
    runs: tuple[pd.DataFrame, ...]  # runs[0]: original names; runs[i]: permutation i
    corpus: dict
    qrels: dict
    depth: int

    @property
    def permutations(self) -> int:
        return len(self.runs) - 1

    def answerable(self, i: int) -> pd.DataFrame:
        """Run ``i``'s rows of answerable queries (abstain queries have no ranking scores)."""
        r = self.runs[i]
        return r[r["class"] != "abstain"]

    def changed(self, measure: str) -> list[str]:
        """Answerable queries whose score on ``measure`` differs from the original under some renaming."""
        base = self.answerable(0)[measure]
        moved = pd.concat([(self.answerable(i)[measure] - base).abs() for i in range(1, len(self.runs))], axis=1)
        return list(moved.index[(moved > 0).any(axis=1)])

    def rankings_changed(self) -> list[str]:
        """Queries (abstain ones too) whose first ``TOP`` hits differ from the original under some renaming."""
        base = self.runs[0]["top"]
        return [q for q in base.index if any(r.at[q, "top"] != base[q] for r in self.runs[1:])]

    def summary(self) -> dict:
        """The ``robustness.json`` record (a gate rule reads ``measures[m]["max_abs_shift"]``)."""
        out = {}
        for m in self.names:
            means = [float(self.answerable(i)[m].mean()) for i in range(len(self.runs))]
            original, moved = means[0], means[1:]
            out[m] = {"original": original, "min": min(moved), "max": max(moved),
                      "max_abs_shift": max(abs(v - original) for v in moved),
                      "per_permutation": moved, "queries_changed": len(self.changed(m)),
                      "changed_queries": self.changed(m)}
        ranked = self.rankings_changed()
        return {"arm": self.arm, "spec": self.spec, "permutations": self.permutations, "seed": self.seed,
                "depth": self.depth, "corpus": self.corpus, "qrels": self.qrels,
                "queries": len(self.runs[0]), "answerable": len(self.answerable(0)), "measures": out,
                "rankings_changed": {"top": TOP, "queries": len(ranked), "ids": ranked}}

    def table(self) -> pd.DataFrame:
        """One row per measure: original mean, min and max over renamings, the largest shift, and how many
        answerable queries change score."""
        s = self.summary()
        n = s["answerable"]
        return pd.DataFrame([{"measure": m, "original": v["original"], "min": v["min"], "max": v["max"],
                              "max |shift|": v["max_abs_shift"], "queries changed": f"{v['queries_changed']}/{n}"}
                             for m, v in s["measures"].items()]).set_index("measure")

    def text(self) -> str:
        """The terminal table, to four decimals (a shift from a name-decided tie is often in the third)."""
        head = (f"{self.arm} on {self.corpus['name']} × {self.qrels['name']}: {self.permutations} random "
                f"renaming(s), seed {self.seed}; means over {len(self.answerable(0))} answerable queries")
        ranked = self.rankings_changed()
        return (f"{head}\n{self.table().to_string(float_format=lambda v: f'{v:.4f}')}\n"
                f"first {TOP} hits changed under some renaming: {len(ranked)}/{len(self.runs[0])} queries")

    def write(self, out: Path | str) -> Path:
        """Write ``<out>/robustness.json``; returns its path."""
        path = Path(out) / "robustness.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.summary(), indent=2) + "\n")
        return path


def check(corpus: Corpus, store: PageStore, qs: QuerySet, spec: str, permutations: int = 5, seed: int = 0,
          k: int = DEPTH, names: Sequence[str] = MEASURES, progress: bool = True) -> Robustness:
    """Run ``spec`` over ``qs`` on ``corpus`` as named and under ``permutations`` seeded random renamings.
    The arm is built through :func:`evalkit.arms.make`, so plug-in arms are checked the same way."""
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    for n in names:
        measures.measure(n)  # an unknown measure fails before any work
    arms.validate(spec)
    if not any(q.answerable for q in qs.queries):
        raise ValueError(f"query set {qs.name!r} has no answerable query: nothing to score")
    identity = {d.name: d.name for d in corpus.documents}
    arm = arms.make(spec, corpus, store)
    runs = [scores(qs, answers(arm, qs, k, identity, progress, f"{arm.label} (original names)"), names)]
    for i in range(1, permutations + 1):
        new = random_names(corpus, seed, i)
        with renamed(corpus, new) as c:
            permuted = arms.make(spec, c, store)
            back = {v: key for key, v in new.items()}
            runs.append(scores(qs, answers(permuted, qs, k, back, progress,
                                           f"{arm.label} (renaming {i}/{permutations})"), names))
    return Robustness(arm.label, spec, seed, tuple(names), tuple(runs),
                      {"name": corpus.name, "digest": corpus.digest()},
                      {"name": qs.name, "digest": qs.digest, "queries": len(qs.queries)}, k)


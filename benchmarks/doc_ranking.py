"""How well each label-free signal ranks documents, on each shipped set: where the document-level gap to
pdf-mcp's hybrid comes from, and why tuning on one set does not carry it to the other.

    python benchmarks/doc_ranking.py [--sets latex,rmanuals] [--arm SPEC] [--out FILE]

nDCG@10(doc) judges the documents of an arm's first 10 *pages*, in order of first appearance; so it mixes
two things: how many documents those 10 pages reach, and how well the documents are ordered. This script
pulls them apart. For every answerable query it builds document rankings from one signal each, every
one computed without judgments:

- ``arm pages@10``: the arm's own top 10 pages collapsed to documents (what the measure scores today);
- ``arm pages@100``: its top 100 collapsed (the same order, as many documents as it reaches);
- ``keyword`` / ``semantic``: the document's best page in the arm's keyword / semantic input;
- ``profile N``: the cosine of the query with the document's first N windows (:mod:`evalkit.arms.profile`);
- ``centroid``: the cosine of the query with the mean of all the document's window vectors (what the whole
  manual is about);
- RRF (k = 60, equal weights) of some of them.

Each ranking is cut at 10 documents and scored with evalkit's own measures (the document's gain is its best
judged page's). Alongside: the mean number of documents the arm's first 10 pages reach. Nothing is tuned:
every row is a fixed construction, shown on both sets, so a row that wins on one set and loses on the
other is visible as such.
"""
from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import evalkit as ek
from evalkit import arms, measures
from evalkit import escape as esc
from evalkit.arms.hybrid import HybridArm
from evalkit.arms.profile import DocumentCentroid, DocumentProfile
from evalkit.docfigures import markdown_table
from evalkit.escape import markdown_inline as md
from evalkit.fusion import weighted_rrf
from evalkit.records import Answer, Hit
from evalkit.results import Results

ARM = "hybrid(centroid=2.0,keyword=global-index,profile=0.5,profile_windows=3)"  # docs/tuning.md's Recommended arm
MEASURES = ("nDCG@10(doc)", "GoldDoc@3")
Scores = dict[str, float]


def first_appearance(pages, n: int | None = None) -> Scores:
    """Documents in order of their first page in a (doc, page) sequence, scored so that order is kept."""
    docs = list(dict.fromkeys(d for d, _ in list(pages)[:n]))
    return {d: -float(r) for r, d in enumerate(docs)}


def rrf(*signals: Scores) -> Scores:
    """Equal-weight RRF (k = 60) of document scores, each ranked best first."""
    ranked = [{d: r for r, d in enumerate(sorted(s, key=lambda d: -s[d]), 1)} for s in signals]
    return weighted_rrf(ranked, [1.0] * len(ranked), 60)


class Signals:
    """The document signals of one corpus, per query (module docstring)."""

    def __init__(self, corpus: ek.OpenCorpus, spec: str):
        arm = arms.make(spec, corpus.corpus, corpus.store)
        if not isinstance(arm, HybridArm):
            raise SystemExit(f"--arm: {spec} is not a hybrid arm (its keyword and semantic inputs are read)")
        self.arm = arm
        self.arm.prepare()
        sem = self.arm.semantic
        self.profiles = {n: DocumentProfile(sem, n) for n in (1, 3)}
        self.centroid = DocumentCentroid(sem)  # the hybrid arm's own centroid prior

    def of(self, query: str) -> dict[str, Scores]:
        inputs = self.arm.inputs(query)
        pages = [(h.doc, h.page) for h in self.arm.search(query, 100).hits]
        centroid = self.centroid.scores(query)[0]
        out = {"arm pages@10": first_appearance(pages, 10), "arm pages@100": first_appearance(pages),
               "keyword": first_appearance(inputs["keyword"]), "semantic": first_appearance(inputs["semantic"]),
               **{f"profile {n}": p.scores(query)[0] for n, p in self.profiles.items()}, "centroid": centroid}
        out["semantic + centroid"] = rrf(out["semantic"], centroid)
        out["semantic + profile 1"] = rrf(out["semantic"], out["profile 1"])
        out["semantic + centroid + profile 1"] = rrf(out["semantic"], centroid, out["profile 1"])
        out["keyword + semantic + profile 3"] = rrf(out["keyword"], out["semantic"], out["profile 3"])
        out["arm pages@100 + centroid"] = rrf(out["arm pages@100"], centroid)
        return out

    def close(self) -> None:
        self.arm.close()


def scored(query, signal: Scores) -> dict[str, float]:
    docs = sorted(signal, key=lambda d: (-signal[d], d))[:10]
    return measures.evaluate(query, Answer(tuple(Hit(d, 1, 1.0) for d in docs)), MEASURES)


def mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def table(rows: dict[str, list[tuple[str, dict[str, float]]]], reach: float) -> list[str]:
    frame = pd.DataFrame([{"document ranking": name, "nDCG@10(doc)": mean([m["nDCG@10(doc)"] for _, m in got]),
                           "GoldDoc@3": mean([m["GoldDoc@3"] for _, m in got]),
                           "nDCG@10(doc), described": mean([m["nDCG@10(doc)"] for c, m in got if c == "described"])}
                          for name, got in rows.items()])
    return [markdown_table(frame, index=False), "", f"The arm's first 10 pages reach {reach:.2f} documents on average."]


def one_set(name: str, spec: str) -> list[str]:
    corpus = ek.corpus(name, progress=False)
    queries = [q for q in ek.queries(Path("qrels") / f"{name}.toml").queries if q.cls != "abstain"]
    signals = Signals(corpus, spec)
    rows: dict[str, list] = {}
    reached = []
    try:
        for q in queries:
            of = signals.of(q.text)
            reached.append(len(of["arm pages@10"]))
            for label, s in of.items():
                rows.setdefault(label, []).append((q.cls, scored(q, s)))
    finally:
        signals.close()
    return [f"{md(name, line_start=True)} ({len(corpus.documents)} documents, {len(queries)} answerable queries; "
            f"arm {esc.code(spec)}):", "",
            *table(rows, statistics.fmean(reached)), ""]


def reach(results_dir: Path) -> list[str]:
    """How many documents each arm's first 10 pages reach, from a results directory's rankings."""
    res = Results.load(results_dir)
    answerable = set(res.per_query[res.per_query["class"] != "abstain"]["query"])
    reached = {arm: mean([len({d for d, _ in pages[:10]}) for q, pages in res.rankings(arm).items() if q in answerable])
               for arm in res.arms}  # an arm's label is data (a plug-in names itself): markdown_table escapes it
    frame = pd.DataFrame({"arm": list(reached), "documents": list(reached.values())})
    return [f"Documents reached by the first 10 pages, answerable queries of the run {esc.code(results_dir.name)}:", "",
            markdown_table(frame, digits=2, index=False)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="latex,rmanuals", help="shipped sets (corpus = query set name)")
    ap.add_argument("--arm", default=ARM, help="a hybrid arm whose inputs and pages are read")
    ap.add_argument("--reach", type=Path, help="a results directory: also the documents each of its arms' "
                    "first 10 pages reach (answerable queries)")
    ap.add_argument("--out", type=Path, help="write the Markdown here too")
    args = ap.parse_args()
    text = "\n".join([*(line for s in args.sets.split(",") for line in one_set(s, args.arm)),
                      *(reach(args.reach) if args.reach else [])])
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""admit(policy=judge) measured on the shipped sets and every blind abstain set.

    python benchmarks/admit_judge.py [--sets latex,rmanuals] [--results results] [--work results/admit-judge]
                                     [--parts readings,admission] [--out FILE]

`make docs-figures` runs it for docs/figures/admit-judge.md. Needs the seven-arm runs of `make report` and
`CORPUS=rmanuals make report` (results/latex, results/rmanuals) for the first part; the second runs the arms.

1. **readings**: which summary of the judge's chances tells the shipped sets' answerable queries from their
   abstain ones (AUROC over queries), and what the run-time features cost: each query scored by a judge
   cross-fitted by query (5 folds, never trained on the query it scores) over the wrapped arm's top pages,
   with the features a new query has at run time (one ranking: no pool, no grades), with and without the
   query's own signals (`answerability.QUERY`: the policy's judge has them), and with every arm's ranks and
   the whole pool's shares (what `evalkit qrels judge` reads, unavailable at run time); and the same judges'
   AUROC for gain >= 2 on the arm's top-10 graded pages.
2. **admission**: `admit(arm=ARM,policy=judge(qrels=qrels/C.toml),threshold=0.05)`, calibrated on corpus C's
   own shipped query file, asked every blind abstain set of C (`qrels/held-out/C.toml`,
   `qrels/held-out/blind*/C.toml`), next to the recommended refusing arm; and the wrongful refusal of
   answerable queries out of sample: the shipped file in 5 folds by query, each fold asked of the policy
   calibrated on the other four (its own query file, written under --work). Rates with Clopper–Pearson 95%
   intervals (wrongful refusal: the one-sided upper bound). The judge behind the names veto
   (`names(policy=judge(...),rare=1)`) was added after the judge alone had been asked the blind sets: its
   blind rows are not blind.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import api, arms, docfigures, qrels
from evalkit.arms import answerability as A
from evalkit.arms.policies import JudgePolicy
from evalkit.autojudge import agreement, model, session
from evalkit.arms.signals import CorpusSignals
from evalkit.refusal import clopper_pearson, clopper_pearson_upper
from evalkit.results import Results

ARM = "hybrid(keyword=global-index)"
RECOMMENDED = f"admit(arm={ARM},policy=names(policy=spread,rare=1),threshold=0.0766)"
ALPHA = 0.05
FOLDS = 5
DEFAULT = argparse.Namespace(**{k: JudgePolicy.defaults[k] for k in ("model", "calibration", "top", "summary")})
READINGS = [A.Reading(2, t, h) for t in (1, 3, 10) for h in ("max", "mean", "any") if t > 1 or h == "max"]
SPECS = [model.Spec(m, c) for m in ("hgb", "logistic") for c in ("platt", "isotonic")]


def judge_spec(qrels_file: Path | str, veto: bool = False) -> str:
    """The judge policy calibrated on ``qrels_file``; with ``veto``, behind the names veto (``names(rare=1)``)."""
    policy = f"judge(qrels={qrels_file})"
    return f"admit(arm={ARM},policy={f'names(policy={policy},rare=1)' if veto else policy},threshold={ALPHA})"


# the two judge arms: alone, and behind the names veto (added after the judge alone had been asked the blind sets)
JUDGES = {"judge": False, "names veto, then judge": True}


# ---- 1. readings ------------------------------------------------------------------------------------------

def cross_fitted(name: str, root: Path, store) -> tuple[dict, dict, dict[str, bool]]:
    """Per judge (model spec) and feature set: each query's score under every reading, from the judge of the
    folds without it; and the (gain >= 2, chance) pairs of the arm's top-10 graded pages."""
    qs = qrels.load(f"qrels/{name}.toml")
    opened = api.corpus(name, store=store, progress=False)
    sig = CorpusSignals(opened.corpus, opened.store)
    full = session.load(qs, Results.load(root / name), sig, 10)
    one = {q.id: list(dict.fromkeys(full.rankings[q.id][ARM]))[:10] for q in qs.queries}
    feature_sets = {f"one ranking{' + query' if query else ''}": (
        A.frame(qs.queries, one, sig, 10, judged=True, query=query),
        A.frame(qs.queries, one, sig, 10, judged=False, query=query), A.settings(sig, 10, query))
        for query in (True, False)}
    feature_sets["every arm and the pool"] = (full.frame, full.frame, full.settings)
    ids = [q.id for q in qs.queries]
    fold = dict(zip(ids, model.folds(ids, FOLDS, 0), strict=True))
    gains = {(q.id, j.doc, j.page): j.gain for q in qs.queries for j in q.judgments}
    scores: dict = {}
    pages: dict = {}
    for spec in SPECS:
        for fs, (train, rows, settings) in feature_sets.items():
            got = scores.setdefault((spec.label, fs), {r: {} for r in READINGS})
            seen = pages.setdefault((spec.label, fs), [])
            for f in range(FOLDS):
                judge = session.fit(train[[fold[q] != f for q in train["query"]]], settings, spec, store.db)
                test = rows[[fold[q] == f for q in rows["query"]]]
                for r in READINGS:
                    got[r].update(A.scores(judge, test, one, r))
                preds = session.predict(judge, test)
                seen += [(gains[(q, d, int(p))] >= 2, c) for q, d, p, c in
                         zip(preds["query"], preds["doc"], preds["page"], preds["p_ge2"], strict=True)
                         if (d, int(p)) in one[q] and (q, d, int(p)) in gains]
    return scores, pages, {q.id: q.answerable for q in qs.queries}


def readings_table(sets: list[str], root: Path, store) -> str:
    got = {s: cross_fitted(s, root, store) for s in sets}
    rows, page_rows = [], []
    for spec in SPECS:
        for r in READINGS:
            row = {"judge": spec.label, "top pages": r.top, "summary": r.how}
            for s, (scores, _, answerable) in got.items():
                for (label, fs), by_reading in scores.items():
                    if label == spec.label:
                        row[f"{s}: {fs}"] = agreement.auroc(np.array(list(answerable.values())),
                                                            np.array([by_reading[r][q] for q in answerable]))
            rows.append(row)
        for s, (_, pages, _) in got.items():
            page_rows.append({"judge": spec.label, "set": s,
                              **{fs: agreement.auroc(np.array([y for y, _ in p]), np.array([c for _, c in p]))
                                 for (label, fs), p in pages.items() if label == spec.label}})
    mine = [c for c in rows[0] if c.endswith(": one ranking + query")]
    best = max(rows, key=lambda row: np.mean([row[c] for c in mine]))
    rule = (f"Highest mean AUROC over {', '.join(sets)} with the policy's features (one ranking + query): "
            f"{best['judge']}, top {best['top pages']}, {best['summary']}; the policy's default: "
            f"{DEFAULT.model}+{DEFAULT.calibration}, top {DEFAULT.top}, {DEFAULT.summary}")
    return (rule + "\n\nAnswerable vs abstain queries of the shipped sets: AUROC of each summary of the judge's "
            "P(gain >= 2) "
            f"over `{ARM}`'s top pages (judge cross-fitted by query, {FOLDS} folds)\n\n"
            + docfigures.markdown_table(pd.DataFrame(rows), index=False)
            + f"\n\nAUROC for gain >= 2 of the same judges on `{ARM}`'s top-10 graded pages\n\n"
            + docfigures.markdown_table(pd.DataFrame(page_rows), index=False))


# ---- 2. admission -----------------------------------------------------------------------------------------

def kinds(refusals: list[tuple[str, bool]]) -> str:
    by: dict[str, list[bool]] = {}
    for kind, r in refusals:
        by.setdefault(kind or "—", []).append(r)
    return ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(by.items()))


def rate(k: int, n: int, one_sided: bool = False) -> str:
    if one_sided:
        return f"{k}/{n} = {k / n:.3f}, ≤ {clopper_pearson_upper(k, n):.3f}"
    ci = clopper_pearson(k, n)
    return f"{k}/{n} = {k / n:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def asked(arm, queries) -> list[tuple[str, bool, bool]]:
    """(kind, answerable, refused) of every query asked of ``arm``."""
    return [(q.kind, q.answerable, arm.search(q.text, 10).refused) for q in queries]


def folds_asked(name: str, qs, corpus, store, work: Path, veto: bool) -> list[tuple[str, bool, bool]]:
    """Every shipped query asked of the judge policy calibrated on the other folds' queries."""
    ids = [q.id for q in qs.queries]
    fold = dict(zip(ids, model.folds(ids, FOLDS, 0), strict=True))
    out = []
    for f in range(FOLDS):
        rest = replace(qs, name=f"{qs.name}-without-fold-{f}", queries=tuple(q for q in qs.queries if fold[q.id] != f),
                       digest="", path=None, pooled={}, reread={})
        path = work / name / f"without-fold-{f}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(qrels.to_toml(rest))
        arm = arms.make(judge_spec(path, veto), corpus, store)
        arm.prepare()
        out += asked(arm, [q for q in qs.queries if fold[q.id] == f])
    return out


def row(where: str, label: str, got: list[tuple[str, bool, bool]]) -> dict:
    wrong = [r for _, a, r in got if a]
    right = [(k, r) for k, a, r in got if not a]
    return {"set": where, "arm": label,
            "wrongful refusal": rate(sum(wrong), len(wrong), True) if wrong else "n/a (abstain only)",
            "correct refusal": rate(sum(r for _, r in right), len(right)), "by kind": kinds(right)}


def admission_rows(name: str, store, work: Path) -> tuple[list[dict], str]:
    corpus = api.corpus(name, store=store, progress=False).corpus
    qs = qrels.load(f"qrels/{name}.toml")
    built = {**{label: arms.make(judge_spec(f"qrels/{name}.toml", veto), corpus, store)
                for label, veto in JUDGES.items()}, "recommended": arms.make(RECOMMENDED, corpus, store)}
    for a in built.values():
        a.prepare()
    note = built["judge"].policy.note(ALPHA)
    sets = {f"held-out/{name}": qrels.load(f"qrels/held-out/{name}.toml"),
            **{p.parent.name: qrels.load(p) for p in sorted(Path("qrels/held-out").glob(f"blind*/{name}.toml"))}}
    rows = [row(f"{name} (shipped)", f"{label} (each fold calibrated on the other four)",
                folds_asked(name, qs, corpus, store, work, veto)) for label, veto in JUDGES.items()]
    rows.append(row(f"{name} (shipped)", "recommended", asked(built["recommended"], qs.queries)))
    for s, file in sets.items():
        rows += [row(s, label + (" (calibrated on the shipped file)" if label in JUDGES else ""),
                     asked(arm, file.queries)) for label, arm in built.items()]
    return rows, note


def admission_table(sets: list[str], store, work: Path) -> str:
    parts = []
    for s in sets:
        rows, note = admission_rows(s, store, work)
        parts.append(f"{s}: `{judge_spec(f'qrels/{s}.toml')}` (judge), the same behind the names veto, "
                     f"`{judge_spec(f'qrels/{s}.toml', True)}`, and `{RECOMMENDED}` (recommended)\n\n"
                     f"The judge policy's own line: {note}\n\n"
                     + docfigures.markdown_table(pd.DataFrame(rows), index=False))
    return "\n\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="latex,rmanuals")
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--work", type=Path, default=Path("results/admit-judge"))
    ap.add_argument("--parts", default="readings,admission")
    ap.add_argument("--out", type=Path, help="write the tables here (Markdown) as well as printing them")
    args = ap.parse_args()
    sets, parts = args.sets.split(","), args.parts.split(",")
    store = api.corpus(sets[0], progress=False).store
    tables = []
    if "readings" in parts:
        tables.append(readings_table(sets, args.results, store))
        print(tables[-1], flush=True)
    if "admission" in parts:
        tables.append(admission_table(sets, store, args.work))
        print(tables[-1], flush=True)
    if args.out:
        args.out.write_text("\n\n".join(tables) + "\n")


if __name__ == "__main__":
    main()

"""The local judge measured on the shipped sets: which model, and how far its grades stand in for the person's.

    python benchmarks/judge_models.py [--sets latex,rmanuals] [--results results] [--out FILE]

`make docs-figures` runs it for docs/figures/judge.md (the command and machine lines are its own).

Needs `make report` and `CORPUS=rmanuals make report` first (results/latex, results/rmanuals). Every figure is
on grades the judge did not train on:

1. the candidate models (logistic and boosted, each uncalibrated and isotonic-calibrated), cross-fitted by query
   in 5 folds on each set: κ, AUROC for gain >= 1 and >= 2, ECE and Brier score of P(gain >= 2);
2. the chosen judge (the CLI's default) trained on one set and tested on the other, both ways, and trained on
   20% of a set's queries (per class) and tested on the rest, on each set: the agreement per class as
   `evalkit qrels judge` prints it, with the command that prints it; and its AUROC for gain >= 2 against the
   stopping estimate's Prior and "unjudged = 0" on the same held-out pool pages;
3. the circularity check: every arm's mean nDCG@10 and nDCG@10(doc) under the person's grades and under the
   cross-fitted judge's, so an arm built on the judge's own text model (MiniLM: the semantic arm, the
   hybrids) shows whether the judge favours it beyond what the person's grades give it.

The third candidate, a cross-encoder fine-tuned from MiniLM weights, and its combination with the features are
measured by benchmarks/judge_crossencoder.py (it needs torch, which is no dependency of evalkit).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import api, docfigures
from evalkit.autojudge import agreement, model, session

CANDIDATES = (model.Spec("logistic", "none"), model.Spec("logistic", "isotonic"), model.Spec("hgb", "none"),
              model.Spec("hgb", "isotonic"))
CHOSEN = model.Spec()  # the CLI's default


def compare_models(src: session.Source, db) -> pd.DataFrame:
    rows = []
    for spec in CANDIDATES:
        p = session.crossfit(src, spec, db=db)
        g = p[p["gain"].notna()]
        y = g["gain"].to_numpy(int)
        m = agreement.measures(p)
        rows.append({"set": src.name, "model": spec.label, "κ": m["kappa"],
                     "AUROC ≥1": agreement.auroc(y >= 1, g["p_ge1"]), "AUROC ≥2": m["auroc_ge2"],
                     "ECE ≥2": m["ece_ge2"], "Brier ≥2": float(np.mean((g["p_ge2"] - (y >= 2)) ** 2))})
    return pd.DataFrame(rows)


def per_class(out: session.Outcome) -> str:
    t = out.table.rename(columns={"queries": "queries", "pages": "graded pages", "kappa": "κ (linear)",
                                  "auroc_ge2": "AUROC ≥2", "ece_ge2": "ECE ≥2", "false_alarms": "false alarms",
                                  "tau_page": "τ nDCG@10", "tau_doc": "τ nDCG@10(doc)"})
    t["verdict"] = [out.verdicts.get(str(c), "") for c in t.index]
    b = out.baseline
    return (docfigures.markdown_table(t) + f"\n\nAUROC for gain ≥ 2 on the {b['pages']} held-out graded pool pages: "
            f"judge **{b['judge']:.3f}**, the stopping estimate's Prior {b['prior']:.3f}, unjudged = 0 "
            f"{b['unjudged = 0']:.3f}.")


def circularity(src: session.Source, db) -> list[str]:
    """Each arm's means under the person's grades and the cross-fitted judge's: the semantic arm and the
    hybrids read the same MiniLM vectors as the judge's cosine feature."""
    cmd = f"evalkit qrels judge qrels/{src.name}.toml --results results/{src.name}"
    means = session.arm_means(src, session.crossfit(src, CHOSEN, db=db))
    return [f"### Circularity: {src.name}, each arm under the person's grades and the judge's", "",
            f"Judge: `{cmd}` (cross-fitted); answerable held-out queries.", "",
            docfigures.markdown_table(means), ""]


def experiments(sources: dict[str, session.Source], db, flags: str = "", suffix: str = "") -> list[str]:
    lines = []
    names = list(sources)
    words = suffix and " (words and ranks)"
    for test in names:
        cmd = f"evalkit qrels judge qrels/{test}.toml --results results/{test}{suffix}{flags}"
        out = session.run(sources[test], CHOSEN, db=db)
        lines += [f"### Cross-fitted on {test} (5 folds by query){words}", "", f"Command: `{cmd}`", "",
                  per_class(out), ""]
    for test in names:
        for train in (n for n in names if n != test):
            cmd = (f"evalkit qrels judge qrels/{test}.toml --results results/{test}{suffix} "
                   f"--train-on qrels/{train}.toml=results/{train}{suffix}{flags}")
            out = session.run(sources[test], CHOSEN, train_on=[sources[train]], db=db)
            lines += [f"### Trained on {train}, tested on {test}{words}", "",
                      f"Command: `{cmd}`", "", per_class(out), ""]
    for test in names:
        cmd = f"evalkit qrels judge qrels/{test}.toml --results results/{test}{suffix} --train-share 0.2{flags}"
        out = session.run(sources[test], CHOSEN, train_share=0.2, db=db)
        lines += [f"### Trained on 20% of {test}'s queries, tested on the other 80%{words}",
                  "", f"Command: `{cmd}`", "", per_class(out), ""]
    return lines


def opened(sets: str, root: Path, store, suffix: str = "", vectors: bool = True) -> tuple[dict, object]:
    sources = {}
    for name in filter(None, sets.split(",")):
        sources[name], store = api.judge_source(f"qrels/{name}.toml", root / f"{name}{suffix}", store=store,
                                                   vectors=vectors)
    return sources, store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="latex,rmanuals", help="sets with every arm and the semantic signal")
    ap.add_argument("--lexical-sets", default="", help="sets measured from results/<set>-lexical (the four lexical "
                    "arms) without the semantic signal (--no-vectors), for a corpus not yet embedded")
    ap.add_argument("--results", type=Path, default=Path("results"), help="where results/<set> are")
    ap.add_argument("--out", type=Path, help="write the Markdown here too")
    args = ap.parse_args()
    full, store = opened(args.sets, args.results, None)
    lexical, store = opened(args.lexical_sets, args.results, store, "-lexical", vectors=False)
    db = store.db if store is not None else None
    text = [f"Chosen judge: {CHOSEN.label}, seed {CHOSEN.seed}.", ""]
    if full:
        models = pd.concat([compare_models(s, db) for s in full.values()], ignore_index=True)
        text += ["### Candidate models, cross-fitted by query (5 folds) on each set", "",
                 docfigures.markdown_table(models, index=False), "",
                 f"Lowest mean Brier score of P(gain ≥ 2) (a proper scoring rule: the estimates read the "
                 f"probabilities): {models.groupby('model')['Brier ≥2'].mean().idxmin()}; lowest mean ECE: "
                 f"{models.groupby('model')['ECE ≥2'].mean().idxmin()}.", "", *experiments(full, db),
                 *(line for src in full.values() for line in circularity(src, db))]
    if lexical:
        text += ["### Without the semantic signal: words, position and the four lexical arms' ranks", "",
                 "Run first: `evalkit run --corpus SET --qrels qrels/SET.toml --arms "
                 "'keyword,keyword(tiebreak=page),global-index,score-merge' --out results/SET-lexical`.", "",
                 *experiments(lexical, db, " --no-vectors", "-lexical")]
    print("\n".join(text))
    if args.out:
        args.out.write_text("\n".join(text).rstrip() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

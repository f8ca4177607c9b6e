"""The most any threshold on a policy's confidence can refuse of a corpus's blind abstain queries while keeping
wrongful refusal at most 5% on that corpus's own answerable queries: the ceiling no calibration can beat.

    python benchmarks/refusal_ceiling.py [--arm 'hybrid(keyword=global-index)'] [--max-wrongful 0.05] [--out FILE]

For each corpus, every policy runs record-only (it refuses nothing and records its confidence) on the shipped
set and on each blind abstain set (``qrels/held-out/blind*/CORPUS.toml``). The threshold is then chosen on the
shipped set *with its own judgments* (in-sample, the one choice a self-calibrating policy is denied) and
applied to the blind sets' confidences. A threshold rule that refuses more blind queries than this must refuse
more than ``--max-wrongful`` of the shipped answerable ones: so if no policy's ceiling reaches a target, the
target is out of reach of the signal, not of its calibration. The evidence policy is fitted on the same set
(in-sample too), the most favourable case.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from refusal import POLICIES, record_only

from evalkit import corpora, docfigures, qrels
from evalkit import refusal as R
from evalkit import refusal_report as RR
from evalkit import runner
from evalkit.arms.policies import fit_evidence, make_policy
from evalkit.pages import PageStore
from evalkit.results import Results

SELF_CALIBRATED = ("names(policy=conformal,rare=1)", "names(policy=conformal(words=0),rare=1)")


def ceiling_rows(corpus: str, arm: str, max_wrongful: float, out: Path) -> list[list[str]]:
    """One row per policy: its in-sample threshold and what it does on the shipped set and each blind set."""
    c = corpora.load(corpus)
    store = PageStore()
    c = store.ingest(c, progress=False).corpus
    shipped = qrels.load(f"qrels/{corpus}.toml")
    evidence = make_policy("evidence", c, store)
    evidence.params["weights"] = fit_evidence(evidence, shipped.queries)
    policies = {**{p: p for p in [*POLICIES, *SELF_CALIBRATED]}, "evidence, fitted on this set": evidence.label}
    specs = [record_only(arm, p) for p in policies.values()]
    files = sorted(Path("qrels/held-out").glob(f"blind*/{corpus}.toml"))
    sets = {"shipped": shipped, **{f.parent.name: qrels.load(f) for f in files}}
    runs = {}
    for s, qs in sets.items():
        runner.run(c, store, qs, specs, out / f"{corpus}-{s}", resume=True, progress=False)
        runs[s] = Results.load(out / f"{corpus}-{s}")
    rows = []
    for name, spec in zip(policies, specs, strict=True):
        label = RR.arm_info(runs["shipped"], spec)["label"]
        own = RR.confidences(runs["shipped"], label)
        t = R.calibrate(own.confidence, own.answerable, max_wrongful)
        m = RR.measures(own, t)
        blind = [RR.measures(RR.confidences(runs[b], label), t)["correct_refusal"] for b in sets if b != "shipped"]
        rates = [m["wrongful_refusal"], m["correct_refusal"], *blind]
        rows.append([name, f"{t:.4g}", *(f"{r.k}/{r.n}" for r in rates)])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arm", default="hybrid(keyword=global-index)")
    ap.add_argument("--max-wrongful", type=float, default=0.05)
    ap.add_argument("--results", type=Path, default=Path("results/refusal-ceiling"))
    ap.add_argument("--out", type=Path, help="write the table here (Markdown) as well as printing it")
    args = ap.parse_args()
    blinds = sorted(p.name for p in Path("qrels/held-out").glob("blind*"))
    columns = ["policy", "threshold", "wrongful, shipped", "refused, shipped", *blinds]
    table = "\n\n".join(
        f"{corpus}: the threshold chosen on its shipped set with its judgments, then abstain queries refused on each "
        "blind set\n\n" + docfigures.markdown_table(
            pd.DataFrame(ceiling_rows(corpus, args.arm, args.max_wrongful, args.results), columns=columns), index=False)
        for corpus in ("latex", "rmanuals"))
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()

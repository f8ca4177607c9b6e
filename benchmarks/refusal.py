"""The cross-set refusal protocol: every threshold (and the evidence policy's weights) is chosen on one
query set and reported on the other, latex <-> rmanuals. This is what docs/refusal.md's table (docs/figures/refusal.md)
prints.

    python benchmarks/refusal.py [--sets latex rmanuals] [--arm 'hybrid(keyword=global-index)'] [--max-wrongful 0.05]

For each set S: fit the evidence policy on S; run the unwrapped arm and every policy record-only (threshold
-inf: never refuses, records every confidence) into results/refusal/S. Then for each set S and the other
set O: calibrate each policy's threshold on O's record-only run, run the thresholded arm on S (an actual
run: its refusals are in S's per-query outcome column) and print its measures on S. Nothing measured on
the set a threshold was chosen on is printed, except in the line that says so.

Held-out abstain queries (``qrels/held-out/S.toml``, written by an assessor who never saw the policies, and
read only once they were final) are then asked of the same thresholded arms: correct refusal on queries no policy was
designed or tuned with. They hold no answerable query, so they measure correct refusal only.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from evalkit import corpora, qrels
from evalkit import refusal_report as RR
from evalkit import runner
from evalkit.arms.policies import fit_evidence, make_policy
from evalkit.pages import PageStore
from evalkit.results import Results

POLICIES = ["idf-mass", "score(feature=max)", "score(feature=std,of=semantic)", "score(feature=diff1,of=semantic)",
            "score(feature=nqc,of=global-index)", "score(feature=wig,of=global-index)", "semantic", "spread",
            "spread(over=pages)", "names", "names(policy=spread)", "names(policy=spread,rare=1)"]


def record_only(arm: str, policy: str) -> str:
    return f"admit(arm={arm},policy={policy})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs=2, default=["latex", "rmanuals"])
    ap.add_argument("--arm", default="hybrid(keyword=global-index)")
    ap.add_argument("--max-wrongful", type=float, default=0.05)
    ap.add_argument("--out", type=Path, default=Path("results/refusal"))
    args = ap.parse_args()

    opened = {}
    for s in args.sets:
        c = corpora.load(s)
        store = PageStore()
        opened[s] = (store.ingest(c, progress=False).corpus, store, qrels.load(f"qrels/{s}.toml"))
    evidence = {}
    for s, (c, store, qs) in opened.items():
        policy = make_policy("evidence", c, store)
        policy.params["weights"] = fit_evidence(policy, qs.queries)
        evidence[s] = policy.label
        print(f"evidence fitted on {s}: {policy.label}")

    policies = POLICIES + list(dict.fromkeys(evidence.values()))
    base = [args.arm] + [record_only(args.arm, p) for p in policies]
    for s, (c, store, qs) in opened.items():
        runner.run(c, store, qs, base, args.out / s, resume=True, progress=False)

    rows, held_out = [], []
    for s, other in (args.sets, args.sets[::-1]):
        c, store, qs = opened[s]
        tuned = Results.load(args.out / other)
        chosen = []
        for p in POLICIES + [evidence[other]]:
            spec, own = RR.calibrated(tuned, record_only(args.arm, p), args.max_wrongful)
            chosen.append((p, spec))
            print(f"{spec}\n    tuned on {other} (self-tuned, not reported): correct {own['correct_refusal']}, "
                  f"wrongful {own['wrongful_refusal']}")
        runner.run(c, store, qs, base + [spec for _, spec in chosen], args.out / s, resume=True,
                   progress=False)
        res = Results.load(args.out / s)
        for p, spec in chosen:
            arm = RR.arm_info(res, spec)["label"]
            m = RR.measures(RR.confidences(res, arm))
            kinds = {k[len("correct_refusal["):-1]: str(v) for k, v in m.items() if k.startswith("correct_refusal[")}
            rows.append((s, other, p, m, kinds))
        held = Path(f"qrels/held-out/{s}.toml")
        if held.exists():
            specs = [spec for _, spec in chosen]
            runner.run(c, store, qrels.load(held), specs, args.out / f"{s}-held-out", resume=True,
                       progress=False)
            res = Results.load(args.out / f"{s}-held-out")
            for p, spec in chosen:
                held_out.append((s, other, p, RR.measures(RR.confidences(res, RR.arm_info(res, spec)["label"]))))

    print("\n| reported on | tuned on | policy | threshold | correct refusal | wrongful refusal | AUROC | "
          "AURC | nAUC |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s, other, p, m, kinds in rows:
        name = f"`evidence` (fitted on {other})" if p.startswith("evidence") else f"`{p}`"
        print(f"| {s} | {other} | {name} | {m['threshold']:g} | {m['correct_refusal']} | {m['wrongful_refusal']} "
              f"| {m['AUROC']:.3f} | {m['AURC']:.3f} | {m['nAUC']:.3f} |")
        for kind, rate in kinds.items():
            print(f"|  |  | ↳ {kind} | | {rate} | | | | |")
    for held in dict.fromkeys(s for s, *_ in held_out):
        some = [row for row in held_out if row[0] == held]
        kinds = [k for k in some[0][3] if k.startswith("correct_refusal[")]
        print("\n| held out on | tuned on | policy | threshold | correct refusal | "
              + " | ".join(k[len("correct_refusal["):-1] for k in kinds) + " |")
        print("|---|---|---|---|---|" + "---|" * len(kinds))
        for s, other, p, m in some:
            name = f"`evidence` (fitted on {other})" if p.startswith("evidence") else f"`{p}`"
            print(f"| {s} | {other} | {name} | {m['threshold']:g} | {m['correct_refusal']} | "
                  + " | ".join(f"{m[k].k}/{m[k].n}" for k in kinds) + " |")
    if any(math.isnan(m["nAUC"]) for *_, m, _ in rows):
        print("(nAUC n/a: the record-only run is missing)")


if __name__ == "__main__":
    main()

"""Per-query stopping replayed: does each query stopping on its own stopping estimate keep the decisions?

    python benchmarks/perquery_stopping.py qrels/latex.toml --results results/latex [--theta 0.5,1.0]

Every query reads its pool in a strategy's order (the recorded judgments are the assessor, as in
`evalkit qrels simulate`), one page a round, until its own stopping estimate (:func:`evalkit.pooling.estimate`'s
expected relevant pages left in its pool, the model refitted on the set's judgments every round) falls
below ``theta``. Then: pages read, share of the depth-10 pool, Kendall tau of the arms' order on nDCG@10 and
nDCG@10(doc) against the full judgments, and gate decisions (the shipped gate.toml, every ordered pair)
that differ from the full judgments' and from the whole depth-10 pool's.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from evalkit import dirs, pooling, qrels, simulate
from evalkit.results import Results


def stop_budgets(rep: simulate.Replay, rankings: dict, answerable: list[str], theta: float) -> dict[str, int]:
    """Pages each query reads before its expected relevant pages left fall below ``theta``."""
    budget = dict.fromkeys(rep.orders, 0)
    live = set(budget)
    while live:
        live = {q for q in live if budget[q] < len(rep.orders[q])}
        for q in live:
            budget[q] += 1
        prior = pooling.Prior.from_judged([(rankings[q], rep.orders[q][:budget[q]]) for q in answerable])
        for q in list(live):
            judged = dict(rep.orders[q][:budget[q]])
            left = sum(prior.chances(c)[0] for p, c in pooling.covariates(rankings[q], judged, 10).items()
                       if p not in judged)
            if left < theta:
                live.discard(q)
    return budget


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--results", required=True, type=Path)
    ap.add_argument("--theta", default="0.5,1.0", help="comma-separated thresholds on the relevant pages left")
    args = ap.parse_args()
    qs, results = qrels.load(args.file), Results.load(args.results)
    ans = simulate.answers(results)
    keeper = simulate.Gatekeeper(results, dirs.rules_path())
    names = [*simulate.LEVELS.values(), "Judged@10", *keeper.needs]
    full = simulate.truth(qs, results, ans, names, keeper)
    reference = simulate.replay(qs, ans, simulate.REFERENCE)
    refs = {"full": full.decisions,
            "pool": keeper.decide(simulate.rescore(qs, ans, results.per_query, reference.at(None), names))}
    rankings = {q.id: simulate.rankings(ans, q.id) for q in qs.queries}
    answerable = [q.id for q in qs.queries if q.answerable]
    print("| strategy | theta | pages read | share of depth-10 pool | tau page / doc | gate changes (vs full / vs "
          "pool) |")
    print("|---|---|---|---|---|---|")
    for spec in simulate.STRATEGIES:
        rep = simulate.replay(qs, ans, spec)
        for theta in (float(t) for t in args.theta.split(",")):
            budget = stop_budgets(rep, rankings, answerable, theta)
            frame = simulate.rescore(qs, ans, results.per_query,
                                     {q: dict(o[:budget[q]]) for q, o in rep.orders.items()}, names)
            tau = [simulate.kendall_tau(list(simulate.arm_means(frame, m).reindex(full.means[lvl].index)),
                                        list(full.means[lvl]))
                   for lvl, m in simulate.LEVELS.items()]
            d = keeper.decide(frame)
            changed = [sum(d[k][0] != ref[k][0] for k in d) for ref in refs.values()]
            pages = sum(budget.values())
            print(f"| `{rep.strategy}` | {theta} | {pages:,} | {pages / reference.pages(None):.0%} | "
                  f"{tau[0]:.3f} / {tau[1]:.3f} | {changed[0]} / {changed[1]} |", flush=True)


if __name__ == "__main__":
    main()

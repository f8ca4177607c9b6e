"""Time evalkit's nDCG@10, RR and Recall@10 against pytrec_eval on the same random queries.

    python benchmarks/measures.py --queries 10000

Each side gets the data in its natural form (evalkit: ranked id lists and qrels dicts; pytrec_eval: the
qrels and run dicts, run scores strictly decreasing in evalkit's order) and is timed end to end:
pytrec_eval's RelevanceEvaluator construction + evaluate, and evalkit's per-query functions (the ones
the runner uses). Reports the median of --repeats runs and checks that both agree.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from evalkit import measures  # noqa: E402

MEASURES = ("ndcg_cut_10", "recip_rank", "recall_10")


def make_data(n_queries: int, depth: int, seed: int) -> tuple[list[list[str]], list[dict[str, int]]]:
    """Random graded qrels (1-20 judged pages, gains 1..3, some judged pages never retrieved) and rankings of
    ``depth`` distinct pages drawn from 200 documents x 30 pages (most retrieved pages unjudged)."""
    rng = np.random.default_rng(seed)
    rankings: list[list[str]] = []
    qrels: list[dict[str, int]] = []
    for _ in range(n_queries):
        cells = rng.choice(200 * 30, size=depth + 20, replace=False)
        pids = [f"doc{c // 30:03d}.pdf#{c % 30 + 1}" for c in cells]
        ranking = pids[:depth]
        n_judged = int(rng.integers(1, 21))
        # Judged pages come from anywhere in the ranking or from the 20 extra pages not retrieved.
        judged = rng.choice(len(pids), size=n_judged, replace=False)
        gains = rng.integers(1, 4, size=n_judged)
        qrels.append({pids[j]: int(g) for j, g in zip(judged, gains)})
        rankings.append(ranking)
    return rankings, qrels


def run_pytrec(rankings, qrels):
    import pytrec_eval

    qd = {str(i): q for i, q in enumerate(qrels)}
    run = {str(i): {pid: float(len(r) - rank) for rank, pid in enumerate(r)} for i, r in enumerate(rankings)}
    out = pytrec_eval.RelevanceEvaluator(qd, set(MEASURES)).evaluate(run)
    return [[out[str(i)][m] for m in MEASURES] for i in range(len(rankings))]


def run_pytrec_only(qd, run):
    """pytrec_eval alone, given its input dicts already built (construction + evaluate)."""
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qd, set(MEASURES)).evaluate(run)


def run_reference(rankings, qrels):
    return [[measures.ndcg(r, q, 10), measures.rr(r, q), measures.recall(r, q, 10)]
            for r, q in zip(rankings, qrels)]


def timed(fn, *args, repeats: int) -> tuple[float, object]:
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100, help="hits per ranking")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import pytrec_eval  # noqa: F401  (fail early if missing)

    rankings, qrels = make_data(args.queries, args.depth, args.seed)
    qd = {str(i): q for i, q in enumerate(qrels)}
    run = {str(i): {pid: float(len(r) - rank) for rank, pid in enumerate(r)} for i, r in enumerate(rankings)}

    t_trec, trec = timed(run_pytrec, rankings, qrels, repeats=args.repeats)
    t_trec_only, _ = timed(run_pytrec_only, qd, run, repeats=args.repeats)
    t_ref, ref = timed(run_reference, rankings, qrels, repeats=args.repeats)

    trec_a, ref_a = np.asarray(trec), np.asarray(ref)
    diff_ref = float(np.max(np.abs(trec_a - ref_a)))

    print(f"python {platform.python_version()} ({platform.python_implementation()}), numpy {np.__version__}, "
          f"pytrec_eval-terrier {_version('pytrec_eval-terrier')}, {platform.machine()} {platform.system()}")
    print(f"{args.queries} queries x {args.depth} hits, seed {args.seed}; median of {args.repeats} runs; "
          "nDCG@10 + RR + Recall@10")
    rows = [
        ("pytrec_eval (build dicts + RelevanceEvaluator + evaluate)", t_trec),
        ("pytrec_eval (RelevanceEvaluator + evaluate, dicts prebuilt)", t_trec_only),
        ("evalkit per-query functions", t_ref),
    ]
    for label, t in rows:
        print(f"  {label:<62s} {t * 1000:9.1f} ms  ({t / args.queries * 1e6:6.2f} us/query)")
    print(f"  max |evalkit - pytrec_eval|: {diff_ref:.3g}")
    ok = diff_ref < 1e-9
    if not ok:
        print("DISAGREEMENT with pytrec_eval", file=sys.stderr)
    return 0 if ok else 1


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())

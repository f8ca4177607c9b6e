"""Deciding with few grades, replayed: do prediction-powered intervals keep the gate's decisions?

    python benchmarks/estimates_replay.py qrels/rmanuals.toml --results results/rmanuals \
        --train qrels/latex.toml --train-results results/latex [--draws 400] [--out DIR]

The recorded judgments are the person. At each budget of person-graded pages per query (1, 2, 3, 5, 10 on
average, against today's depth-10 pool), a random set of answerable queries is graded whole (every page of
its depth-10 pool, with the judged pages outside it), as many as the budget pays for; the judge predicts
every page of every query. For every ordered pair of arms and every measure the prediction-powered
interval (:func:`evalkit.estimates.estimate`, stratified by class, power-tuned) is compared with the full
judgments: coverage of the true mean difference, and the verdict (better / worse / undecided) against the
full judgments' (the gate's percentile bootstrap on every answerable query): equal, undecided or opposite;
significant pairs kept and false ones appearing. The person-only interval from the same graded queries is
shown beside it. Judges: ``ranks`` (a continuation-ratio logistic model of the gain on the arms' ranks,
fitted on the *other* set's judgments, so it never saw this set's grades), ``biased`` (the same, with every
page of the first arm's top 10 pushed up by +0.3 in P(gain >= 1) and P(gain >= 2): a judge that favours one
arm) and ``useless`` (the same constant distribution for every page).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import api, cli, docfigures, effort, estimates, pooling, qrels, recorded, replay
from evalkit.records import page_id
from evalkit.results import Results

DEPTH = replay.DEPTH


def features(rankings: dict, pages: list) -> np.ndarray:
    """Label-free features of each pooled page: (1, log arms listing it, log best rank)."""
    cov = pooling.covariates(rankings, {}, DEPTH)
    return np.array([cov[p][:3] for p in pages]).reshape(-1, 3)


def fit(qs, ans) -> pooling.Prior:
    """The ranks judge: a continuation-ratio logistic model of the gain on :func:`features`."""
    x, y = [], []
    for q in qs.queries:
        if q.answerable:
            r = recorded.rankings(ans, q.id)
            pages = replay.pool_pages(r)
            known = recorded.gains(q)
            x.append(features(r, pages))
            y += [known.get(p, 0) for p in pages]
    xs, ys = np.vstack(x), np.array(y)
    return pooling.Prior(tuple(tuple(float(w) for w in pooling._logistic(xs[ys >= g - 1], (ys[ys >= g - 1] >= g) * 1.0))
                               for g in (1, 2, 3)))


def judge_tables(qs, ans, prior: pooling.Prior, arms: list) -> dict[str, pd.DataFrame]:
    """Each judge's predictions in the judge's layout: (query, doc, page, p_ge1, p_ge2, p_eq3)."""
    rows = {name: [] for name in ("ranks", "biased", "useless")}
    for q in qs.queries:
        if not q.answerable:
            continue
        r = recorded.rankings(ans, q.id)
        pages = replay.pool_pages(r)
        favoured = set(r[arms[0]][:DEPTH])
        for p, x in zip(pages, features(r, pages), strict=True):
            c = prior.chances(tuple(x))
            rows["ranks"].append((q.id, *p, *c))
            bump = 0.3 if p in favoured else 0.0
            rows["biased"].append((q.id, *p, min(1, c[0] + bump), min(1, c[1] + bump), c[2]))
            rows["useless"].append((q.id, *p, 0.3, 0.1, 0.03))
    cols = ["query", "doc", "page", "p_ge1", "p_ge2", "p_eq3"]
    return {k: pd.DataFrame(v, columns=cols) for k, v in rows.items()}


def page_design(qs, ans, table: pd.DataFrame, arms: list, full: np.ndarray, budget: float, draws: int,
                seed: int) -> pd.DataFrame:
    """The page-sampling design's noise: every pooled page graded independently with probability
    budget / pool size; per measure, the median over queries of one query's estimate's standard deviation
    over ``draws`` samples (first arm), beside the spread of the true measure between queries."""
    rng = np.random.default_rng(seed)
    answerable = [q for q in qs.queries if q.answerable]
    sds = []
    for q in answerable:
        t = table[table["query"] == q.id]
        dist = estimates.distributions(t["p_ge1"], t["p_ge2"], t["p_eq3"])
        prior = {page_id(d, p): x for d, p, x in zip(t["doc"], t["page"], dist, strict=True)}
        r = {a: [page_id(*p) for p in pages] for a, pages in recorded.rankings(ans, q.id).items()}
        known = {page_id(*p): g for p, g in recorded.gains(q).items()}
        pi = min(1.0, budget / len(prior))
        runs = []
        for _ in range(draws):
            graded = {p: (known.get(p, 0), pi) for p in prior if rng.random() < pi}
            runs.append(estimates.pool(q.id, q.cls, {a: r[a] for a in arms}, prior, graded).estimate((1.0,))[0][:, 0])
        sds.append(np.std(runs, axis=0))
    return pd.DataFrame({"measure": estimates.MEASURES, "one query's sd (median)": np.median(sds, axis=0),
                         "sd between queries": full[:, :, 0].std(axis=0)})


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--results", required=True, type=Path)
    ap.add_argument("--train", type=Path, help="the query set the ranks judge is fitted on (ranks, biased, useless)")
    ap.add_argument("--train-results", type=Path)
    ap.add_argument("--draws", type=int, default=400, help="draws per budget for the judges fitted once")
    ap.add_argument("--local-draws", type=int, default=20, help="draws per budget for the local judge (refitted "
                                                                "in every draw)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--judges", default="ranks,biased,useless,local", help="comma-separated judges to replay")
    ap.add_argument("--cache", type=Path, help="where the local judge's per-draw predictions are kept")
    ap.add_argument("--plan", type=Path, metavar="PREDICTIONS", help="also write what `evalkit qrels plan --judge "
                    "PREDICTIONS` answers for the set (deciding-plan-NAME.md)")
    ap.add_argument("--out", type=Path)
    return ap.parse_args()


def judges(args: argparse.Namespace, qs, ans: dict, rep: replay.Replayed) -> tuple[pd.DataFrame | None, dict]:
    """The ranks judge's table (None without it), and each judge asked for with its number of draws."""
    names, out, ranks = args.judges.split(","), {}, None
    if {"ranks", "biased", "useless"} & set(names):
        prior = fit(qrels.load(args.train), recorded.answers(Results.load(args.train_results)))
        tables = judge_tables(qs, ans, prior, list(rep.arms))
        ranks = tables["ranks"]
        out.update({k: (replay.fixed(rep, t), args.draws) for k, t in tables.items() if k in names})
    if "local" in names:
        src, _ = api.judge_source(args.file, args.results)
        out["local"] = (replay.learnt(rep, src, cache=args.cache), args.local_draws)
    return ranks, out


def main() -> None:
    args = arguments()
    start = docfigures.moment()
    qs, results = qrels.load(args.file), Results.load(args.results)
    ans = recorded.answers(results)
    rep = replay.of_run(qs, ans)
    ranks, found = judges(args, qs, ans, rep)
    rows = []
    for name, (judge, draws) in found.items():
        for budget in replay.BUDGETS:
            rows += [{"judge": name, **r} for r in replay.replay(rep, judge, budget, draws, args.seed)]
            print(f"{name} {budget:g} pages/query: {draws} draws", file=sys.stderr, flush=True)
    summary = replay.summarise(pd.DataFrame(rows))
    sig = {m: sum(v != "undecided" for (mm, _, _), (_, v) in rep.truths.items() if mm == m) for m in estimates.MEASURES}
    pool = int(rep.cost.sum())
    reading = effort.reading_model(effort.beside(args.file))
    draws = ", ".join(f"{n} {d}" for n, (_, d) in found.items())
    head = (f"{qs.name}: {len(rep.queries)} answerable queries, depth-10 pool {pool} pages ({rep.cost.mean():.1f} "
            f"per query, {reading.hours(pool):.1f} person-hours); {len(rep.arms)} arms ({', '.join(rep.arms)}), "
            f"{len(rep.arms) * (len(rep.arms) - 1)} ordered pairs; significant under the full judgments: "
            + ", ".join(f"{m} {n}" for m, n in sig.items()) + f"; draws per budget: {draws}"
            + (f"; the ranks judge fitted on {args.train.name}" if ranks is not None else "")
            + ("; the local judge (hgb+isotonic, as `evalkit qrels judge` trains it) refitted in every draw on the "
               "draw's graded queries only, cross-fitted among them" if "local" in found else ""))
    parts = [head, docfigures.markdown_table(table_of(summary, pool), index=False),
             f"What a decision costs: the fewest person-graded pages per query at which the draws keep at least 80% "
             f"of the full judgments' significant ordered pairs (mean over draws) with at most 5% reversed; "
             f"{reading.statement}:", docfigures.markdown_table(cost_table(summary, sig, pool, reading), index=False)]
    if ranks is not None:
        parts += ["The page-sampling design at 3 pages per query (ranks judge, first arm, 20 draws):",
                  docfigures.markdown_table(page_design(qs, ans, ranks, list(rep.arms), rep.full, 3, 20, args.seed),
                                            index=False)]
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        write(args, text, summary, head.split(";")[0], start, qs.name)
    if args.plan:
        plan(args, qs.name)


def write(args: argparse.Namespace, text: str, summary: pd.DataFrame, title: str, start, name: str) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    command = ["python benchmarks/estimates_replay.py", str(args.file), "--results", str(args.results)]
    if args.train:
        command += ["--train", str(args.train), "--train-results", str(args.train_results), "--draws", str(args.draws)]
    command += ["--local-draws", str(args.local_draws), "--judges", args.judges, "--out", str(args.out)]
    (args.out / f"deciding-{name}.md").write_text(
        f"Command: `{' '.join(command)}`.\n\n{docfigures.machine_line(start, docfigures.moment())}\n\n{text}\n")
    figure(summary, title, args.out / f"deciding-{name}.png")


def plan(args: argparse.Namespace, name: str) -> None:
    """`evalkit qrels plan FILE --results DIR --judge PREDICTIONS`, its output kept as a docs figure."""
    command = ["qrels", "plan", str(args.file), "--results", str(args.results), "--judge", str(args.plan)]
    start, out = docfigures.moment(), io.StringIO()
    with contextlib.redirect_stdout(out):
        if cli.main(command) != 0:
            raise SystemExit(f"evalkit {' '.join(command)} failed")
    text = (f"Command: `evalkit {' '.join(command)}`; written by `python benchmarks/estimates_replay.py ... --plan "
            f"{args.plan}`.\n\n{docfigures.machine_line(start, docfigures.moment())}\n\n```text\n{out.getvalue()}```\n")
    print(text)
    if args.out:
        (args.out / f"deciding-plan-{name}.md").write_text(text)


def table_of(summary: pd.DataFrame, pool: int) -> pd.DataFrame:
    """The columns the docs show: per judge, budget and measure (``pool``: the depth-10 pool's pages)."""
    summary = summary.assign(**{"share of pool": summary["pages graded"] / pool,
                                "pages graded": summary["pages graded"].round().astype(int)})
    return summary[["judge", "pages/query", "measure", "draws", "queries graded", "pages graded", "share of pool",
                    "coverage", "coverage person-only", "width", "width person-only", "judge-person r", "n_eff",
                    "equal", "undecided", "opposite", "false", "kept", "kept person-only"]]


def cost_table(summary: pd.DataFrame, sig: dict, pool: int, reading) -> pd.DataFrame:
    """:func:`evalkit.replay.needed` with the share of the depth-10 pool and the person-hours."""
    t = replay.needed(summary, sig)
    return t.assign(**{"share of pool": t["pages graded"] / pool, "person-hours": reading.hours(t["pages graded"]),
                       "pool person-hours": reading.hours(pool)})


def figure(summary: pd.DataFrame, title: str, path: Path) -> None:
    """Coverage per measure and judge against the budget; each learning judge's verdicts on nDCG@10(doc)."""
    from matplotlib import pyplot as plt

    shown = [j for j in ("ranks", "local") if j in set(summary["judge"])]
    fig, axes = plt.subplots(1, 1 + len(shown), figsize=(5 * (1 + len(shown)), 3.8), squeeze=False)
    styles = {"ranks": "-", "biased": "--", "useless": ":", "local": "-."}
    for (judge, m), g in summary.groupby(["judge", "measure"], sort=False):
        axes[0, 0].plot(g["pages/query"], g["coverage"], marker="o", ms=3, ls=styles[judge],
                        color=f"C{list(estimates.MEASURES).index(m)}", label=f"{m}, {judge} judge")
    axes[0, 0].axhline(0.93, color="grey", lw=0.8)
    axes[0, 0].set(xlabel="person-graded pages per query (mean)", ylabel="coverage of the true Δ", ylim=(0.8, 1.01))
    axes[0, 0].legend(fontsize=6, ncol=2, loc="lower right")
    for ax, judge in zip(axes[0, 1:], shown, strict=True):
        g = summary[(summary["judge"] == judge) & (summary["measure"] == "nDCG@10(doc)")]
        for k, colour in zip(replay.OUTCOMES, ("#1a7f37", "#9a6700", "#cf222e", "#6e7781"), strict=True):
            ax.plot(g["pages/query"], g[k], marker="o", ms=3, color=colour, label=k)
        ax.set(xlabel="person-graded pages per query (mean)", ylabel="ordered pairs (mean over draws)")
        ax.set_title(f"nDCG@10(doc) verdicts vs the full judgments': {judge} judge", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()

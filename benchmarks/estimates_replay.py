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
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from evalkit import docfigures, estimates, measures, pooling, qrels, recorded, stats
from evalkit.records import page_id

BUDGETS = (1, 2, 3, 5, 10)
DEPTH = 10


def answers(path: Path) -> dict:
    """Every arm's answers in ``path/runs`` (an unfinished run's arms included)."""
    arms = [{"label": p.stem, "file": p.stem} for p in sorted((path / "runs").glob("*.jsonl"))]
    return recorded.answers(SimpleNamespace(manifest={"arms": arms}, path=path))


def features(rankings: dict, pages: list) -> np.ndarray:
    """Label-free features of each pooled page: (1, log arms listing it, log best rank)."""
    cov = pooling.covariates(rankings, {}, DEPTH)
    return np.array([cov[p][:3] for p in pages]).reshape(-1, 3)


def pool_pages(rankings: dict) -> list:
    """The depth-10 pool: what a person would read, and all the judge predicts (a page judged outside it,
    found by searching, is known only to the person's grades)."""
    return list(dict.fromkeys(p for r in rankings.values() for p in r[:DEPTH]))


def fit(qs, ans) -> pooling.Prior:
    """The ranks judge: a continuation-ratio logistic model of the gain on :func:`features`."""
    x, y = [], []
    for q in qs.queries:
        if q.answerable:
            r = recorded.rankings(ans, q.id)
            pages = pool_pages(r)
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
        pages = pool_pages(r)
        favoured = set(r[arms[0]][:DEPTH])
        for p, x in zip(pages, features(r, pages), strict=True):
            c = prior.chances(tuple(x))
            rows["ranks"].append((q.id, *p, *c))
            bump = 0.3 if p in favoured else 0.0
            rows["biased"].append((q.id, *p, min(1, c[0] + bump), min(1, c[1] + bump), c[2]))
            rows["useless"].append((q.id, *p, 0.3, 0.1, 0.03))
    cols = ["query", "doc", "page", "p_ge1", "p_ge2", "p_eq3"]
    return {k: pd.DataFrame(v, columns=cols) for k, v in rows.items()}


def truth(qs, ans, arms: list) -> np.ndarray:
    """(queries, measures, arms): each answerable query's measures under the full judgments."""
    return np.array([[[measures.evaluate(q, ans[a][q.id], [m])[m] for a in arms] for m in estimates.MEASURES]
                     for q in qs.queries if q.answerable])


def verdicts(full: np.ndarray, arms: list) -> dict:
    """The full judgments' verdict per (measure, a, b): the gate's paired bootstrap CI."""
    out = {}
    for m, name in enumerate(estimates.MEASURES):
        for i, a in enumerate(arms):
            for j, b in enumerate(arms):
                if a != b:
                    c = stats.paired_compare(full[:, m, i], full[:, m, j], n_resamples=2000)
                    out[(name, a, b)] = (c.mean_delta, {"better": "better", "worse": "worse"}.get(c.verdict,
                                                                                                  "undecided"))
    return out


def replay(full: np.ndarray, pred: np.ndarray, strata: np.ndarray, cost: np.ndarray, arms: list, truths: dict,
           budget: float, draws: int, seed: int) -> list[dict]:
    """Per draw, measure and ordered pair: covered, verdict, and the person-only interval's beside it."""
    rng = np.random.default_rng(seed)
    n = max(4, int(round(budget * len(cost) / cost.mean())))  # queries graded whole for this budget
    rows = []
    for d in range(draws):
        graded = np.zeros(len(cost), dtype=bool)
        graded[rng.choice(len(cost), size=min(n, len(cost)), replace=False)] = True
        for (m, a, b), (delta, truth_v) in truths.items():
            e = estimates.estimate(full, pred, graded, strata, m, arms, b, a)
            alone = estimates.Estimate(m, a, b, "all", e.person_only, e.person_only, e.correlation)
            rows.append({"draw": d, "measure": m, "a": a, "b": b, "truth": truth_v, "graded_queries": int(graded.sum()),
                         "pages": int(cost[graded].sum()), "covered": e.interval.low <= delta <= e.interval.high,
                         "verdict": e.verdict, "width": e.interval.high - e.interval.low,
                         "covered_person": alone.interval.low <= delta <= alone.interval.high,
                         "verdict_person": alone.verdict, "width_person": alone.interval.high - alone.interval.low,
                         "r": e.correlation, "n_eff": e.n_eff})
    return rows


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


def outcome(truth_v: str, v: str) -> str:
    if v == truth_v:
        return "equal"
    return "undecided" if v == "undecided" else ("false" if truth_v == "undecided" else "opposite")


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (judge, budget, m), g in rows.groupby(["judge", "budget", "measure"], sort=False):
        row = {"judge": judge, "pages/query": budget, "measure": m, "graded queries": g["graded_queries"].iloc[0],
               "pages graded": round(g["pages"].mean()), "coverage": g["covered"].mean(),
               "coverage person-only": g["covered_person"].mean(),
               "width": g["width"].mean(), "width person-only": g["width_person"].mean(),
               "r": g["r"].mean(), "n_eff": g["n_eff"].replace(np.inf, np.nan).mean()}
        for who, col in (("", "verdict"), (" person-only", "verdict_person")):
            o = pd.Series([outcome(t, v) for t, v in zip(g["truth"], g[col], strict=True)])
            draws = g["draw"].nunique()
            for k in ("equal", "undecided", "opposite", "false"):
                row[f"{k}{who}"] = (o == k).sum() / draws
            row[f"kept{who}"] = ((g["truth"] != "undecided").values & (o == "equal").values).sum() / draws
        out.append(row)
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--results", required=True, type=Path)
    ap.add_argument("--train", required=True, type=Path, help="the query set the ranks judge is fitted on")
    ap.add_argument("--train-results", required=True, type=Path)
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--judges", default="ranks,biased,useless", help="comma-separated judges to replay")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    start = docfigures.moment()
    qs, ans = qrels.load(args.file), answers(args.results)
    arms = list(ans)
    prior = fit(qrels.load(args.train), answers(args.train_results))
    answerable = [q for q in qs.queries if q.answerable]
    strata = np.array([q.cls for q in answerable])
    cost = np.array([len({p for r in recorded.rankings(ans, q.id).values() for p in r[:DEPTH]}) for q in answerable])
    full = truth(qs, ans, arms)
    ranked = {a: {q.id: [page_id(*p) for p in recorded.rankings(ans, q.id)[a]] for q in answerable} for a in arms}
    truths = verdicts(full, arms)
    tables = judge_tables(qs, ans, prior, arms)
    rows = []
    for judge, table in tables.items():
        if judge not in args.judges.split(","):
            continue
        pred = estimates.predicted([(q.id, q.cls) for q in answerable], ranked, table)
        for budget in BUDGETS:
            rows += [{"judge": judge, "budget": budget, **r}
                     for r in replay(full, pred, strata, cost, arms, truths, budget, args.draws, args.seed + budget)]
    rows_df = pd.DataFrame(rows)
    summary = summarise(rows_df)
    noise = page_design(qs, ans, tables["ranks"], arms, full, 3, 20, args.seed)
    sig = {m: sum(v != "undecided" for (mm, _, _), (_, v) in truths.items() if mm == m) for m in estimates.MEASURES}
    head = (f"{qs.name}: {len(answerable)} answerable queries, depth-10 pool {cost.sum()} pages ({cost.mean():.1f} "
            f"per query); {len(arms)} arms ({', '.join(arms)}), {len(arms) * (len(arms) - 1)} ordered pairs; "
            f"significant under the full judgments: " + ", ".join(f"{m} {n}" for m, n in sig.items())
            + f"; {args.draws} draws per budget; the ranks judge fitted on {args.train.name}")
    text = "\n\n".join([head, docfigures.markdown_table(table_of(summary, int(cost.sum())), index=False),
                         "The page-sampling design at 3 pages per query (ranks judge, first arm, 20 draws):",
                         docfigures.markdown_table(noise, index=False)])
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        command = " ".join(["python benchmarks/estimates_replay.py", str(args.file), "--results", str(args.results),
                            "--train", str(args.train), "--train-results", str(args.train_results),
                            "--draws", str(args.draws), "--out", str(args.out)])
        (args.out / f"deciding-{qs.name}.md").write_text(
            f"Command: `{command}`.\n\n{docfigures.machine_line(start, docfigures.moment())}\n\n{text}\n")
        figure(summary, head.split(";")[0] + f"; {args.draws} draws per budget", args.out / f"deciding-{qs.name}.png")


def table_of(summary: pd.DataFrame, pool: int) -> pd.DataFrame:
    """The columns the docs show: per judge, budget and measure (``pool``: the depth-10 pool's pages)."""
    summary = summary.assign(**{"share of pool": summary["pages graded"] / pool})
    t = summary[["judge", "pages/query", "measure", "graded queries", "pages graded", "share of pool", "coverage",
                 "coverage person-only", "width", "width person-only", "r", "n_eff", "equal", "undecided",
                 "opposite", "false", "kept", "kept person-only"]].copy()
    return t.rename(columns={"graded queries": "queries graded", "r": "judge-person r"})


def figure(summary: pd.DataFrame, title: str, path: Path) -> None:
    """Coverage per measure and judge against the budget; the ranks judge's verdicts on nDCG@10(doc)."""
    from matplotlib import pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for (judge, m), g in summary.groupby(["judge", "measure"], sort=False):
        ax1.plot(g["pages/query"], g["coverage"], marker="o", ms=3, color=f"C{list(estimates.MEASURES).index(m)}",
                 ls={"ranks": "-", "biased": "--", "useless": ":"}[judge], label=f"{m}, {judge} judge")
    ax1.axhline(0.93, color="grey", lw=0.8)
    ax1.set(xlabel="person-graded pages per query (mean)", ylabel="coverage of the true Δ", ylim=(0.8, 1.01))
    ax1.legend(fontsize=6, ncol=2, loc="lower right")
    g = summary[(summary["judge"] == "ranks") & (summary["measure"] == "nDCG@10(doc)")]
    for k, colour in (("equal", "#1a7f37"), ("undecided", "#9a6700"), ("opposite", "#cf222e"), ("false", "#6e7781")):
        ax2.plot(g["pages/query"], g[k], marker="o", ms=3, color=colour, label=k)
    ax2.set(xlabel="person-graded pages per query (mean)", ylabel="ordered pairs (mean over draws)")
    ax2.set_title("nDCG@10(doc) verdicts vs the full judgments'", fontsize=9)
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()

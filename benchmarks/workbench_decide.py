"""What "can I decide yet?" costs the judging workbench per key, on a real set a person has graded in part.

    python benchmarks/workbench_decide.py qrels/latex.toml --results results/latex \
        --baseline keyword --candidate hybrid [--every 8] [--keys 4]

The query file is copied into a temporary folder with every query pooled (its judged pages) and one query in
``--every`` left graded, the others' grades removed (a person part way through); the run is rescored from
that copy into a copy of the results directory, whose manifest then names it (`evalkit run` refuses a set
whose answerable queries are not all graded); the judge's predictions (``RESULTS/judge``, written by
`evalkit qrels judge`) come with it. The workbench is opened on the copy twice, without and with the gate
beside it, and the CPU seconds of this process (``time.process_time``: CPU-bound work does not slow with
the machine's load the way wall time does) are read for opening it, per move (``j``) and per grade (``0``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import tomlkit

import evalkit as ek
from evalkit import qrels, runner


def partly_graded(src: Path, out: Path, every: int) -> Path:
    """``src`` with every query pooled and only one query in ``every`` keeping its grades."""
    doc = tomlkit.parse(src.read_text(encoding="utf-8"))
    for i, q in enumerate(doc["query"]):
        q["pooled"] = [f"{j['doc']}#{j['page']}" for j in q.get("judgments", [])]
        if i % every:
            q["judgments"] = tomlkit.array()
    out.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return out


def rescored(results: Path, path: Path, out: Path) -> Path:
    """A copy of ``results`` scored with the query file at ``path``, its manifest naming it."""
    shutil.copytree(results, out, ignore=shutil.ignore_patterns("report.*", "figures", "gate.json"))
    qs = qrels.load(path)
    runner.rescore(qs, out).to_parquet(out / "per_query.parquet", index=False)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["qrels"].update(name=qs.name, path=str(path), digest=qs.digest, queries=len(qs.queries))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out


def keys(path: Path, docs, n: int, **gate) -> dict[str, float]:
    """CPU seconds to open the workbench, and the median per move and per grade over ``n`` of each."""
    c = time.process_time()
    w = ek.judge(path, docs, **gate)
    opened = time.process_time() - c

    def cost(**msg) -> float:
        c = time.process_time()
        w._on_msg(w, msg, [])
        return time.process_time() - c

    moves = [cost(action="move", value=1) for _ in range(n)]
    grades = [cost(action="grade", value=0) for _ in range(n)]
    w.close()
    return {"open": opened, "move": statistics.median(moves), "grade": statistics.median(grades)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("queries", type=Path)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--every", type=int, default=8, help="one query in EVERY keeps its grades")
    ap.add_argument("--keys", type=int, default=4, help="moves and grades timed, each")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = partly_graded(args.queries, Path(tmp) / args.queries.name, args.every)
        results = rescored(args.results, path, Path(tmp) / "results")
        docs = ek.corpus(qrels.load(path).corpus, progress=False)
        gate = {"results": results, "baseline": args.baseline, "candidate": args.candidate}
        for name, kw in (("workbench alone", {}), ("with the gate beside", gate)):
            shutil.copy(path, Path(tmp) / "work.toml")
            t = keys(Path(tmp) / "work.toml", docs, args.keys, **kw)
            print(f"{name}: open {t['open']:.2f} CPU-s, move {t['move']:.2f} CPU-s, grade {t['grade']:.2f} CPU-s "
                  f"(medians of {args.keys})")


if __name__ == "__main__":
    main()

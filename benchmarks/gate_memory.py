"""Peak memory of `evalkit compare` and `evalkit gate` on a large synthetic results directory.

    python benchmarks/gate_memory.py --queries 20000 --arms 7 [--out gate-memory.md]

writes a results directory of seeded random per-query scores (tests/conftest.py:write_results, the one the
tests use: 20,000 queries, a tenth of them abstain, ``--arms`` arms), then runs, each in its own process under
``/usr/bin/time -v``, `evalkit compare DIR --baseline arm0` (every other arm against it) and `evalkit gate
--baseline DIR:arm0 --candidate DIR:arm1` with the shipped rules, and prints (and writes to ``--out``, the
docs figure ``make docs-figures`` reads) one Markdown row per command: its peak resident memory (the
kernel's maximum RSS), wall time and exit code. Memory, not time, is the figure: resampling streams in
batches (evalkit.stats), so the peak should not grow with the queries.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import write_results  # noqa: E402 - the synthetic directory the tests build

CLASSES = ("needle", "trap", "spread", "needle", "trap", "spread", "needle", "trap", "spread", "abstain")


def synthetic(path: Path, queries: int, arms: int, seed: int = 0) -> Path:
    """``arms`` arms over ``queries`` queries: page scores uniform, doc scores a little higher, hits 0/1."""
    rng = np.random.default_rng(seed)
    classes = [CLASSES[i % len(CLASSES)] for i in range(queries)]
    scores = {}
    for a in range(arms):
        page = rng.uniform(0, 1, queries).round(3)
        scores[f"arm{a}"] = {"nDCG@10": list(page), "nDCG@10(doc)": list(np.minimum(1, page + 0.1)),
                             "GoldDoc@3": list((rng.uniform(0, 1, queries) < 0.7).astype(float)),
                             "RR": list(rng.uniform(0, 1, queries).round(3))}
    return write_results(path, scores, classes)


def peak(argv: list[str]) -> tuple[float, float, int]:
    """(peak RSS MiB, wall seconds, exit code) of one command, from ``/usr/bin/time -v``."""
    run = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", run.stderr)
    h, m, s = clock.groups()
    return rss / 1024, int(h or 0) * 3600 + int(m) * 60 + float(s), run.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--arms", type=int, default=7)
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args()
    evalkit = str(Path(sys.executable).with_name("evalkit"))
    with tempfile.TemporaryDirectory() as tmp:
        d = synthetic(Path(tmp) / "results", args.queries, args.arms)
        commands = {"evalkit compare DIR --baseline arm0": [evalkit, "compare", str(d), "--baseline", "arm0"],
                    "evalkit gate --baseline DIR:arm0 --candidate DIR:arm1": [
                        evalkit, "gate", "--baseline", f"{d}:arm0", "--candidate", f"{d}:arm1"]}
        lines = [f"{args.queries:,} queries × {args.arms} arms:", "", "| command | peak RSS (MiB) | wall (s) | exit |",
                 "|---|---|---|---|"]
        print("\n".join(lines), flush=True)
        for shown, argv in commands.items():
            rss, wall, code = peak(argv)
            lines.append(f"| `{shown}` | {rss:.0f} | {wall:.0f} | {code} |")
            print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The report rendered headless: the shipped notebook executed on a results directory into
``report.ipynb``, a self-contained ``report.html`` and ``figures/*.png`` next to the run."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .. import dirs, notebooks
from ..results import Results
from .selection import resolve_baseline, resolve_pair

NOTEBOOK = dirs.shipped("report.ipynb")
# Figures the report saves (figures/<name>.png); "deltas" needs two arms.
FIGURES = ("class_bars", "deltas", "latency", "refusals", "ties")
# Saved only when the run has what they show: "refusal_tradeoff" needs an arm that records confidences.
OPTIONAL_FIGURES = ("refusal_tradeoff",)


def render(results_dir: str | Path, out_html: str | Path | None = None, pair: Sequence[str] | str | None = None,
           notebook: str | Path | None = None, timeout: int = 600, kernel_name: str = "python3",
           baseline: str | None = None) -> Path:
    """Execute the report notebook on ``results_dir`` and write ``<results>/report.ipynb``, the HTML report
    (``out_html``, default ``<results>/report.html``, self-contained: figures embedded, no script, style
    or font from elsewhere, so it opens offline) and ``<results>/figures/*.png``;
    returns the HTML's path. A failing cell raises nbclient's CellExecutionError naming the cell and the
    error; nothing is written then."""
    res = Results.load(Path(results_dir).resolve())
    _ = res.per_query  # a damaged file, or measures that are not this run's, are refused here in one line
    if pair is not None:
        pair = list(resolve_pair(res, pair) or ())  # a given pair is returned checked, or refused
    baseline = resolve_baseline(res, baseline) if baseline else None  # checked, or refused
    figures = res.path / "figures"
    figures.mkdir(exist_ok=True)
    for name in FIGURES + OPTIONAL_FIGURES:  # a figure left from an earlier report must not pass for this one's
        (figures / f"{name}.png").unlink(missing_ok=True)
    m = res.manifest
    return notebooks.execute(Path(notebook or NOTEBOOK), res.path, "report",
                             f"evalkit report: {m['corpus']['name']} × {m['qrels']['name']}",
                             out_html=out_html, timeout=timeout, kernel_name=kernel_name,
                             results=str(res.path), pair=pair, figures=str(figures), baseline=baseline)

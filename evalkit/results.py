"""Reading a results directory: the same object backs ``evalkit summary``, the gate and the notebooks."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from . import stats
from .resultsdir import ResultsError, read_json
from .summary import summarize

HEADLINE = {  # column of the summary -> heading of the comparison table
    "nDCG@10": "nDCG@10 page", "nDCG@10(doc)": "nDCG@10 doc", "GoldDoc@3": "GoldDoc@3", "Judged@10": "Judged@10",
    "correct_refusal_rate": "correct refusal", "wrongful_refusal_rate": "wrongful refusal",
    "errors": "errors", "latency_median_s": "s/query (median)",
}
DEFINITIONS = {
    "nDCG@10 page": "linear gain, DCG = Σ gain_i / log2(i+1) over the first 10 pages, ideal from all judged pages",
    "nDCG@10 doc": "pages collapsed to documents in order of first appearance, a document's gain = its best page's",
    "GoldDoc@3": "a gold document (a judged page of gain >= 2) among the first 3 distinct documents",
    "Judged@10": ("share of the first 10 pages the query set has judged (any gain, 0 included), over the "
                  "answerable queries answered; nDCG counts an unjudged page as non-relevant, so below 0.8 "
                  "nDCG@10 speaks about unread pages as much as about the arm"),
    "correct refusal": "abstain queries answered with a refusal or nothing, over all abstain queries",
    "wrongful refusal": "answerable queries refused or answered with nothing, over all answerable queries",
    "errors": ("queries the arm failed to answer (a tool error, a timeout, an unreadable answer): never a "
               "refusal; an answerable one scores 0 in the ranking measures"),
    "s/query (median)": ("median wall-clock seconds of one search during the run (index built; one pass, "
                         "so the first query of an arm is included)"),
}


@dataclass(frozen=True)
class Results:
    """A results directory written by :func:`evalkit.run.run`."""

    path: Path

    @classmethod
    def load(cls, path: Path | str) -> "Results":
        path = Path(path)
        if not (path / "manifest.json").exists():
            raise FileNotFoundError(f"{path} is not a results directory (no manifest.json)")
        return cls(path)

    @cached_property
    def manifest(self) -> dict:
        return read_json(self.path / "manifest.json")

    @cached_property
    def per_query(self) -> pd.DataFrame:
        path = self.path / "per_query.parquet"
        try:
            return pd.read_parquet(path)
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types for one damaged file
            raise ResultsError(f"{path} is missing or damaged ({type(e).__name__}: {e}); it is rebuilt from the "
                               f"answers in {self.path / 'runs'} by `evalkit run ... --out {self.path} --resume`") from None

    @property
    def arms(self) -> list[str]:
        return [a["label"] for a in self.manifest["arms"]]

    def table(self, by_class: bool = False) -> pd.DataFrame:
        """The comparison table: one row per arm (per class with ``by_class``), headline columns only."""
        s = summarize(self.per_query, by_class=by_class)
        if not by_class:
            s = s[s["class"] == "all"]
        keys = ["arm", "class"] if by_class else ["arm"]
        cols = [c for c in HEADLINE if c in s.columns]  # a run written before a column existed lacks it
        return s[keys + cols].rename(columns=HEADLINE).set_index(keys)

    def scores(self, measure: str, arm: str, answerable_only: bool = True) -> pd.Series:
        """Per-query values of one measure for one arm, indexed by query id."""
        f = self.per_query[self.per_query["arm"] == arm]
        if answerable_only:
            f = f[f["class"] != "abstain"]
        return f.set_index("query")[measure]

    def compare(self, base: str, other: str, measure: str = "nDCG@10", cls: str | None = None,
                **kw) -> stats.Comparison:
        """Paired comparison of two arms of this run on one measure (answerable queries, or one class)."""
        f = self.per_query if cls is None else self.per_query[self.per_query["class"] == cls]
        f = f[f["class"] != "abstain"]
        wide = f.pivot(index="query", columns="arm", values=measure)
        return stats.paired_compare(wide[base].to_numpy(), wide[other].to_numpy(), **kw)

    def _repr_html_(self) -> str:
        return (f"<p><b>{self.manifest['corpus']['name']}</b> × <b>{self.manifest['qrels']['name']}</b> "
                f"({self.manifest['qrels']['queries']} queries) — {self.path}</p>"
                + self.table().to_html(float_format=lambda v: f"{v:.3f}", na_rep="n/a"))

    def __repr__(self) -> str:
        return f"Results({str(self.path)!r})\n{self.table().to_string(float_format=lambda v: f'{v:.3f}', na_rep='n/a')}"

"""Reading a results directory: the same object backs ``evalkit summary``, the gate and the notebooks."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from . import escape as esc
from . import ids, measures
from .records import CLASSES, split_page_id
from .resultsdir import ResultsError, check_manifest, check_per_query, measured, read_json, status

if TYPE_CHECKING:
    from .stats import Comparison

HEADLINE = {  # column of the summary -> heading of the comparison table
    "nDCG@10": "nDCG@10 page", "nDCG@10(doc)": "nDCG@10 doc", "GoldDoc@3": "GoldDoc@3", "Judged@10": "Judged@10",
    "Evidence@10": "Evidence@10",
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
    "Evidence@10": ("share of answerable queries whose first 10 chunks hold a judged evidence quote (chunk "
                    "retrievers only: the passage a reader is shown, not only its page)"),
    "correct refusal": "abstain queries answered with a refusal or nothing, over all abstain queries",
    "wrongful refusal": "answerable queries refused or answered with nothing, over all answerable queries",
    "errors": ("queries the arm failed to answer (a tool error, a timeout, an unreadable answer): never a "
               "refusal; an answerable one scores 0 in the ranking measures"),
    "s/query (median)": ("median wall-clock seconds of one search during the run (index built; one pass, "
                         "so the first query of an arm is included)"),
}


@dataclass(frozen=True)
class Results:
    """A results directory written by :func:`evalkit.runner.run`."""

    path: Path

    @classmethod
    def load(cls, path: Path | str) -> "Results":
        path = Path(path)
        if not (path / "manifest.json").exists():
            raise FileNotFoundError(f"{path} is not a results directory (no manifest.json)")
        return cls(path)

    @cached_property
    def manifest(self) -> dict:
        return check_manifest(self.path / "manifest.json", read_json(self.path / "manifest.json"))

    def check_complete(self) -> None:
        """Raise ResultsError unless the run finished (a gate decides on finished runs only) and its measures
        are its own (:attr:`per_query`)."""
        state = status(self.path, self.manifest)
        if state != "complete":
            raise ResultsError(f"{self.path}: the run is {state}, not complete (manifest.json field 'status'): its "
                               f"measures may belong to an earlier run; finish it with `evalkit run ... --out "
                               f"{self.path} --resume`")
        _ = self.per_query  # reading it refuses measures that are not this run's

    @cached_property
    def per_query(self) -> pd.DataFrame:
        """The measures, one row per query and arm, refused (ResultsError) unless they were computed on what
        the manifest names: a failed or interrupted ``--resume`` on a changed query set leaves a manifest
        describing the new run beside the old run's measures, and every table, summary and report of those
        would show another set's figures as this one's."""
        path = self.path / "per_query.parquet"
        try:
            frame = pd.read_parquet(path)
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types for one damaged file
            raise ResultsError(f"{path} is missing or damaged ({type(e).__name__}: {e}); it is rebuilt from the "
                               f"answers in {self.path / 'runs'} by `evalkit run ... --out {self.path} "
                               "--resume`") from None
        check_per_query(path, frame)
        if why := self._foreign_measures(frame.attrs.get("evalkit")):
            raise ResultsError(f"{self.path}: {why}; finish the run with `evalkit run ... --out {self.path} --resume`")
        return frame

    def _foreign_measures(self, stored: dict | None) -> str | None:
        """Why measures recorded as computed on ``stored`` are not this manifest's (None: they are). Measures
        from before evalkit recorded it are trusted only from a run that completed."""
        now, state = measured(self.manifest), status(self.path, self.manifest)
        q = self.manifest["qrels"]
        unfinished = f"its last run ({state}) did not finish for query set {q['name']} ({q['digest'][:12]})"
        if stored is None:
            return None if state == "complete" else \
                f"{unfinished}, and per_query.parquet does not say which run it holds"
        differ = [k for k in now if not isinstance(stored, dict) or stored.get(k) != now[k]]
        if not differ:
            return None
        return (f"per_query.parquet was computed on another {', '.join(differ)} than manifest.json names"
                + ("" if state == "complete" else f" ({unfinished}): these are an earlier run's measures"))

    @property
    def ungraded(self) -> tuple[str, ...]:
        """The queries the run answered but did not measure: no judgment yet (:func:`evalkit.qrels.ungraded`)."""
        return tuple(self.manifest["qrels"].get("ungraded", ()))

    def ungraded_note(self) -> str:
        """One line for every reader of the measures when some queries are ungraded ("" when none is): the
        measures speak of the graded ones only, and the judge's gate speaks of all."""
        left, total = self.ungraded, self.manifest["qrels"]["queries"]
        if not left:
            return ""
        return (f"{total - len(left)} of {total} queries measured; {len(left)} ungraded, left out (no judgment "
                f"yet: {', '.join(left[:5])}{' …' if len(left) > 5 else ''}): gate them with --judge")

    @property
    def arms(self) -> list[str]:
        return [a["label"] for a in self.manifest["arms"]]

    def arm(self, name: str) -> str:
        """The label of the arm ``name`` names: its label, the spec it was run with (``semantic`` finds
        ``semantic(model=…)``), or a registered retriever's name without its digest (``mine`` finds
        ``mine@3fa2c1d0``) when only one arm has it. The error lists the arms."""
        found = [a["label"] for a in self.manifest["arms"] if name in (a["label"], a["spec"])]
        found = found or [a for a in self.arms if a.split("(")[0].split("@")[0] == name]
        if len(found) == 1:
            return found[0]
        if found:
            raise ResultsError(f"{self.path}: {name!r} names {len(found)} arms ({', '.join(found)}): give its label")
        raise ResultsError(f"{self.path} has no arm {name!r}; it has {', '.join(self.arms)}")

    def table(self, by_class: bool = False) -> pd.DataFrame:
        """The comparison table: one row per arm (per class with ``by_class``), headline columns only."""
        s = summarize(self.per_query, by_class=by_class)
        if not by_class:
            s = s[s["class"] == "all"]
        keys = ["arm", "class"] if by_class else ["arm"]
        # a run written before a column existed lacks it; Evidence@10 only where an arm returned chunks
        cols = [c for c in HEADLINE if c in s.columns and not (c == "Evidence@10" and s[c].isna().all())]
        return s[keys + cols].rename(columns=HEADLINE).set_index(keys)

    def scores(self, measure: str, arm: str, answerable_only: bool = True) -> pd.Series:
        """Per-query values of one measure for one arm, indexed by query id."""
        f = self.per_query[self.per_query["arm"] == self.arm(arm)]
        if answerable_only:
            f = f[f["class"] != "abstain"]
        return f.set_index("query")[measure]

    def rankings(self, arm: str) -> dict[str, list[tuple[str, int]]]:
        """Each query's ranked pages ``(doc, page)`` as the arm recorded them (its TREC run file), so two arms'
        rankings can be compared as they are, not only through their measures."""
        entry = next(a for a in self.manifest["arms"] if a["label"] == self.arm(arm))
        ranked: dict[str, list[tuple[str, int]]] = {}
        for line in (self.path / "runs" / f"{entry['file']}.trec").read_text().splitlines():
            qid, _, pid, *_ = line.split()
            ranked.setdefault(ids.decode(qid), []).append(split_page_id(pid))
        return ranked

    def compare(self, base: str, other: str, measure: str = "nDCG@10", cls: str | None = None,
                **kw) -> Comparison:
        """Paired comparison of two arms of this run on one measure (answerable queries, or one class)."""
        from . import stats  # scipy.stats takes a second to load: `evalkit run` and `search` never need it

        f = self.per_query if cls is None else self.per_query[self.per_query["class"] == cls]
        f = f[f["class"] != "abstain"]
        wide = f.pivot(index="query", columns="arm", values=measure)
        return stats.paired_compare(wide[self.arm(base)].to_numpy(), wide[self.arm(other)].to_numpy(), **kw)

    def refusal(self, arm: str, threshold: float | None = None, max_wrongful: float | None = None) -> dict:
        """Refusal measures of an arm that records a confidence (an ``admit(...)`` arm): both rates at its
        own threshold or at ``threshold``, AUROC, AURC and nAUC. With ``max_wrongful`` the threshold is
        chosen on this run first (self-tuned, so optimistic: report it on another set), and ``spec`` names
        the arm to run with it."""
        from . import refusal_report

        if max_wrongful is None:
            return refusal_report.measures(refusal_report.confidences(self, arm), threshold)
        spec, measured = refusal_report.calibrated(self, arm, max_wrongful)
        return {**measured, "spec": spec}

    def _repr_html_(self) -> str:
        m = self.manifest
        return (f"<p><b>{esc.html(m['corpus']['name'])}</b> × <b>{esc.html(m['qrels']['name'])}</b> "
                f"({m['qrels']['queries']} queries) — {esc.html(self.path)}</p>"
                + self.table().to_html(float_format=lambda v: f"{v:.3f}", na_rep="n/a"))

    def __repr__(self) -> str:
        return f"Results({str(self.path)!r})\n{self.table().to_string(float_format=lambda v: f'{v:.3f}', na_rep='n/a')}"


def summarize(frame: pd.DataFrame, by_class: bool = True) -> pd.DataFrame:
    """Per arm (and per class, plus ``all``): ranking measures averaged over answerable queries only (an
    errored one scores 0, like an empty answer), both refusal rates side by side, the number of errors,
    latency median / p95 / mean, and the mean tied items at 10. Audit measures (Judged@10) are averaged over
    the queries with an answer: answerable ones in ``all`` (the row whose nDCG they qualify), the class's
    own in a class row (abstain included)."""
    names = [n for n in measures.DEFAULT if n in frame.columns]
    audit = {n for n in names if measures.MEASURES[n].audit}
    groups = [("all", frame)]
    if by_class:
        groups += [(c, frame[frame["class"] == c]) for c in CLASSES if (frame["class"] == c).any()]
    rows = []
    for cls, g in groups:
        for arm, a in g.groupby("arm", sort=False):
            answerable = a[a["class"] != "abstain"]
            row = {"arm": arm, "class": cls, "queries": len(a)}
            row.update({n: answerable[n].mean() if len(answerable) else math.nan for n in names})
            if measures.EVIDENCE in a:  # chunk retrievers' only: a mean over the queries it is defined on
                row[measures.EVIDENCE] = answerable[measures.EVIDENCE].mean() if len(answerable) else math.nan
            row.update({n: (answerable if cls == "all" else a)[n].mean() for n in audit})
            row.update(measures.refusal_rates(a["outcome"], a["class"] == "abstain"))
            row["errors"] = int((a["outcome"] == "error").sum())
            row.update({f"latency_{k}_s": v for k, v in measures.latency_summary(a["latency_s"]).items()})
            row["ties@10"] = a["ties@10"].mean()
            rows.append(row)
    return pd.DataFrame(rows)

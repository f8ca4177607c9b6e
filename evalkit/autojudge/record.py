"""What a judge written by ``evalkit qrels judge`` says of itself, read back for the report and the workbench:
``judge.json`` beside ``predictions.parquet`` (:func:`evalkit.autojudge.session.write`) gives the judge's
identity, what it was trained on, its agreement per class on grades it did not train on, and the classes it
is refused for; the sha256 of the predictions file is what a gate verdict decided with it names.

A reader: it imports neither the judge's model nor anything that writes, so the report can show a judge
without scikit-learn. Every string in it is data, shown as text.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..corpora import sha256_file as sha256

FOLDER = "judge"  # RESULTS/judge/: where `evalkit qrels judge FILE --results RESULTS` writes by default
PREDICTIONS = "predictions.parquet"
META = "judge.json"
DISTRACTORS = "trap: distractor pages"  # the agreement row of the trap class's distractor pages alone
COLUMNS = {"queries": "queries", "pages": "graded pages", "kappa": "κ (linear)", "auroc_ge2": "AUROC gain ≥ 2",
           "ece_ge2": "calibration error", "false_alarms": "false alarms", "tau_page": "τ nDCG@10",
           "tau_doc": "τ nDCG@10(doc)"}


class JudgeRecordError(ValueError):
    """A judge.json evalkit cannot read: one line naming the file and what is wrong."""


@dataclass(frozen=True)
class JudgeRecord:
    """One judge's record: its predictions file and that file's sha256, the judge's identity and model,
    how it was trained, its agreement per class (rows: the classes, the trap's distractor pages, ``all``;
    columns :data:`COLUMNS`' keys) and its verdict per class ("accepted" or "refused: why")."""

    predictions: str
    sha256: str
    identity: str
    model: str
    trained: str
    command: str
    agreement: pd.DataFrame = field(repr=False)
    verdicts: dict[str, str] = field(default_factory=dict)
    pool_auroc: dict[str, float] = field(default_factory=dict)  # AUROC gain >= 2 on the held-out graded pool pages

    def against_baselines(self) -> str:
        """The judge's AUROC for gain >= 2 on held-out graded pool pages beside the stopping estimate's prior
        and "unjudged = 0", as ``evalkit qrels judge`` measured them ("" when not recorded)."""
        b = self.pool_auroc
        if "judge" not in b:
            return ""
        return (f"AUROC for gain ≥ 2 on {int(b.get('pages', 0))} held-out graded pool pages: the judge "
                f"{_fmt(b['judge'])}, the stopping estimate's prior {_fmt(b.get('prior', math.nan))}, "
                f"unjudged = 0 {_fmt(b.get('unjudged = 0', math.nan))}")

    @property
    def refused(self) -> dict[str, str]:
        """Class -> why the judge is refused for it (the person grades it)."""
        return {c: v.removeprefix("refused: ") for c, v in self.verdicts.items() if v.startswith("refused")}

    def table(self) -> pd.DataFrame:
        """The agreement with readable column names and each class's verdict, the trap class's distractor
        pages on their own row beneath it."""
        t = self.agreement.rename(columns=COLUMNS)
        return t.assign(verdict=[self.verdicts.get(str(c), "") for c in t.index])

    def identity_line(self) -> str:
        return (f"judge {self.identity[:16]} ({self.model}): {self.trained}; predictions {self.predictions} "
                f"(sha256 {self.sha256[:16]})")

    def summary(self) -> str:
        """One line: how far the judge agrees with the person overall, and where it is refused."""
        if "all" in self.agreement.index:
            a = self.agreement.loc["all"]
            overall = (f"on {int(a['queries'])} queries it did not train on: AUROC for gain ≥ 2 "
                       f"{_fmt(a['auroc_ge2'])}, κ {_fmt(a['kappa'])}, calibration error {_fmt(a['ece_ge2'])}")
        else:
            overall = "no agreement measured"
        accepted = ", ".join(c for c, v in self.verdicts.items() if v == "accepted")
        refused = f"refused for {', '.join(self.refused)} (the person grades these)" if self.refused else \
            "refused for no class"
        return f"{overall}; {refused}; {'accepted for ' + accepted if accepted else 'accepted for no class'}"

    def refusals(self) -> list[str]:
        """Each class's verdict in words."""
        return [f"{c}: refused, {why}" if c in self.refused else f"{c}: accepted"
                for c, why in ((c, self.refused.get(c, "")) for c in self.verdicts)]


def _fmt(v: object) -> str:
    return "—" if not isinstance(v, (int, float)) or math.isnan(v) else f"{v:.3f}"


def read(predictions: Path | str) -> JudgeRecord | None:
    """The record of the judge whose predictions are at ``predictions`` (its judge.json beside it); None
    when there is no judge.json (predictions made elsewhere say nothing of their agreement)."""
    path = Path(predictions)
    meta = path.parent / META
    if not meta.exists():
        return None
    try:
        d = json.loads(meta.read_text(encoding="utf-8"))
        rows = pd.DataFrame(d["agreement"])
        agreement = rows.set_index("class")[[c for c in COLUMNS if c in rows.columns]].astype(float)
        spec = d.get("spec", {})
        model = f"{spec.get('model', '?')}+{spec.get('calibration', '?')}, seed {spec.get('seed', '?')}"
        verdicts = {str(k): str(v) for k, v in d["verdicts"].items()}
        pool = {str(k): float(v) if v is not None else math.nan for k, v in d.get("auroc_ge2_pool", {}).items()}
        return JudgeRecord(str(path), sha256(path), str(d["judge"]), model, str(d.get("trained", "")),
                           str(d.get("command", "")), agreement, verdicts, pool)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise JudgeRecordError(f"{meta}: not a judge record evalkit can read ({type(e).__name__}: {e})") from None


def in_results(results_dir: Path | str) -> JudgeRecord | None:
    """The judge ``evalkit qrels judge FILE --results DIR`` wrote into ``results_dir`` (None: none)."""
    path = Path(results_dir) / FOLDER / PREDICTIONS
    return read(path) if path.exists() else None


def refused_classes(predictions: Path | str) -> tuple[str, ...]:
    """The classes the judge of ``predictions`` is refused for, by its record; none without a readable one
    (the gate still runs: a record is what `evalkit qrels judge` adds, not what a gate needs)."""
    try:
        rec = read(predictions)
    except JudgeRecordError:
        return ()
    return tuple(rec.refused) if rec else ()

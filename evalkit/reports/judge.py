"""The report's section on the local judge (docs/judge.md): when the run holds ``judge/predictions.parquet``
(written by ``evalkit qrels judge FILE --results DIR``), who the judge is (sha256, model, what it trained
on), how far it agrees with the person per class on grades it did not train on (the trap class's distractor
pages on their own row), and, in words, the classes it is refused for and why."""
from __future__ import annotations

import pandas as pd
from pandas.io.formats.style import Styler

from .. import escape as esc
from ..autojudge import record
from ..display import Markdown
from ..results import Results
from .tables import styled

ABSENT = ("_No judge in this run: `evalkit qrels judge FILE --results DIR` writes one into `DIR/judge/` "
          "(see docs/judge.md)._")


def judge_overview(results: Results) -> Markdown:
    """Who the judge is and, in words, where it is refused and accepted."""
    rec = record.in_results(results.path)
    if rec is None:
        return Markdown(ABSENT)
    out = [esc.markdown_fill("**Judge** {id!c} ({model}): {trained}. Predictions {path!c}, sha256 {sha!c}: "
                             "the sha256 a gate verdict decided with this judge names.", id=rec.identity[:16],
                             model=rec.model, trained=rec.trained, path=rec.predictions, sha=rec.sha256)]
    if rec.command:
        out.append(esc.markdown_fill("Made with {cmd!c}.", cmd=rec.command))
    if line := rec.against_baselines():
        out += ["", esc.markdown_fill("{line}.", line=line)]
    if rec.refused:
        out += ["", "**Refused** (the person grades these classes; bounds stated in docs/judge.md before "
                    "measuring):", ""]
        out += [esc.markdown_fill("- {cls}: {why}", cls=c, why=why) for c, why in rec.refused.items()]
    accepted = [c for c, v in rec.verdicts.items() if v == "accepted"]
    out += ["", esc.markdown_fill("**Accepted** for: {classes}.", classes=", ".join(accepted)) if accepted
            else "**Accepted** for no class."]
    return Markdown("\n".join(out))


def judge_agreement(results: Results) -> pd.DataFrame | None:
    """Per class, the judge's agreement with the person on grades it did not train on, and its verdict."""
    rec = record.in_results(results.path)
    return None if rec is None else rec.table()


def judge_agreement_styled(results: Results) -> Styler | None:
    """The agreement table styled; None (the notebook shows nothing) where the run has no judge, which
    :func:`judge_overview` has said just above."""
    t = judge_agreement(results)
    if t is None:
        return None
    counts = [c for c in ("queries", "graded pages") if c in t.columns]
    return styled(t.style.format(precision=2, na_rep="—", escape="html")
                  .format("{:.0f}", subset=counts, na_rep="—"))

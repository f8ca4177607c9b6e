"""What the judging workbench shows beside the pages when it is given a run to gate: the local judge's record
(its agreement per class and where it is refused), the judge's opinion of a page *once the person has graded
it*, and "can I decide yet?" (:class:`evalkit.judged.Decider`), computed again after a change to the file's
grades, never on a keystroke that changes none.

Blind by construction: the judge's per-page opinions stay here, and :meth:`Beside.opinion` gives one only
for a page the file holds a grade of, so nothing of the judge's view of a page reaches the view first.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import comparison, estimates, judged, rules
from .autojudge import agreement, record
from .qrels import QuerySet


class Beside:
    """The judge and the gate beside one workbench; ``decider`` answers the gate of two arms of a run."""

    def __init__(self, decider: judged.Decider):
        self.decider = decider
        self.record = record.read(decider.predictions)
        table = decider.table
        self._opinions = {(str(q), str(d), int(p)): (float(a), float(b), float(c)) for q, d, p, a, b, c in
                          zip(*(table[k] for k in estimates.COLUMNS), strict=True)}
        self._text: str | None = None  # the file's text the decision below was computed from
        self._decision: dict[str, Any] | None = None
        self.judge = self._judge_view()

    def _judge_view(self) -> dict[str, Any]:
        """The judge as the view shows it: who it is, its agreement in one line, each class's verdict."""
        path = self.decider.predictions
        if self.record is None:
            return {"identity": f"judge {path} (sha256 {record.sha256(path)[:16]})",
                    "summary": f"no agreement recorded: {record.META} is not beside the predictions",
                    "classes": []}
        return {"identity": self.record.identity_line(), "summary": self.record.summary(),
                "classes": self.record.refusals()}

    def decide(self, text: str, query_set: Callable[[], QuerySet | None]) -> dict[str, Any]:
        """"Can I decide yet?" for the file whose text is ``text``: computed when the text changed since
        the last answer (a grade, an undo, a pool, a hand edit), else the last answer."""
        if text != self._text:
            self._decision, self._text = self._decided(query_set()), text
        assert self._decision is not None
        return self._decision

    def _decided(self, qs: QuerySet | None) -> dict[str, Any]:
        if qs is None:
            return {"error": "no query in the file yet"}
        try:
            d = self.decider.decide(qs)
        except (comparison.CompareError, rules.RulesError, ValueError, KeyError) as e:
            return {"error": f"the gate cannot be evaluated: {e}"}
        return {"status": d.status, "text": d.text(), "rules": [list(r) for r in d.rules], "grade": d.grade,
                "next": d.next}

    def opinion(self, qid: str, doc: str, page: int, gain: int | None) -> str:
        """The judge's opinion of a page, in words, for a page the person has graded (``gain`` given);
        "" before that, and for a page the judge did not predict."""
        p = self._opinions.get((qid, doc, page)) if gain is not None else None
        if p is None:
            return ""
        likely = int(agreement.grade(np.array(p))[0])
        return (f"the judge: most likely grade {likely}{' (as yours)' if likely == gain else ''}; "
                f"P(gain ≥ 1) {p[0]:.2f}, P(gain ≥ 2) {p[1]:.2f}, P(gain = 3) {p[2]:.2f}")


def beside(results: Path | str | None, baseline: str | None, candidate: str | None,
           predictions: Path | str | None = None, rules_path: Path | str | None = None) -> Beside | None:
    """A :class:`Beside` for ``results`` (None without it); the predictions default to the ones
    ``evalkit qrels judge FILE --results RESULTS`` writes."""
    if results is None:
        return None
    if not baseline or not candidate:
        raise comparison.CompareError("results given: name the baseline and the candidate arm to gate")
    preds = Path(predictions) if predictions else Path(results) / record.FOLDER / record.PREDICTIONS
    if not preds.exists():
        raise comparison.CompareError(f"{preds}: no judge's predictions (`evalkit qrels judge FILE --results "
                                      f"{results}` writes them)")
    return Beside(judged.Decider(results, baseline, candidate, preds, rules_path))

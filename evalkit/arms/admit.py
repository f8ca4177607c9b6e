"""admit: any arm, built-in or plug-in, turned into one that may say "no evidence".

``admit(arm=hybrid(keyword=global-index),policy=semantic,threshold=0.34)`` asks the wrapped arm, asks the
policy (:mod:`evalkit.arms.policies`) for a confidence, and refuses below the threshold with a reason a
person can read ("no page contains 'pgfplots'; best semantic match 0.21 < 0.34"). Admission is kept apart
from ranking: when it answers, the hits are the wrapped arm's, unchanged. Answers and refusals both record
the confidence, so the default threshold (-inf: never refuse, only record) gives what ``evalkit refusal
calibrate`` needs to choose a threshold on one query set before it is used on another.
"""
from __future__ import annotations

import math
import sys
from dataclasses import replace

from ..records import Answer
from . import Arm, ArmError, make, validate
from .policies import make_policy
from .policies import validate as validate_policy


class AdmitArm(Arm):
    name = "admit"
    defaults = {"arm": "", "policy": "", "threshold": -math.inf}

    @classmethod
    def resolve(cls, params):
        """Its own parameters, and the nested arm and policy specs too: a misspelt policy stops a run
        before anything is written, like a misspelt arm."""
        resolved = super().resolve(params)
        for key, check in (("arm", validate), ("policy", validate_policy)):
            if not resolved[key]:
                raise ArmError(f"arm 'admit' needs {key}=SPEC, e.g. admit(arm=hybrid,policy=semantic,threshold=0.3)")
            check(resolved[key])
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.inner = make(self.params["arm"], corpus, store)
        self.policy = make_policy(self.params["policy"], corpus, store)
        # canonical names inside the label, so one arm has one label however its spec was written
        self.params.update(arm=self.inner.label, policy=self.policy.label)
        self.policy.bind(self.inner)  # a policy that learns from the arm's rankings (judge) keeps it

    def search(self, query: str, k: int) -> Answer:
        result = self.inner.search(query, max(k, self.policy.depth))
        verdict = self.policy.assess(query, result)
        c, threshold = verdict.confidence, self.params["threshold"]
        if result.refused or not result.hits:
            why = result.reason or f"{self.inner.label} found nothing"
        elif c < threshold:  # -inf is a veto (names): its evidence is the whole reason
            why = "" if c == -math.inf else f"{verdict.measure} {c:.3g} < {threshold:.3g}"
        else:
            return replace(result, hits=result.hits[:k], confidence=c)
        return Answer.refusal("; ".join(p for p in (verdict.evidence, why) if p), c)

    def prepare(self) -> None:
        self.inner.prepare()
        self.policy.prepare()
        note = self.policy.note(self.params["threshold"])
        if note:
            print(note, file=sys.stderr)

    def describe(self) -> dict:
        admission = self.policy.describe()
        return {**self.inner.describe(), **({"admission": admission} if admission else {})}

    def close(self) -> None:
        self.inner.close()

"""The plain records that flow between evalkit's stages (all frozen, all hashable)."""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ids

CLASSES = ("needle", "spread", "trap", "described", "abstain")


@dataclass(frozen=True)
class Document:
    """One PDF of a corpus. ``name`` is the document id used everywhere; ``sha256`` keys every cache."""

    name: str
    sha256: str
    pages: int
    source: str = ""
    bytes: int = 0


@dataclass(frozen=True)
class Page:
    """One page's extracted text; ``number`` is 1-based and physical (PyMuPDF index + 1)."""

    doc: str
    number: int
    text: str

    @property
    def id(self) -> str:
        return page_id(self.doc, self.number)


def page_id(doc: str, page: int) -> str:
    """The page id used in TREC files: ``<doc>#<page>``, the name encoded by :func:`evalkit.ids.encode`
    (so a space or ``#`` in a file name cannot split the field)."""
    return f"{ids.encode(doc)}#{page}"


def split_page_id(pid: str) -> tuple[str, int]:
    doc, _, page = pid.rpartition("#")
    return ids.decode(doc), int(page)


@dataclass(frozen=True)
class Judgment:
    """A judged page. ``gain`` 0 records a page that was read and does not answer (judged non-relevant),
    so pooled pages found wanting are told apart from pages nobody read."""

    doc: str
    page: int
    gain: int
    evidence: str = ""


ABSTAIN_KINDS = ("absent-name", "uncovered-need", "near-miss", "off-domain")


@dataclass(frozen=True)
class Query:
    """A graded query. ``distractor`` (traps) names the lexically similar document that does not answer;
    ``kind`` (abstain) says why nothing answers, one of :data:`ABSTAIN_KINDS`."""

    id: str
    cls: str
    text: str
    judgments: tuple[Judgment, ...] = ()
    notes: str = ""
    distractor: str = ""
    kind: str = ""

    @property
    def relevant(self) -> tuple[Judgment, ...]:
        """The judgments with gain > 0 (trec_eval's relevance level 1)."""
        return tuple(j for j in self.judgments if j.gain > 0)

    @property
    def answerable(self) -> bool:
        return self.cls != "abstain"


@dataclass(frozen=True)
class Hit:
    doc: str
    page: int
    score: float


@dataclass(frozen=True)
class Chunk:
    """A passage a chunk retriever returns, placed by the first of: ``page`` (1-based, physical), a
    character span ``start``..``end`` of the document's text (its page texts joined by ``"\\f"``, as
    :meth:`evalkit.api.OpenCorpus.text` gives it), or its ``text`` alone, found on the pages. ``pages`` are
    the physical pages evalkit mapped it to (:mod:`evalkit.answers`); a missing ``score`` ranks by order."""

    doc: str
    text: str = ""
    score: float | None = None
    page: int | None = None
    start: int | None = None
    end: int | None = None
    pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Answer:
    """An arm's answer to one query: ranked hits, or a refusal with a reason (a refusal is data), or an
    error with its message (the arm failed to answer: never a refusal, scored 0 where a ranking is due).

    ``hits`` are in the arm's total order; a hit's ``score`` is the arm's primary score, which may tie
    with its neighbours (the order inside a tied band is the arm's tie-break, and is audited as such).
    ``confidence`` (higher = more sure the corpus answers) is set by an admission policy
    (:mod:`evalkit.arms.admit`) on answers and refusals alike, so a threshold can be chosen afterwards.
    """

    hits: tuple[Hit, ...] = ()
    refused: bool = False
    reason: str = ""
    # keyword-only: added after the first three, so no positional call can put one in the other's place
    confidence: float | None = field(default=None, kw_only=True)
    error: str = field(default="", kw_only=True)
    # the chunks a chunk retriever returned, in its order, each with the pages it was mapped to
    chunks: tuple[Chunk, ...] = field(default=(), kw_only=True)

    @classmethod
    def refusal(cls, reason: str, confidence: float | None = None) -> "Answer":
        return cls(refused=True, reason=reason, confidence=confidence)


def __getattr__(name: str) -> type:
    """``Result``, the old name of :class:`Answer` (beside ``ek.Results``, a results directory), for one release."""
    if name == "Result":
        import warnings

        warnings.warn("evalkit's Result is deprecated and goes in the next release: it is Answer now (an arm's "
                      "answer to one query; Results is a results directory)", DeprecationWarning, stacklevel=2)
        return Answer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

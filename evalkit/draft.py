"""Query drafts from the corpus itself, no language model: candidates an assessor edits, never accepts blind.

Four sources, one per class, each draft saying where it came from:

- **needle**: a document's distinctive terms (frequent in it, in few documents of the corpus, rare in
  English by ``wordfreq``'s Zipf frequency) with the page that holds most of them;
- **trap**: a term several documents use often, in contexts that share few words (different roles), with
  the other document named as the distractor;
- **spread**: a section heading or caption that several documents carry;
- **abstain**: names frequent in a neighbouring corpus that no page here holds (``absent-name``, or
  ``off-domain`` when written unlike this corpus's names), and headings there whose words all occur here
  but never on one page (``uncovered-need``).

Entry point: ``draft(pages, neighbours=None, per_class=30) -> list[Draft]``; ``to_toml(drafts, ...)``
writes the file an assessor edits (``qrels/drafts/<corpus>.toml``, beside the query sets, never in them:
its tables are ``[[draft]]``, which :func:`evalkit.qrels.load` does not read).
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from wordfreq import zipf_frequency

from .text import STOPWORDS, content_words, names, snippet

Pages = Mapping[str, Sequence[str]]  # document name -> its page texts, page 1 first

CLASSES = ("needle", "trap", "spread", "abstain")
# A term a reader would name: a TeX command, a call, or a word of four or more letters (dots, digits,
# hyphens and underscores inside, as R and package names have them), in any alphabet: ASCII letters only
# cut "Économique" to "conomique".
_TERM = re.compile(r"\\[A-Za-z@]{3,}|[^\W\d_][\w.]*\(\)|[^\W\d_][\w.-]*[^\W_]")
_HEADING = re.compile(r"^\s*(?:(?:\d+\.)*\d+\.?|(?:Figure|Table|Fig\.)\s+\d+[.:])\s+([A-Z][^\n]{3,70}?)\s*$",
                      re.MULTILINE)
_LEADER = re.compile(r"(\s*\.){2,}.*$|\s+\d+$|[\s,;:.]+$")  # table-of-contents dots, page numbers, stray marks
_NUMBER = re.compile(r"^[A-Z]?(\.?\d+)+\.?\s+")
# Headings every manual has: they say nothing of a topic two manuals share
BOILERPLATE = frozenset(["abstract", "acknowledgment", "acknowledgement", "bundle", "caveat", "change", "contents",
                         "copyright", "history", "identification", "implementation", "index", "installation",
                         "interface", "introduction", "license", "licence", "option", "overview", "package",
                         "parameter", "preface", "reference", "requirement", "summary", "usage", "user", "variable",
                         "version"])
_INTERNAL = re.compile(r"@|__|^v?\d")  # internal macros (\XKV@tempa, l__pdf_x), versions (v2.14)
RARE = 3.0       # Zipf frequency in English at or below which a word is rare (about 1 per million words)
MIN_COUNT = 3    # occurrences in a document for a term to be one of its own


@dataclass(frozen=True)
class Draft:
    """A candidate query: its class, a question to edit, where it came from, the pages to read first
    (candidates, not judgments), and a trap's distractor or an abstain query's kind."""

    id: str
    cls: str
    text: str
    source: str
    pages: tuple[tuple[str, int], ...] = ()
    distractor: str = ""
    kind: str = ""
    context: str = ""


def english_zipf(term: str) -> float:
    """How common a term is in English (wordfreq's Zipf scale, 0 = unknown, 7 = "the")."""
    return zipf_frequency(term.lstrip("\\").rstrip("()").replace("_", " "), "en")


def terms(text: str) -> list[str]:
    return [t for t in _TERM.findall(text) if len(t) >= 4 and t.lower() not in STOPWORDS]


@dataclass(frozen=True)
class Index:
    """Term counts per document and per page, and in how many documents each term occurs."""

    per_doc: dict[str, Counter]
    per_page: dict[tuple[str, str], Counter]  # (term, doc) -> page -> count
    df: Counter
    docs: int

    @classmethod
    def build(cls, pages: Pages) -> Index:
        per_doc: dict[str, Counter] = {}
        per_page: dict[tuple[str, str], Counter] = defaultdict(Counter)
        for doc, texts in pages.items():
            c: Counter = Counter()
            for number, text in enumerate(texts, 1):
                for t in terms(text):
                    c[t] += 1
                    per_page[(t, doc)][number] += 1
            per_doc[doc] = c
        df = Counter(t for c in per_doc.values() for t in c)
        return cls(per_doc, dict(per_page), df, len(pages))

    def best_page(self, term: str, doc: str) -> int:
        """The page of ``doc`` holding ``term`` most often (the earliest of equals): where it is shown."""
        counts = self.per_page[(term, doc)]
        return min(counts, key=lambda p: (-counts[p], p))


def stem(doc: str) -> str:
    return PurePath(doc).stem


def question(term: str, doc: str) -> str:
    """A question to edit, shaped by how the term is written."""
    if term.startswith("\\"):
        return f"{stem(doc)}: what does {term} do, and how do I use it?"
    if term.endswith("()"):
        return f"What does {term} do, and which arguments does it take?"
    return f"{stem(doc)}: what is {term}, and how do I use it?"


def _public(term: str, doc: str) -> bool:
    """A term a reader would ask about: not an internal macro or a version, not the document's own name."""
    bare = term.lstrip("\\").rstrip("()").lower()
    return not _INTERNAL.search(term.lstrip("\\")) and bare not in stem(doc).lower()


def needles(pages: Pages, index: Index, n: int) -> list[Draft]:
    """Each document's most distinctive terms (tf x idf x English rarity): the best of every document first
    (documents in order of their best score), then the second best, so the drafts spread over the corpus
    (a corpus of few long documents gives several per document)."""
    quota = math.ceil(n / max(1, len(index.per_doc)))
    best: list[tuple[int, float, str, str]] = []
    for doc, counts in index.per_doc.items():
        scored = sorted(((tf * math.log(index.docs / index.df[t]) * (1 + RARE - z), t)
                         for t, tf in counts.items()
                         if tf >= MIN_COUNT and index.df[t] <= 2 and _public(t, doc)
                         and (z := english_zipf(t)) <= RARE),
                        reverse=True)
        best += [(i, -score, doc, term) for i, (score, term) in enumerate(scored[:quota])]
    out: list[Draft] = []
    for _, _, doc, term in sorted(best)[:n]:
        page = index.best_page(term, doc)
        out.append(Draft(f"needle-{len(out) + 1:02d}", "needle", question(term, doc),
                         f"distinctive term {term!r}: {index.per_doc[doc][term]} times in {doc}, in "
                         f"{index.df[term]} of {index.docs} documents, Zipf {english_zipf(term):.1f} in English; "
                         f"most often on page {page}", ((doc, page),),
                         context=snippet(pages[doc][page - 1], term.lstrip("\\"))))
    return out


def _context(pages: Pages, index: Index, term: str, doc: str, width: int = 6) -> Counter:
    """The words around ``term`` in ``doc`` (``width`` each side): how the document uses it."""
    around: Counter = Counter()
    for page in index.per_page[(term, doc)]:
        tokens = [t.lower() for t in terms(pages[doc][page - 1])]
        for i, t in enumerate(tokens):
            if t == term.lower():
                around.update(w for w in tokens[max(0, i - width): i + width + 1] if w != t)
    return around


def _overlap(a: Counter, b: Counter) -> float:
    """Cosine similarity of two context counts."""
    dot = sum(a[w] * b[w] for w in a.keys() & b.keys())
    norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def traps(pages: Pages, index: Index, n: int, max_overlap: float = 0.15) -> list[Draft]:
    """Terms two to four documents use often (at least MIN_COUNT times each) in contexts whose cosine
    similarity is below ``max_overlap``: the same word in different roles. The document using it most is
    the answer, the other the distractor."""
    found: list[tuple[float, str, str, str, float]] = []
    for term, df in index.df.items():
        if not 2 <= df <= 4 or term.isupper() or _INTERNAL.search(term) or english_zipf(term) > 4.5:
            continue
        users = sorted((d for d in index.per_doc if index.per_doc[d][term] >= MIN_COUNT),
                       key=lambda d: (-index.per_doc[d][term], d))
        if len(users) < 2:
            continue
        a, b = users[:2]
        sim = _overlap(_context(pages, index, term, a), _context(pages, index, term, b))
        if sim < max_overlap:
            found.append((min(index.per_doc[a][term], index.per_doc[b][term]) * (1 - sim), term, a, b, sim))
    out: list[Draft] = []
    used: set[tuple[str, str]] = set()
    for _, term, a, b, sim in sorted(found, reverse=True):
        if (a, b) in used or len(out) == n:
            continue
        used.add((a, b))
        page = index.best_page(term, a)
        out.append(Draft(f"trap-{len(out) + 1:02d}", "trap", question(term, a),
                         f"shared term {term!r}: {index.per_doc[a][term]} times in {a}, {index.per_doc[b][term]} "
                         f"in {b}; the words around it agree at cosine {sim:.2f} only", ((a, page),), distractor=b,
                         context=snippet(pages[a][page - 1], term.lstrip("\\"))))
    return out


def headings(pages: Pages) -> dict[frozenset, list[tuple[str, int, str]]]:
    """Numbered section headings and figure/table captions, grouped by their content words."""
    out: dict[frozenset, list[tuple[str, int, str]]] = defaultdict(list)
    for doc, texts in pages.items():
        for number, text in enumerate(texts, 1):
            for m in _HEADING.finditer(text):
                title = _LEADER.sub("", _NUMBER.sub("", m.group(1).strip()))
                key = frozenset(content_words(title))
                if 1 <= len(key) <= 4 and not any(w.isdigit() for w in key):
                    out[key].append((doc, number, title))
    return out


def spreads(pages: Pages, n: int, max_docs: int = 8) -> list[Draft]:
    """Headings or captions that two to ``max_docs`` documents carry (more is boilerplate: Introduction),
    with at least one word less common than everyday English (Zipf < 4.5): the topic is spread over them."""
    found = []
    for key, where in headings(pages).items():
        docs = sorted({d for d, _, _ in where})
        if 2 <= len(docs) <= max_docs and min(english_zipf(w) for w in key) < 4.5 and not key <= BOILERPLATE:
            found.append((len(docs), sorted(key), where, docs))
    out: list[Draft] = []
    for ndocs, _words, where, docs in sorted(found, key=lambda f: (-f[0], f[1]))[:n]:
        title = where[0][2]
        first = {d: (d, p) for d, p, _ in reversed(where)}
        out.append(Draft(f"spread-{len(out) + 1:02d}", "spread",
                         f"{title}: which manuals cover it, and what do they say?",
                         f"heading or caption {title!r} in {ndocs} documents: {', '.join(docs)}",
                         tuple(first[d] for d in docs)))
    return out


def _vocabulary(pages: Pages) -> tuple[set[str], set[str]]:
    """Every word (lower-case) and every name (as written) on any page."""
    words: set[str] = set()
    named: set[str] = set()
    for texts in pages.values():
        for text in texts:
            words.update(t.lower() for t in terms(text))
            named.update(names(text))
    return words, named


def _shape(name: str) -> str:
    return "command" if name.startswith("\\") else "call" if name.endswith("()") else "word"


def abstains(pages: Pages, neighbours: Pages | None, n: int) -> list[Draft]:
    """From a neighbouring corpus: its frequent names that no page here holds, and its headings whose
    words all occur here but never together on one page. Half of ``n`` each; none without neighbours."""
    if not neighbours:
        return []
    words, _ = _vocabulary(pages)
    shapes = Counter(_shape(t) for texts in pages.values() for text in texts for t in terms(text))
    usual = {s for s, c in shapes.items() if c >= 0.05 * sum(shapes.values())}
    held: Counter = Counter()
    for texts in neighbours.values():
        held.update({t for text in texts for t in terms(text)
                     if t.lower() not in words and (t.startswith("\\")
                                                    or any(ch.isupper() or ch.isdigit() for ch in t[1:]))})
    out: list[Draft] = []
    for name, docs in held.most_common(n // 2):
        kind = "absent-name" if _shape(name) in usual and _shape(name) != "word" else "off-domain"
        out.append(Draft(f"abstain-{len(out) + 1:02d}", "abstain", f"How do I use {name}?",
                         f"name {name!r}: in {docs} documents of the neighbouring corpus, on no page here", kind=kind))
    page_words = [{t.lower() for t in terms(text)} for texts in pages.values() for text in texts]
    for where in sorted(headings(neighbours).values(), key=len, reverse=True):
        if len(out) >= n:
            break
        title = where[0][2]
        ws = {w.lower() for w in terms(title)}
        if len(ws) >= 2 and ws <= words and not any(ws <= p for p in page_words):
            out.append(Draft(f"abstain-{len(out) + 1:02d}", "abstain", f"{title}: how do I do that here?",
                             f"heading {title!r} of the neighbouring corpus ({where[0][0]}): every word of it is "
                             "in this corpus, never all on one page", kind="uncovered-need"))
    return out


def draft(pages: Pages, neighbours: Pages | None = None, per_class: int = 30) -> list[Draft]:
    """Up to ``per_class`` drafts of each class (abstain only with ``neighbours``)."""
    index = Index.build(pages)
    return [*needles(pages, index, per_class), *traps(pages, index, per_class), *spreads(pages, per_class),
            *abstains(pages, neighbours, per_class)]


def _toml(value) -> str:
    """A TOML value: strings as JSON strings (a subset of TOML's basic strings), page lists as inline tables."""
    if isinstance(value, tuple):
        return "[" + ", ".join(f"{{ doc = {_toml(d)}, page = {p} }}" for d, p in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def to_toml(drafts: Iterable[Draft], corpus: str, header: Sequence[str] = ()) -> str:
    """The drafts file: a header of comments, then one ``[[draft]]`` table per draft."""
    lines = [*(f"# {h}".rstrip() for h in header), f'corpus = {_toml(corpus)}', ""]
    for d in drafts:
        lines += ["[[draft]]", f"id = {_toml(d.id)}", f"class = {_toml(d.cls)}", f"text = {_toml(d.text)}",
                  f"source = {_toml(d.source)}"]
        lines += [f"{k} = {_toml(v)}" for k, v in (("pages", d.pages), ("distractor", d.distractor), ("kind", d.kind),
                                                   ("context", d.context)) if v]
        lines.append("")
    return "\n".join(lines)


HEADER = (
    "Query DRAFTS for the {corpus} corpus, made by `evalkit qrels draft --corpus {corpus}` from the corpus itself",
    "(no language model). NOT a query set: no evalkit command reads a query from [[draft]] tables. An assessor edits a "
    "draft",
    "into a question, reads its pages, judges them, and only then copies it into qrels/{corpus}.toml; never accept",
    "one blind. `source` says where each came from; `pages` are the pages to read first, not judgments.",
)


def write(drafts: Sequence[Draft], corpus: str, out: Path, force: bool = False) -> None:
    """Write the drafts file ``out`` with its header; refused (ValueError) when ``out`` exists, unless ``force``:
    it may hold an assessor's edits."""
    if out.exists() and not force:
        raise ValueError(f"{out} exists (it may hold an assessor's edits): choose another --out or pass --force")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_toml(drafts, corpus, [h.format(corpus=corpus) for h in HEADER]))

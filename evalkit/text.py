"""Text normalisation shared by evidence checks, query analysis and snippets."""
from __future__ import annotations

import re
import unicodedata

# A small English stop list: function words, and the verbs of asking, that carry no topic in a question.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers him his how i if in into is it its itself just me more most my no nor not of off on once
    only or other our out over own same she should so some such than that the their them then there these they
    this those through to too under until up very was we were what when where which while who whom why will
    with would you your yours get use using want make way something thing things one ones instead without
    need needs possible""".split()
)

# The workbench's passage display (judging.passages): a page's PASSAGES best windows of PASSAGE_WORDS words,
# a few lines each, read in seconds (short excerpts are judged as well as whole documents, and faster:
# Rahbariasl, Waterloo 2018); the reading model of person-hours (effort.reading_model) reads as many words.
PASSAGE_WORDS = 40
PASSAGES = 2

_HYPHEN_BREAK = re.compile(r"-\s*\n\s*")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def normalize(text: str) -> str:
    """Fold what PDF extraction varies on: ligatures and width forms (NFKC), case, soft hyphens,
    hyphenation at line ends, and runs of white space."""
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").casefold()
    return _SPACE.sub(" ", _HYPHEN_BREAK.sub("", text)).strip()


def contains(page_text: str, quote: str) -> bool:
    """True if ``quote`` occurs in ``page_text`` after normalisation (hyphens optional on either side)."""
    page, q = normalize(page_text), normalize(quote)
    return q in page or q.replace("-", "") in page.replace("-", "")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits), in order."""
    return _WORD.findall(normalize(text))


def content_words(text: str) -> set[str]:
    """Words of three or more characters that are not stop words, with a plural ``s`` folded."""
    return {w.removesuffix("s") for w in words(text) if len(w) >= 3 and w not in STOPWORDS}


def as_written(text: str, folded: set[str]) -> list[str]:
    """The words of ``text`` whose folded form (:func:`content_words`) is in ``folded``, as ``text`` writes
    them (lower-cased), sorted: what a message quotes back to the writer ("walrus", not "walru")."""
    return sorted({w for w in words(text) if content_words(w) & folded})


# What a query writes as a name rather than as prose: a TeX command (\addplot), a function call (across(),
# group_by()), a mixed-case identifier (actionButton, TikZ, RStudio), letters run together with digits
# (ggplot2, algorithm2e), or a capitalised word inside a sentence (a product: Overleaf, Pygments).
_NAME = re.compile(r"""(?<![\w:])\\[A-Za-z@]+        # not a step of a Windows path (C:\Users\me)
    | \b[A-Za-z][\w.]*(?=\()
    | \b(?=\w*[a-z])[A-Za-z]\w*[A-Z]\w*
    | \b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]+\b
    | (?<![.?!:]\s)(?<=[\s("'“‘])[A-Z][a-z]+\b""", re.X)


def names(text: str) -> list[str]:
    """The things a query names, as written (``\\addplot``, ``across``, ``TikZ``, ``ggplot2``, ``Overleaf``),
    in order and without repeats. A word written like this is the reader naming a command, package or
    program, not describing a need in their own words: if no page holds it, the corpus does not cover it,
    whereas a plain English word missing from the corpus says little (a description uses its own words).
    Not counted: sentence-initial capitals, all-capital acronyms, lower-case words (``tcolorbox`` cannot
    be told from prose by its spelling) and snake_case words not written as a call, which are as often the
    reader's own (``my_long_variable_name``) as a name the corpus should know. A backslash is dropped."""
    return list(dict.fromkeys(m.group(0).lstrip("\\") for m in _NAME.finditer(text)))


_LOWER_WORD = re.compile(r"(?<![\\\w])[a-z]{3,}(?![\w(])")


def rare_words(text: str, frequency, below: float) -> list[str]:
    """Lower-case words of ``text`` (letters only, three or more, not stop words) whose ``frequency`` (a
    Zipf value: log10 of occurrences per billion words of English, as :func:`wordfreq.zipf_frequency`
    gives) is below ``below``: ``qrcode``, ``xgboost``, ``tikz``. A reader who writes one is naming a
    package or program (or misspelling a word), not describing a need in plain English."""
    found = (w for w in _LOWER_WORD.findall(text) if w not in STOPWORDS)
    return [w for w in dict.fromkeys(found) if frequency(w) < below]


def snippet(text: str, query: str, width: int = 160) -> str:
    """A one-line excerpt of ``text`` around the first query word it contains (else its start)."""
    flat = _SPACE.sub(" ", text).strip()
    low = flat.casefold()
    hits = [i for w in words(query) if w not in STOPWORDS and (i := low.find(w)) >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    out = flat[start:start + width]
    return ("…" if start else "") + out + ("…" if start + width < len(flat) else "")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside parentheses, so arm specs and labels can be listed and nested:
    ``"keyword,hybrid(keyword=global-index,depth=5)"`` is two items."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in [*parts, text[start:]] if p.strip()]

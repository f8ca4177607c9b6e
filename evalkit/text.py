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

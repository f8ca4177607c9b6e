"""Strings from data made inert for each place they are shown: one function per output kind.

Names, ids, texts, descriptions, messages and paths come from files other people wrote (query sets, locks,
MCP definitions, manifests, PDFs). Each output has its own live syntax, so each gets its own escaping,
applied where the string enters the output and nowhere else:

- :func:`html`: HTML text and attribute values (``<``, ``>``, ``&`` and quotes).
- :func:`markdown`: Markdown text, also inside a table cell: no HTML block, link, emphasis, heading, math
  or line break can be formed, and a cell cannot be split.
- :func:`code`: a Markdown code span (names shown as ``code``), whatever backticks the name holds.
- :func:`markdown_fill`: a line of evalkit's own Markdown with values from data in its ``{fields}``, each
  made inert on the way in (the one way a generated Markdown line takes a value it read).
- :func:`xml`: characters XML 1.0 cannot carry (ElementTree escapes markup but writes NUL and ESC as is,
  which makes the file unreadable).
- :func:`terminal`: control characters (escape sequences, carriage returns, bidirectional overrides)
  shown as ``\\x1b``, ``\\u202e``, so nothing from data moves the cursor, recolours or reorders a line.
- :func:`figure`: matplotlib text: ``$`` starts mathtext (an unbalanced one stops the figure), and with
  ``text.usetex`` every TeX special character is live.
"""
from __future__ import annotations

import html as _html
import re
import string
import sys
import unicodedata
from contextlib import contextmanager

# Unicode's bidirectional controls: they reorder what follows them ("Trojan Source").
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _visible(c: str) -> str:
    return repr(c)[1:-1] if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def _control(c: str) -> bool:
    return c in BIDI or unicodedata.category(c) in ("Cc", "Cs") or c in "\u2028\u2029"


def terminal(s: object, newlines: bool = False) -> str:
    """``s`` with every control character (newlines too, unless ``newlines``) written as a visible escape."""
    return "".join(_visible(c) if _control(c) and not (newlines and c == "\n") else c for c in str(s))


def html(s: object) -> str:
    """``s`` as HTML text or a quoted attribute value."""
    return _html.escape(str(s), quote=True)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~$=])")


def markdown(s: object) -> str:
    """``s`` as literal Markdown text on one line: HTML characters as entities, every other punctuation that
    Markdown or its math extension reads backslash-escaped, line breaks as spaces."""
    text = " ".join(terminal(line) for line in str(s).splitlines())
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_MD_INLINE = re.compile(r"([\\`*_\[\]|$~])")
_MD_BLOCK = re.compile(r"^(?=[#>+*-])")
_MD_ORDERED = re.compile(r"^(\d+)([.)])(?=\s|$)")  # "1. " opens a list; "0.5" does not


def _line_start(text: str) -> str:
    """``text`` that opens a line, with what could open a heading, quote or list there backslashed, and no
    leading spaces: four make a code block, and up to three still open a heading (Markdown shows none)."""
    text = text.lstrip(" ")
    return _MD_ORDERED.sub(r"\1\\\2", _MD_BLOCK.sub("\\\\", text))


def markdown_inline(s: object, line_start: bool = False) -> str:
    """``s`` as literal Markdown text on one line that stays readable in the raw file (generated pages, table
    cells): ``&`` and ``<`` as entities (no tag can open, so ``>`` stays), backslashed only what could open
    emphasis, code, a link, math or a new cell, and, where the text starts a line (``line_start``), a heading,
    quote or list marker."""
    text = " ".join(terminal(line) for line in str(s).splitlines())
    text = _MD_INLINE.sub(r"\\\1", text.replace("&", "&amp;").replace("<", "&lt;"))
    return _line_start(text) if line_start else text


def code(s: object) -> str:
    """``s`` as a Markdown code span on one line (literal in CommonMark, HTML included), fenced by more
    backticks than it holds in a row. Not for table cells (a pipe would split the cell): use :func:`markdown`."""
    text = " ".join(terminal(line) for line in str(s).splitlines()) or " "
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    # a backtick at either end needs a space beside the fence; Markdown strips one space from each end
    pad = " " if "`" in (text[0], text[-1]) or (text[0] == " " and text[-1] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


class _MarkdownFields(string.Formatter):
    """Fills ``{field}``, ``{field:spec}`` and ``{field!c}`` (a code span) with inert Markdown. A spec the
    value cannot take (``.2f`` of a string a hand-edited file holds) shows the value as it is, not a crash."""

    def convert_field(self, value, conversion):
        return _Code(value) if conversion == "c" else super().convert_field(value, conversion)

    def format_field(self, value, format_spec):
        if isinstance(value, _Code):
            return code(value.value)
        try:
            text = format(value, format_spec)
        except (TypeError, ValueError):
            text = str(value)
        return markdown_inline(text)


class _Code:
    def __init__(self, value: object):
        self.value = value


def markdown_fill(template: str, /, *, line_start: bool = False, **values: object) -> str:
    """``template`` (evalkit's text, trusted) with each ``{name}`` filled by ``values[name]`` as inert Markdown
    (:func:`markdown_inline`; ``{name!c}`` as a code span, :func:`code`): a line that quotes a manifest, a bench
    record or a verdict cannot form markup, whatever the file holds. ``line_start``: the text opens a line, where
    a value at its start could open a heading, quote or list (:func:`markdown_inline`)."""
    text = _MarkdownFields().format(template, **values)
    return _line_start(text) if line_start else text


_XML_BAD = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml(s: object) -> str:
    """``s`` with the characters XML 1.0 forbids written as visible escapes (markup is ElementTree's job)."""
    return _XML_BAD.sub(lambda m: _visible(m.group()), str(s))


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                "^": r"\^{}", "_": r"\_", "%": r"\%", "~": r"\~{}"}


def figure(s: object) -> str:
    """``s`` as literal matplotlib text: control characters visible, ``$`` escaped (no mathtext); under
    ``text.usetex`` every TeX special character escaped. Newlines are kept (labels wrap on them)."""
    from matplotlib import rcParams

    text = terminal(s, newlines=True)
    if rcParams["text.usetex"]:
        return "".join(_TEX_SPECIAL.get(c, c) for c in text)
    return text.replace("$", r"\$")


class _Terminal:
    """A text stream that writes control characters from data as visible escapes; newlines pass, and so
    does the carriage return a progress bar starts its line with."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, s: str) -> int:
        head = "\r" if s.startswith("\r") else ""
        self._stream.write(head + terminal(s[len(head):], newlines=True))
        return len(s)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def terminal_streams():
    """Standard output and error escaped with :func:`terminal` while the block runs (a command's output)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Terminal(sys.stdout), _Terminal(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved

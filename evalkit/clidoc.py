"""The CLI reference (docs/cli.md) rendered from ``evalkit.cli``'s argparse parser, so the page cannot say
anything the parser does not: every command and subcommand with its usage, description, arguments, their
help and defaults. ``tests/test_clidoc.py`` fails when the committed page differs from what this renders.

argparse keeps its actions and subcommands in private attributes (``_actions``, ``_SubParsersAction``); they
have been stable since Python 3.2 and are what sphinx-argparse and mkdocs-click-style tools read too.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from .escape import code
from .escape import markdown_inline as markdown

USAGE_WIDTH = 76  # fixed, so the page does not depend on the terminal; what fits the docs theme's code blocks
REGENERATE = "make cli-reference"
_CODE = re.compile(r"(`+)(.+?)\1")


def text(value: object, line_start: bool = False) -> str:
    """Help text as inert Markdown: its code spans kept as code, everywhere else HTML characters escaped and
    what Markdown would read as markup backslashed (:func:`evalkit.escape.markdown_inline`; ``line_start``:
    the text begins a paragraph)."""
    s, out, at = str(value), [], 0
    for m in _CODE.finditer(s):
        out += [markdown(s[at:m.start()], line_start and at == 0), m.group(0)]
        at = m.end()
    return "".join(out + [markdown(s[at:], line_start and at == 0)])


def usage(p: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(p.prog, width=USAGE_WIDTH)
    formatter.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _subcommands(p: argparse.ArgumentParser) -> list[tuple[str, str | None, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand of ``p``, in the order they were added."""
    out = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            out += [(name, helps.get(name), sub) for name, sub in action.choices.items()]
    return out


def commands(p: argparse.ArgumentParser, about: str | None = None) -> Iterator[tuple[argparse.ArgumentParser,
                                                                                     str | None]]:
    """``p`` and every parser below it, depth first, each with the help its parent gave it."""
    yield p, about
    for _, helped, sub in _subcommands(p):
        yield from commands(sub, helped)


def _names(action: argparse.Action) -> str:
    if action.option_strings:
        metavar = "" if action.nargs == 0 else " " + argparse.HelpFormatter("x")._format_args(action,
                                                                                              action.dest.upper())
        return ", ".join(code(o + metavar) for o in action.option_strings)
    return code(action.metavar or action.dest)


def _default(action: argparse.Action) -> str:
    d = action.default
    said = "default" in (action.help or "")  # the help names it already, in words
    if action.nargs == 0 or d in (None, "", []) or d is argparse.SUPPRESS or action.required or said:
        return ""
    return f" (default: {code(d)})"


def argument(action: argparse.Action) -> str:
    """One list item: the argument's names, required or not, its choices, help and default."""
    parts = [_names(action)]
    if action.required and action.option_strings:
        parts.append(" (required)")
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        parts.append(" one of " + ", ".join(code(c) for c in action.choices))
    parts.append(f": {text(action.help)}" if action.help else "")
    parts.append(_default(action))
    return "- " + "".join(parts)


def section(p: argparse.ArgumentParser, about: str | None) -> list[str]:
    """One command's section: heading, what it does, usage, arguments, and its subcommands by link."""
    depth = len(p.prog.split())
    lines = [f"{'#' * min(depth + 1, 6)} {p.prog}", ""]
    for prose in dict.fromkeys(x for x in (about, p.description) if x):
        lines += [text(" ".join(prose.split()), line_start=True), ""]
    lines += ["```text", usage(p), "```", ""]
    shown = [a for a in p._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    lines += [argument(a) for a in shown] + ([""] if shown else [])
    subs = _subcommands(p)
    if subs:
        lines += ["Subcommands:", ""]
        lines += [f"- [{name}](#{anchor(f'{p.prog} {name}')}): {text(h or '')}" for name, h, _ in subs] + [""]
    return lines


def anchor(heading: str) -> str:
    """The id MkDocs (Python-Markdown's toc) gives a heading made of words and hyphens: lower case, spaces to
    hyphens."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


def render(p: argparse.ArgumentParser) -> str:
    """The whole reference page."""
    lines = ["# Command-line reference", "",
             f"Generated from the argparse parser of `evalkit.cli` by `{REGENERATE}` (`evalkit/clidoc.py`); "
             "`tests/test_clidoc.py` fails when this page and the parser differ. `evalkit COMMAND --help` prints the "
             "same.",
             ""]
    for sub, about in commands(p):
        lines += section(sub, about)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m evalkit.clidoc [OUT]``: write the reference (default docs/cli.md)."""
    import sys
    from pathlib import Path

    from .cli import parser

    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "docs/cli.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(parser()))
    print(f"CLI reference: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

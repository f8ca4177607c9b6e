"""docs/cli.md is what the parser renders (a stale page fails here, naming the command that regenerates it),
and the rendering covers every command, argument, help text and default, as inert Markdown."""
from __future__ import annotations

import argparse
from pathlib import Path

from evalkit import clidoc
from evalkit.cli import parser

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def test_committed_reference_is_current():
    assert PAGE.exists(), f"docs/cli.md is missing: run `{clidoc.REGENERATE}`"
    if PAGE.read_text() != clidoc.render(parser()):
        raise AssertionError(f"docs/cli.md differs from evalkit.cli's parser: run `{clidoc.REGENERATE}` and commit it")


def test_every_command_and_option_is_on_the_page():
    page = clidoc.render(parser())
    progs = [p.prog for p, _ in clidoc.commands(parser())]
    assert {"evalkit", "evalkit corpus fetch", "evalkit qrels simulate", "evalkit refusal calibrate",
            "evalkit gate"} <= set(progs)
    for p, _ in clidoc.commands(parser()):
        assert f" {p.prog}\n" in page
        for a in p._actions:
            for opt in a.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"`{opt}" in page, (p.prog, opt)
    assert "(default: `nDCG@10(doc)`)" in page  # a default
    assert "(required)" in page


def test_help_text_is_inert_markdown():
    p = argparse.ArgumentParser(prog="tool", description="does *this* | <b>that</b> with `code_span` kept")
    p.add_argument("--x", default="a`b", help="pick [one](http://x) of a_b")
    page = clidoc.render(p)
    assert r"does \*this\* \| &lt;b>that&lt;/b> with `code_span` kept" in page
    assert r"pick \[one\](http://x) of a\_b" in page
    assert "(default: ``a`b``)" in page
    heading = argparse.ArgumentParser(prog="tool", description="# not a heading")
    assert "\n\\# not a heading\n" in clidoc.render(heading)


def test_anchors_match_headings():
    page = clidoc.render(parser())
    for p, _ in clidoc.commands(parser()):
        if p.prog != "evalkit":
            assert f"(#{clidoc.anchor(p.prog)})" in page
    assert clidoc.anchor("evalkit qrels simulate") == "evalkit-qrels-simulate"

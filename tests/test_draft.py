import tomllib

from evalkit import draft

FILLER = "This page describes the general layout of the document and the usual options of the class. "


def corpus():
    """Five small manuals: `boxes` defines \\fancyframe on page 2; `boxes` and `music` both say "gutter",
    one of frames and gutter lines, the other of the people who maintain it; `boxes` and `tables` both have
    a heading "3.1 Ruled tables"."""
    return {
        "boxes.pdf": [FILLER * 3,
                      ("The \\fancyframe command draws a frame. Use \\fancyframe{text} with a width; \\fancyframe "
                       "accepts a colour. gutter lines frame thickness gutter lines frame thickness gutter "
                       "lines frame"),
                      "3.1 Ruled tables\nThe gutter lines of a frame have a thickness. " + FILLER],
        "music.pdf": [FILLER, "Our gutter maintainers volunteer. The gutter maintainers answer email, the gutter "
                      "maintainers keep releases. " + FILLER],
        "tables.pdf": [FILLER, "3.1 Ruled tables\nRules in tables are drawn with care. " + FILLER],
        "other.pdf": [FILLER * 2, "\\hbox \\vbox \\hskip \\vskip \\kern \\penalty \\relax \\hrule \\vrule"],
        "more.pdf": [FILLER * 2],
    }


def test_a_needle_is_a_distinctive_term_with_the_page_that_shows_it():
    pages = corpus()
    needles = draft.needles(pages, draft.Index.build(pages), 5)
    fancy = next(d for d in needles if "fancyframe" in d.text)
    assert fancy.cls == "needle" and fancy.pages == (("boxes.pdf", 2),)
    assert "3 times in boxes.pdf" in fancy.source and "1 of 5 documents" in fancy.source
    assert "Zipf" in fancy.source and "fancyframe" in fancy.context


def test_a_term_is_a_whole_word_in_any_alphabet_a_tex_command_or_a_call():
    text = "La Revue canadienne d'Économique: \\documentclass, group_by() and ggplot2, a naïve café-au-lait"
    assert draft.terms(text) == ["Revue", "canadienne", "Économique", "\\documentclass", "group_by()", "ggplot2",
                                 "naïve", "café-au-lait"]  # "conomique" once: a word cut at its first accent


def test_common_english_and_internal_names_are_not_needles():
    pages = {"a.pdf": ["table table table \\foo@bar \\foo@bar \\foo@bar"], "b.pdf": ["x"], "c.pdf": ["y"]}
    assert draft.needles(pages, draft.Index.build(pages), 5) == []


def test_a_trap_is_a_shared_term_used_in_different_roles_with_its_distractor():
    pages = corpus()
    traps = draft.traps(pages, draft.Index.build(pages), 5)
    gutter = next(d for d in traps if "gutter" in d.text)
    assert {gutter.pages[0][0], gutter.distractor} == {"boxes.pdf", "music.pdf"}
    assert "cosine" in gutter.source


def test_a_spread_is_a_heading_several_documents_carry():
    spreads = draft.spreads(corpus(), 5)
    assert [d.text for d in spreads] == ["Ruled tables: which manuals cover it, and what do they say?"]
    assert spreads[0].pages == (("boxes.pdf", 3), ("tables.pdf", 2))


def test_abstain_drafts_come_from_a_neighbouring_corpus_with_their_kind():
    neighbour = {"n1.pdf": ["Use \\musicgutter and \\musicgutter here.\n2.1 Frame colour maintainers\nText."],
                 "n2.pdf": ["The \\musicgutter command."]}
    got = draft.abstains(corpus(), neighbour, 4)
    name = next(d for d in got if "musicgutter" in d.text)
    assert name.kind == "absent-name" and "2 documents of the neighbouring corpus" in name.source
    need = next(d for d in got if d.kind == "uncovered-need")
    assert "Frame colour maintainers" in need.text
    assert draft.abstains(corpus(), None, 4) == []


def test_the_drafts_file_is_toml_an_assessor_edits_and_holds_no_query():
    drafts = draft.draft(corpus(), per_class=3)
    text = draft.to_toml(drafts, "tiny", [h.format(corpus="tiny") for h in draft.HEADER])
    data = tomllib.loads(text)
    assert "query" not in data and data["corpus"] == "tiny"
    assert len(data["draft"]) == len(drafts) and all("source" in d for d in data["draft"])
    assert text.startswith("# Query DRAFTS for the tiny corpus")

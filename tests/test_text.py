from evalkit.text import content_words, normalize, snippet, split_top, words


def test_normalize_folds_what_extraction_varies_on():
    assert normalize("Ef\ufb01cient  con-\n  trol\u00adled\nTEXT") == "efficient controlled text"


def test_words_and_content_words():
    assert words("How do I use \\captionsetup{labelsep=period}?") == ["how", "do", "i", "use", "captionsetup", "labelsep", "period"]
    assert content_words("How do I change the margins of tables?") == {"change", "margin", "table"}


def test_snippet_centres_on_the_first_query_word():
    text = "intro " * 50 + "the geometry package sets margins " + "tail " * 50
    s = snippet(text, "geometry margins", width=60)
    assert "geometry package" in s and s.startswith("…") and s.endswith("…")
    assert snippet("short page", "absent") == "short page"


def test_split_top_respects_parentheses():
    assert split_top("a, b(c=1,d=e(f=2)) ,g") == ["a", "b(c=1,d=e(f=2))", "g"]
    assert split_top("") == []

from evalkit.text import as_written, content_words, names, normalize, snippet, split_top, words


def test_normalize_folds_what_extraction_varies_on():
    assert normalize("Ef\ufb01cient  con-\n  trol\u00adled\nTEXT") == "efficient controlled text"


def test_words_and_content_words():
    assert words("How do I use \\captionsetup{labelsep=period}?") == ["how", "do", "i", "use", "captionsetup",
                                                                      "labelsep", "period"]
    assert content_words("How do I change the margins of tables?") == {"change", "margin", "table"}


def test_shared_words_are_quoted_as_the_query_writes_them():
    query = "Where do Walrus herds go along the sea ice?"
    shared = content_words(query) & content_words("walrus herd on the sea")
    assert shared == {"walru", "herd", "sea"}  # folded: a plural s off, and walrus's s with it
    assert as_written(query, shared) == ["herds", "sea", "walrus"]


def test_snippet_centres_on_the_first_query_word():
    text = "intro " * 50 + "the geometry package sets margins " + "tail " * 50
    s = snippet(text, "geometry margins", width=60)
    assert "geometry package" in s and s.startswith("…") and s.endswith("…")
    assert snippet("short page", "absent") == "short page"


def test_split_top_respects_parentheses():
    assert split_top("a, b(c=1,d=e(f=2)) ,g") == ["a", "b(c=1,d=e(f=2))", "g"]
    assert split_top("") == []


def test_names_are_what_a_query_writes_as_a_name():
    assert names(r"pgfplots: plot data with \addplot table and a logarithmic y axis") == ["addplot"]
    assert names("Switch from pdfLaTeX to XeLaTeX in an Overleaf project? Overleaf says no.") == [
        "pdfLaTeX", "XeLaTeX", "Overleaf"]
    assert names("dplyr: apply mean() to columns with across() after group_by()") == ["mean", "across", "group_by"]
    assert names("legend at the bottom of a ggplot2 plot; algorithm2e and 12pt") == ["ggplot2", "algorithm2e", "12pt"]
    assert names("Package biblatex Warning: Please (re)run Biber") == ["Warning", "Biber"]
    assert names("citations like (Smith, 2020) with an actionButton") == ["Smith", "actionButton"]
    # prose, sentence-initial capitals, acronyms, numbers and the reader's own snake_case are not names
    assert names("How do I get a PDF of 300 pages? Then print it. Fine: my_long_variable_name") == []
    assert names(r"R is installed in C:\Users\me\R and {\bf bold}") == ["bf"]


def test_rare_words_are_lower_case_words_below_a_frequency():
    from evalkit.text import rare_words
    freq = {"qrcode": 1.0, "table": 5.0, "chart": 4.6, "xgboost": 0.0, "gantt": 2.3}.get
    text = r"Make a qrcode table with xgboost, a Gantt chart, \tikz and ggplot() for gantt"
    assert rare_words(text, lambda w: freq(w, 0.0), 2.0) == ["qrcode", "xgboost"]
    assert rare_words(text, lambda w: freq(w, 0.0), 2.5) == ["qrcode", "xgboost", "gantt"]

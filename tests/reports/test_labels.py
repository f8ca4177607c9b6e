"""Display labels: long parameters left out unless two arms would look alike."""
from __future__ import annotations

from evalkit.reports import labels


def test_display_labels_drop_long_parameters_unless_two_arms_would_look_alike():
    model = "semantic(model=sentence-transformers/all-MiniLM-L6-v2)"
    assert labels.short_labels([model, "hybrid(keyword=global-index)", "keyword"]) == {
        model: "semantic", "hybrid(keyword=global-index)": "hybrid(keyword=global-index)", "keyword": "keyword"}
    assert labels.short_labels(["x(a=1,model=sentence-transformers/all-MiniLM-L6-v2)"]) == {
        "x(a=1,model=sentence-transformers/all-MiniLM-L6-v2)": "x(a=1)"}
    assert labels.short_labels([model, "semantic"]) == {model: model, "semantic": "semantic"}
    assert labels.label_note([model]) == f"_In figures and in this text, `semantic` is `{model}`._"
    assert labels.label_note(["keyword"]) == ""

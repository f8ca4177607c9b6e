"""Arms from a retriever written in Python: labels that tell retrievers apart, answers read and checked."""
import pytest

import evalkit as ek
from evalkit import arms
from evalkit.arms import ArmError
from evalkit.arms.function import FunctionArm, digest, register
from evalkit.records import Hit


def first_pages(query, k, page=1):
    return [("booktabs.pdf", page, 1.0)][:k]


def other_pages(query, k, page=1):
    return [("ctable.pdf", page, 1.0)][:k]


class Searcher:
    def __init__(self, limit):
        self.limit = limit

    def search(self, query, k):
        return [Hit("booktabs.pdf", 1, 1.0)][:min(k, self.limit)]


def test_labels_carry_a_digest_of_code_settings_and_defaults():
    a, b = register(first_pages, "pages"), register(other_pages, "pages")
    assert a.startswith("pages@") and b.startswith("pages@") and a != b  # same name, other code
    assert register(first_pages, "pages", page=2) != a  # other defaults
    assert register(Searcher(3), "s") != register(Searcher(4), "s")  # other settings of one class
    assert register(first_pages, "pages") == a == f"pages@{digest(first_pages, {'page': 1, 'collapse': False})}"
    assert issubclass(arms.registry()[a], FunctionArm)


def test_names_are_checked():
    with pytest.raises(ArmError, match="want letters"):
        register(first_pages, "two words")
    assert register(first_pages, "keyword").startswith("keyword@")  # never the built-in's name
    assert arms.registry()["keyword"].__name__ == "KeywordArm"
    with pytest.raises(TypeError, match="cannot make an arm of int"):
        register(3, "three")


def test_a_function_arm_answers_with_its_parameters(small):
    c, store = small
    spec = register(first_pages, "pages")
    arm = arms.make(f"{spec}(page=2)", c, store)
    assert arm.label == f"{spec}(page=2)" and not arm.travels
    assert arm.search("anything", 5).hits == (Hit("booktabs.pdf", 2, 1.0),)
    assert arm.describe()["adapter"] == "python"


def test_a_plain_function_is_called_as_itself_and_described_by_its_own_name(tiny):
    isolated, _ = tiny
    docs = ek.corpus(docs=isolated / "docs", progress=False)

    def walrus(query, k):
        return [("a.pdf", 2), ("b.pdf", 1)][:k]

    spec = ek.arm(walrus, name="walrus")
    assert [(h.doc, h.page) for h in docs.search(spec, "walrus", 1).hits] == [("a.pdf", 2)]
    res = ek.run(docs, isolated / "tiny.toml", [spec], isolated / "res", progress=False)
    [arm] = res.manifest["arms"]
    assert arm["describe"]["retriever"].endswith(".walrus") and arm["describe"]["adapter"] == "python"
    assert res.per_query["nDCG@10"].tolist() == [1.0]


def test_classes_without_source_files_differ_by_their_methods():
    """A class of a notebook cell has no source file Python can read: its methods' code tells two apart."""
    one, two = {}, {}
    exec("class Mine:\n    def search(self, query, k):\n        return []\n", one)
    exec("class Mine:\n    def search(self, query, k):\n        return [('a.pdf', 1)]\n", two)
    assert digest(one["Mine"](), {}) != digest(two["Mine"](), {})
    assert digest(one["Mine"](), {}) == digest(one["Mine"](), {})


def test_chunks_placed_by_their_text_normalise_each_document_once_per_arm(small, monkeypatch):
    """Ten text-only chunks per query from one manual: its pages are normalised once for the arm, not once
    per chunk (placement had been the slowest part of a chunk retriever's run)."""
    from evalkit import answers

    c, store = small
    pages = store.texts(c.document("booktabs.pdf"))
    quotes = [p.strip()[:40] for p in pages if len(p.strip()) > 40][:10]

    def chunks(query, k):
        return [{"doc": "booktabs.pdf", "text": q} for q in quotes][:k]

    arm = arms.make(register(chunks, "chunks"), c, store)
    calls = []
    monkeypatch.setattr(answers, "normalize", lambda t, real=answers.normalize: calls.append(t) or real(t))
    for query in ("one", "two", "three"):
        assert len(arm.search(query, 10).chunks) == len(quotes) == 10
    assert len(calls) == len(pages) + 3 * len(quotes)  # the pages once, then each chunk's own text

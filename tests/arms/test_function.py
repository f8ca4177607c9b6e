import evalkit as ek
from evalkit.arms.function import digest


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

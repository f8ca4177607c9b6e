import subprocess
import sys
import textwrap

import pytest

from evalkit import arms
from evalkit.arms import ArmError, parse_spec
from evalkit.text import split_top

from ..conftest import install_plugin


def test_parse_nested_specs():
    assert parse_spec("keyword") == ("keyword", {})
    assert parse_spec("hybrid(keyword=keyword(idf_scope=corpus), depth=50)") == (
        "hybrid", {"keyword": "keyword(idf_scope=corpus)", "depth": "50"})
    assert split_top("keyword,hybrid(keyword=global-index,depth=5),semantic", ",") == [
        "keyword", "hybrid(keyword=global-index,depth=5)", "semantic"]
    with pytest.raises(ArmError, match="has no '='"):
        parse_spec("keyword(corpus)")


def test_builtins_and_canonical_names(small):
    c, store = small
    assert set(arms.registry()) >= {"keyword", "global-index", "score-merge", "semantic", "hybrid"}
    assert arms.make("keyword", c, store).label == "keyword"
    assert arms.make("keyword(idf_scope=doc)", c, store).label == "keyword"  # a default is not named
    assert arms.make("keyword(idf_scope=corpus)", c, store).label == "keyword(idf_scope=corpus)"
    assert arms.make("hybrid(keyword=global-index)", c, store).label == "hybrid(keyword=global-index)"
    assert arms.make("semantic", c, store).label == "semantic(model=sentence-transformers/all-MiniLM-L6-v2)"


@pytest.mark.parametrize("spec, message", [
    ("nope", "unknown arm 'nope'"),
    ("mine@45e5b792", r"arm 'mine@45e5b792' is a notebook function \(ek.arm\), not registered in this process"),
    ("keyword(idf=doc)", "no parameter 'idf'"),
    ("keyword(idf_scope=planet)", "'doc' or 'corpus'"),
    ("hybrid(depth=many)", "'depth' wants a int"),
])
def test_bad_specs_name_the_arm_and_parameter(small, spec, message):
    c, store = small
    with pytest.raises(ArmError, match=message):
        arms.make(spec, c, store)


EXTERNAL = textwrap.dedent('''
    from evalkit.arms import Arm
    from evalkit.records import Answer, Hit

    class FirstPages(Arm):
        """Every document's first page, documents by sha256: a deliberately naive external arm."""
        name = "first-pages"
        defaults = {"page": 1}

        def search(self, query, k):
            docs = sorted(self.corpus.documents, key=lambda d: d.sha256)
            return Answer(tuple(Hit(d.name, self.params["page"], 1.0 / (i + 1)) for i, d in enumerate(docs[:k])))
''')


def test_an_installed_external_arm_is_found_and_runs(small, tmp_path, monkeypatch):
    """A real installed distribution (dist-info with an entry point), not a monkeypatched registry."""
    c, store = small
    site = install_plugin(tmp_path / "site", "evalkit_ext_demo", EXTERNAL,
                          {"first-pages": "evalkit_ext_demo:FirstPages"})
    monkeypatch.syspath_prepend(str(site))
    arm = arms.make("first-pages(page=2)", c, store)
    assert arm.label == "first-pages(page=2)"
    hits = arm.search("anything", 3).hits
    assert len(hits) == 3 and all(h.page == 2 for h in hits)

    out = subprocess.run([sys.executable, "-m", "evalkit", "search", "--docs", str(c.root), "--arm", "first-pages",
                          "-k", "2", "tables"], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(site)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("first-pages on small") and "#1" in out.stdout


def test_a_plugin_that_cannot_be_imported_breaks_only_what_names_it(tmp_path, monkeypatch, capsys):
    from evalkit.cli import main

    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evalkit.arms]\nbroken = no_such_module_here:Arm\n")
    monkeypatch.syspath_prepend(str(site))
    assert arms.validate("keyword")[0].name == "keyword"  # the other arms are untouched
    with pytest.raises(ArmError, match=r"plug-in arm 'broken' \(entry point no_such_module_here:Arm, from "
                                       r"broken-plugin 1.0\) cannot be imported: ModuleNotFoundError"):
        arms.validate("broken")
    assert main(["arms"]) == 0  # listed as broken, not fatal
    assert "broken         plug-in arm 'broken'" in capsys.readouterr().out

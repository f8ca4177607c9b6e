import re

import nbformat
import pytest

from evalkit import dirs, notebooks
from evalkit.reports import rendering

from .conftest import ROOT, SMALL_QUERIES


def test_inject_parameters_follows_the_parameters_cell_and_replaces_an_earlier_one():
    nb = nbformat.read(rendering.NOTEBOOK, as_version=4)
    n = len(nb.cells)
    notebooks.inject_parameters(nb, results="/x", pair=None)
    notebooks.inject_parameters(nb, results="/y", pair=["a", "b"])
    assert len(nb.cells) == n + 1
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    assert nb.cells[at + 1].metadata["tags"] == ["injected-parameters"]
    assert nb.cells[at + 1].source == "# Parameters\nresults = '/y'\npair = ['a', 'b']\n"
    nb.cells[at].metadata["tags"] = []
    with pytest.raises(ValueError, match="no cell tagged 'parameters'"):
        notebooks.inject_parameters(nb, results="/z")


@pytest.mark.slow
def test_the_kernel_never_imports_code_from_the_folder_it_reports_on(tmp_path):
    """A results directory is data: a ``pandas.py`` committed next to a baseline is not on the kernel's path."""
    where = tmp_path / "results"
    where.mkdir()
    marker = tmp_path / "ran"
    (where / "pandas.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    (where / "evil_here.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import os, pandas\ntry:\n    import evil_here\nexcept ImportError:\n    pass\n"
                                  "print(os.getcwd())")])
    source = tmp_path / "probe.ipynb"
    nbformat.write(nb, source)
    notebooks.execute(source, where, "probe", "probe", x=2)
    assert not marker.exists()
    out = nbformat.read(where / "probe.ipynb", as_version=4).cells[-1].outputs[0]["text"].strip()
    assert out != str(where) and not out.startswith(str(where))
YOUR_RETRIEVER = ROOT / "notebooks" / "your-retriever.ipynb"
EVALKIT_CALL = re.compile(r"\b(ek|res|docs|verdict)\.\w|fig_class_bars\(")


def test_your_retriever_notebook_says_how_many_lines_call_evalkit():
    nb = nbformat.read(YOUR_RETRIEVER, as_version=4)
    lines = [line for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])
             for line in c.source.splitlines() if EVALKIT_CALL.search(line) and not line.lstrip().startswith("from ")]
    assert len(lines) <= 15
    assert f"{len(lines)} lines above call evalkit" in nb.cells[-1].source


@pytest.mark.slow
def test_your_retriever_notebook_runs_three_forms_of_one_retriever_to_identical_rankings(small, tmp_path, real_env,
                                                                                         monkeypatch):
    """The Done-when test of the adapters: the notebook's BM25 over 250-word chunks as a function, a LangChain
    and a LlamaIndex retriever, executed on the small real corpus, ranks every query's pages identically."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from evalkit.results import Results

    for k, v in real_env.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "q.toml").write_text(SMALL_QUERIES)
    c, _ = small
    notebooks.execute(YOUR_RETRIEVER, tmp_path, "your-retriever", "your retriever", pdfs=str(c.root),
                      queries=str(tmp_path / "q.toml"), rules=str(dirs.shipped("gate.toml")), out=str(tmp_path / "res"))
    res = Results.load(tmp_path / "res")
    assert [a.split("@")[0] for a in res.arms] == ["global-index", "hybrid(keyword=global-index)", "bm25",
                                                    "bm25-langchain", "bm25-llamaindex"]
    ranked = [res.rankings(a) for a in ("bm25", "bm25-langchain", "bm25-llamaindex")]
    assert ranked[0] == ranked[1] == ranked[2] and len(ranked[0]) == 3  # q4's words occur nowhere
    assert ranked[0] != res.rankings("global-index")
    assert not res.per_query["error"].astype(bool).any()
    out = nbformat.read(tmp_path / "your-retriever.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for cell in out.cells if cell.cell_type == "code" for o in cell.outputs)
    assert "the three forms give identical page rankings on all 4 queries: True" in printed
    assert ":bm25@" in printed and "rules" in printed and (tmp_path / "res" / "gate.json").exists()
    assert any("image/png" in o.get("data", {}) for cell in out.cells if cell.cell_type == "code" for o in cell.outputs)

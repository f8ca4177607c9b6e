import nbformat
import pytest

from evalkit import notebooks, reporting


def test_inject_parameters_follows_the_parameters_cell_and_replaces_an_earlier_one():
    nb = nbformat.read(reporting.NOTEBOOK, as_version=4)
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

"""Executing a report notebook headless and exporting it as a self-contained HTML page.

One path for every notebook evalkit renders (the results report, the bench report): parameters are injected
papermill-style, nbclient executes the notebook in its own kernel, and nbconvert writes HTML with the
figures embedded and no script, style or font loaded from elsewhere, so the page opens offline.

The directory a report is about is data, never code: the kernel starts in an empty temporary folder (its
working directory, which the kernel puts on ``sys.path``), so a ``pandas.py`` or a ``matplotlibrc`` placed
next to the results is never imported or read; the notebook gets absolute paths as parameters.
"""
from __future__ import annotations

import atexit
import os
import re
import signal
import tempfile
import threading
from pathlib import Path

# nbconvert's lab template with the blocks that load scripts from a CDN (require.js, MathJax, mermaid,
# widgets) left empty: the reports use none of them, and they must open without a network.
OFFLINE_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<style>
/* a table wider than the page (the arms' provenance: parameters, the model and its digest) scrolls within
   its cell instead of running off the page's right edge unseen */
.jp-RenderedHTMLCommon table { display: block; max-width: 100%; overflow-x: auto; }
</style>
{%- endblock extra_css -%}
"""
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _parameters_cell(pairs: dict) -> str:
    return "# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in pairs.items())


def inject_parameters(nb, **params):
    """Insert a cell tagged ``injected-parameters`` after the cell tagged ``parameters`` (papermill's
    convention), replacing one injected before; returns the notebook."""
    import nbformat

    cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
    at = next((i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if at is None:
        raise ValueError("the notebook has no cell tagged 'parameters'")
    cell = nbformat.v4.new_code_cell(_parameters_cell(params), metadata={"tags": ["injected-parameters"]})
    cells.insert(at + 1, cell)
    nb.cells = cells
    return nb


class _Stopped(Exception):
    """The notebook's execution was stopped because Ctrl-C was pressed."""


def _interruptible(client, env: dict) -> None:
    """Execute ``client``'s notebook with Ctrl-C left to the caller: one KeyboardInterrupt, the kernel gone.

    nbclient, run in the main thread, replaces Python's SIGINT handler by an asyncio one for the whole
    execution; that handler raises nothing and shuts the kernel down while the cell that runs still talks to
    it, so Ctrl-C ended evalkit with a CancelledError, an AssertionError or a ZMQError (or by the signal
    itself), at times leaving the kernel running in its own session. In a worker thread nbclient cannot
    install it; the main thread keeps Python's handler and, on Ctrl-C, kills the kernel's process group (or
    stops the next cell, before the kernel is up), waits for nbclient to clean up, and raises
    KeyboardInterrupt."""
    stop = threading.Event()
    failure: list[BaseException] = []

    def refuse_after_ctrl_c(**_):
        if stop.is_set():
            raise _Stopped()

    def work():
        try:
            client.execute(env=env)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            failure.append(e)

    client.on_notebook_start = client.on_cell_start = refuse_after_ctrl_c
    worker = threading.Thread(target=work, name="evalkit-notebook")
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        stop.set()
        _kill_kernel(client)
        worker.join()
        # nbclient registers an atexit cleanup before it starts the kernel and unregisters it only once the
        # kernel is up; interrupted in between, that cleanup would run at exit against a manager whose start
        # already failed and print a traceback ("Exception ignored in atexit callback") after our one line.
        # The kernel's process group is gone: there is nothing left for it to clean.
        atexit.unregister(client._cleanup_kernel)
        raise
    if failure:
        raise failure[0]


def _kill_kernel(client) -> None:
    """SIGKILL the kernel's process group if it has been started (its own session: the terminal's Ctrl-C
    never reaches it)."""
    provisioner = getattr(getattr(client, "km", None), "provisioner", None)
    pgid = getattr(provisioner, "pgid", None)
    if pgid:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def execute(source: Path, where: Path, name: str, title: str, out_html: str | Path | None = None,
            timeout: int = 600, kernel_name: str = "python3", **params) -> Path:
    """Execute ``source`` with ``params`` in ``where`` and write ``<where>/<name>.ipynb`` and the HTML page
    (``out_html``, default ``<where>/<name>.html``); returns the HTML's path. A failing cell raises
    nbclient's CellExecutionError naming the cell, its code and the error; nothing is written then."""
    import nbformat
    from jinja2 import DictLoader
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter

    nb = inject_parameters(nbformat.read(source, as_version=4), **params)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # keep the kernel's inline backend
    env["PYTHONSAFEPATH"] = "1"  # the working directory is not put on sys.path
    env["EVALKIT_WORKDIR"] = os.getcwd()  # where a manifest's relative paths (its query file) are looked up
    try:
        with tempfile.TemporaryDirectory(prefix="evalkit-kernel-") as clean:  # the kernel's working directory
            # the kernel's start has the cells' bound too: nbclient's own 60 s is passed on a busy CI machine
            _interruptible(NotebookClient(nb, timeout=timeout, startup_timeout=timeout, kernel_name=kernel_name,
                                          extra_arguments=["--IPKernelApp.log_level=ERROR"],  # not its TCP warning
                                          resources={"metadata": {"path": clean}}), env)
    except CellExecutionError as e:
        index, cell = next(((i, c) for i, c in enumerate(nb.cells) if c.get("cell_type") == "code" and any(
            o.get("output_type") == "error" for o in c.get("outputs", []))), (None, None))
        at = f"cell {index} (In [{cell.get('execution_count')}])" if cell is not None else "a cell"
        code = "\n".join("    " + line for line in (cell.source if cell else "").splitlines())
        tb = "\n".join(_ANSI.sub("", line) for o in (cell.outputs if cell else [])
                       if o.get("output_type") == "error" for line in o.get("traceback", []))
        raise CellExecutionError(f"report notebook {source.name}, {at} failed on {where}: "
                                 f"{e.ename}: {e.evalue}\n{code}\n\n{tb}", e.ename, e.evalue) from None
    nbformat.write(nb, where / f"{name}.ipynb")
    # outputs only, no prompts (the prose lines up with the tables): the .ipynb keeps the code
    exporter = HTMLExporter(template_name="lab", template_file="evalkit-offline", exclude_input=True,
                            exclude_input_prompt=True, exclude_output_prompt=True, embed_images=True,
                            extra_loaders=[DictLoader({"evalkit-offline": OFFLINE_TEMPLATE})])
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    out = Path(out_html) if out_html else where / f"{name}.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out

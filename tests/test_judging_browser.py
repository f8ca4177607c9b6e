"""The judging workbench in a real browser: JupyterLab from this environment, Debian's chromium through
Playwright, a notebook that opens the workbench, every page graded from the keyboard, an evidence quote
selected with the mouse, the kernel killed, the notebook reopened, and every judgment found in the TOML as
``qrels check --strict`` accepts it. The widget's JavaScript must come from the installed packages: any
request to a host other than this JupyterLab fails the test."""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalkit import api, judging, judging_file, qrels
from evalkit.draft import Draft, to_toml
from tests.conftest import HANG_S, ROOT, make_pdf

pytestmark = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARMS = ["global-index", "keyword"]
QUERY = "walrus migration along the sea ice"
NOTEBOOK_CELLS = ['import evalkit as ek\ndocs = ek.corpus(docs="docs", progress=False)',
                  f'ek.judge("mine.toml", docs, {ARMS!r})']
SHOTS = ROOT / ".evalkit-test" / "screens"
HANG_MS = HANG_S * 1000  # every wait of these tests is bounded by this only


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(cells: list[str]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": c} for i, c in enumerate(cells)]})


@dataclass(frozen=True)
class Lab:
    """A test's folder under the module's JupyterLab, and the URL of its notebook (judge.ipynb) there."""

    folder: Path
    url: str


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    """One JupyterLab for the module's tests (a start took about 6 s and 7 CPU-s): it serves a folder in which
    each test writes a folder of its own, and its kernels keep evalkit's data and cache under it, never the
    user's. Yields (root, base URL, token); stops JupyterLab after the last test."""
    root = tmp_path_factory.mktemp("lab")
    port, token = free_port(), secrets.token_hex(16)
    jupyter = root / ".jupyter"  # its runtime, settings and workspaces: nothing of the user's is read or written
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
           "JUPYTER_CONFIG_DIR": str(jupyter / "config"), "JUPYTERLAB_SETTINGS_DIR": str(jupyter / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(jupyter / "workspaces"), "EVALKIT_DATA": str(root / ".evalkit" / "data"),
           "EVALKIT_CACHE": str(root / ".evalkit" / "cache"), "EVALKIT_LOCK": str(root / ".evalkit" / "corpora.lock")}
    # no "get notified about official Jupyter news?" toast over the page (--LabApp.news_url= does not stop it)
    news = jupyter / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')
    server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                               "--allow-root", "--LabApp.extension_manager=readonly", "--LabApp.news_url=",
                               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                               # a kernel that answers late is waited for, not given up after 60 s (a hang bound)
                               f"--MappingKernelManager.kernel_info_timeout={HANG_S}"],
                              cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=(root / "lab.log").open("w"))
    try:
        wait_for(server, f"http://127.0.0.1:{port}/api/status?token={token}", root / "lab.log")
        yield root, f"http://127.0.0.1:{port}", token
    finally:
        server.terminate()  # SIGTERM stops it and its kernels; SIGINT only asks on stdin whether to stop
        try:
            server.wait(HANG_S)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture
def lab(jupyter, isolated):
    """A folder of PDFs, a query pooled through judging.py and a notebook, served by JupyterLab."""
    folder = served_folder(jupyter)
    docs = folder / "docs"
    docs.mkdir()
    for name, topic in (("walrus", "Walrus migration"), ("seal", "Seal migration"), ("ice", "Sea ice")):
        make_pdf(docs / f"{name}.pdf", [f"{topic} page {n}: along the sea ice, herds of walrus travel south; "
                                        f"chapter {n} of the {name} manual." for n in range(1, 5)])
    yield from serve(jupyter, folder, docs)


def served_folder(jupyter) -> Path:
    """A new folder of the test's own under the JupyterLab's root."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="t", dir=jupyter[0]))


def serve(jupyter, folder: Path, docs: Path, strategy: str = judging.DEFAULT_STRATEGY):
    """Query q1 pooled from ``docs`` through judging.py into ``folder``, and a notebook there opening the
    workbench: yields its :class:`Lab`."""
    session = judging.Session(folder / "mine.toml", api.corpus(docs=docs, progress=False), ARMS, strategy)
    session.write_query("q1", "needle", QUERY)
    session.pool("q1")
    session.close()
    yield from lab_serving(jupyter, folder, NOTEBOOK_CELLS)


def lab_serving(jupyter, folder: Path, cells: list[str]):
    """A notebook of ``cells`` (judge.ipynb) in ``folder``: yields its :class:`Lab`, opened in a JupyterLab
    workspace of its own (a shared one would reopen the last test's notebook beside it), and shuts down the
    kernels of the folder's notebooks after, as a JupyterLab of the test's own once ended with it."""
    root, base, token = jupyter
    (folder / "judge.ipynb").write_text(notebook(cells))
    name = folder.relative_to(root).as_posix()
    yield Lab(folder, f"{base}/lab/workspaces/{name}/tree/{name}/judge.ipynb?token={token}")
    for s in _api(base, token, "GET", "sessions"):
        if s["path"].startswith(f"{name}/"):
            _api(base, token, "DELETE", f"sessions/{s['id']}")


def _api(base: str, token: str, method: str, path: str):
    """A call to JupyterLab's REST API: its JSON answer (None when empty)."""
    import urllib.request

    request = urllib.request.Request(f"{base}/api/{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=HANG_S) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def wait_for(server: subprocess.Popen, url: str, log: Path, seconds: float = HANG_S) -> None:
    """Until JupyterLab answers (its log shown if it dies or never does)."""
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer in {seconds} s: {log.read_text()[-2000:]}")


def context_of(browser):
    """A browser context at the tests' window size whose every wait is bounded by :data:`HANG_MS` only."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(HANG_MS)
    return context


def local(url: str) -> bool:
    """A request that stays on this machine: to the loopback, or a data: / blob: URL of a loopback page."""
    from urllib.parse import urlsplit

    if url.startswith("data:"):
        return True
    return urlsplit(url.removeprefix("blob:")).hostname in ("127.0.0.1", "localhost")


def run_all(page) -> None:
    """Open the notebook's cells and run them all (the Run menu), then wait for the workbench."""
    page.locator(".jp-Notebook").wait_for()
    # Run All runs only once the notebook holds a connected kernel; before that it asks which kernel to start
    # or, while the kernel is still starting (the toolbar already names it), clears the cells and runs nothing.
    # The status bar reads "| Idle" only for a connected, idle kernel. JupyterLab may instead ask which kernel
    # to start: whichever comes first is answered, and nothing waits a fixed time.
    select = page.locator(".jp-Dialog button", has_text="Select")
    idle = page.locator(".jp-StatusBar-TextItem", has_text="| Idle")
    select.or_(idle).first.wait_for()
    if select.count():
        select.click()
        idle.wait_for()
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
    try:
        page.locator(".ek-text").wait_for()
    except Exception:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "judge-failed.png"))
        raise


def select_quote(page, start: int, end: int) -> str:
    """Drag the mouse over characters ``start``..``end`` of the page text; returns what the browser selected."""
    box = page.evaluate("""([a, b]) => {
        const point = (offset) => {
          const walker = document.createTreeWalker(document.querySelector('.ek-text'), NodeFilter.SHOW_TEXT);
          let node;
          while ((node = walker.nextNode())) {
            if (offset <= node.length) {
              const r = document.createRange(); r.setStart(node, offset); r.setEnd(node, offset);
              const rect = r.getBoundingClientRect(); return [rect.left, rect.top + rect.height / 2];
            }
            offset -= node.length;
          }
        };
        return [point(a), point(b)]; }""", [start, end])
    (x0, y0), (x1, y1) = box
    page.mouse.move(x0 + 1, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=8)
    page.mouse.up()
    return page.evaluate("() => window.getSelection().toString()")


def test_judge_in_a_browser_kill_the_kernel_and_find_every_judgment(lab):
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    folder = lab.folder
    path = folder / "mine.toml"
    pooled = qrels.load(path).pooled["q1"]
    foreign: list[str] = []
    served: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=HANG_MS)
        context = context_of(browser)
        context.on("request", lambda r: (served if local(r.url) else foreign).append(r.url))
        page = context.new_page()
        page.on("dialog", lambda d: d.accept())  # "leave the page?" on reload: yes
        page.goto(lab.url)
        run_all(page)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "judge-opened.png"))
        page.locator(".ek-top").click()
        started = time.monotonic()
        for n in range(len(pooled)):  # grade every pooled page: the first 3, the rest 0 (no evidence needed)
            page.keyboard.press("3" if n == 0 else "0")
            page.wait_for_function("() => document.querySelector('.ek-top').textContent.includes('— "
                                   f"{len(pooled) - n - 1} left')")
        seconds = time.monotonic() - started
        for _ in range(len(pooled)):
            page.keyboard.press("k")
        page.wait_for_function("() => document.querySelector('.ek-head').textContent.includes('   1/')")
        first = page.locator(".ek-head").text_content().split()[0]
        text = page.locator(".ek-text").text_content()
        start = text.index("along the sea ice")
        quote = select_quote(page, start, start + len("along the sea ice, herds of walrus"))
        page.keyboard.press("e")
        page.locator(".ek-evidence").wait_for()
        page.screenshot(path=str(SHOTS / "judge-evidence.png"))
        kernel = int(judging_file.lock_path(path).read_text().split()[1])  # "pid N on HOST": the kernel holding it
        os.kill(kernel, signal.SIGKILL)  # a crash: nothing may be lost
        page.reload()
        run_all(page)
        page.screenshot(path=str(SHOTS / "judge-reopened.png"))
        message = page.locator(".ek-message").text_content()
        browser.close()
    print(f"graded {len(pooled)} pages from the keyboard in {seconds:.1f} s")
    assert f"took over the lock of process {kernel}" in message
    assert not foreign, f"requests left this machine: {foreign[:5]}"
    assert any("/lab/extensions/anywidget/" in u for u in served)
    qs = qrels.load(path)
    judged = {(j.doc, j.page): j for j in qs["q1"].judgments}
    assert set(judged) == set(pooled)
    graded = judged[qrels.split_page_id(first)]
    assert graded.gain == 3 and graded.evidence == quote.strip() and quote.strip() in path.read_text()
    out = subprocess.run([sys.executable, "-m", "evalkit", "qrels", "check", str(path), "--strict", "--docs",
                          str(folder / "docs")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout + out.stderr


FILLER = " ".join(f"filler{i} words" for i in range(120))
DRAFTS = to_toml([Draft(f"{c}-0{n}", c, f"walrus {c} question {n}?", f"distinctive term {n}", (("walrus.pdf", 2),))
                  for c, n in (("needle", 1), ("needle", 2), ("needle", 3), ("trap", 1))], "docs")


@pytest.fixture
def bench_lab(jupyter, isolated):
    """A long page (its passage in the middle), short pages, a page no pool of the query draws (penguins),
    four drafts, q1 pooled two deep, and JupyterLab serving them."""
    folder = served_folder(jupyter)
    docs = folder / "docs"
    docs.mkdir()
    make_pdf(docs / "long.pdf", [f"{FILLER} Herds of walrus migrate along the sea ice every spring. {FILLER}"])
    make_pdf(docs / "walrus.pdf", ["Walrus migration along the sea ice, page one.", "Walrus herds, page two."])
    make_pdf(docs / "seal.pdf", ["Seals stay near the coast.", "Penguins are not seals."])
    (folder / "qrels" / "drafts").mkdir(parents=True)
    (folder / "qrels" / "drafts" / "docs.toml").write_text(DRAFTS)
    yield from serve(jupyter, folder, docs, "depth(k=2)")


def wait_text(page, selector: str, text: str) -> None:
    page.wait_for_function("([s, t]) => (document.querySelector(s)?.textContent || '').includes(t)",
                           arg=[selector, text])


def focus(page) -> None:
    """Give the keys back to the workbench (a redraw removed the input that had them)."""
    page.locator(".ek-top").click()


def test_drafts_passage_whole_page_and_search_in_a_browser_timed(bench_lab):
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from evalkit import effort

    folder = bench_lab.folder
    path = folder / "mine.toml"
    assert ("seal.pdf", 2) not in qrels.load(path).pooled["q1"] and ("long.pdf", 1) in qrels.load(path).pooled["q1"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=HANG_MS)
        page = context_of(browser).new_page()
        page.goto(bench_lab.url)
        run_all(page)
        focus(page)
        # drafts: accept, reject, edit, accept
        page.keyboard.press("d")
        wait_text(page, ".ek-draft-head", "4 left")
        page.keyboard.press("a")
        wait_text(page, ".ek-draft-head", "3 left")
        page.keyboard.press("x")
        wait_text(page, ".ek-draft-head", "2 left")
        page.keyboard.press("t")
        page.locator(".ek-draft-text").fill("which page says where walrus herds go?")
        page.locator(".ek-draft-text").press("Enter")
        wait_text(page, ".ek-draft-head", "1 left")
        focus(page)
        page.keyboard.press("a")
        wait_text(page, ".ek-draft-head", "0 left")
        page.screenshot(path=str(SHOTS / "judge-drafts.png"))
        page.keyboard.press("d")  # back to q1's pages
        page.locator(".ek-head").wait_for()
        for _ in range(6):  # to the long page
            head = page.locator(".ek-head").text_content()
            if head.startswith("long.pdf#1"):
                break
            page.keyboard.press("j")
            page.wait_for_function("h => document.querySelector('.ek-head').textContent !== h", arg=head)
        passage = page.locator(".ek-passage")
        assert passage.count() == 1 and "filler50 " not in passage.text_content()
        page.keyboard.press("w")  # the whole page, and back
        wait_text(page, ".ek-display", "back to its passages")
        assert page.locator(".ek-passage").count() == 0 and "filler50 " in page.locator(".ek-text").text_content()
        page.keyboard.press("w")
        wait_text(page, ".ek-display", "best-matching passages")
        passage = page.locator(".ek-passage").text_content()
        start, end = passage.index("Herds"), passage.index("spring") + len("spring")  # the PDF may wrap it
        quote = select_quote(page, start, end)
        page.keyboard.press("e")  # evidence before the grade: kept for it
        wait_text(page, ".ek-evidence", "kept")
        page.keyboard.press("3")
        page.wait_for_function("() => !document.querySelector('.ek-head').textContent.startsWith('long.pdf#1')")
        # a page outside the pool, found by search
        page.keyboard.press("/")
        page.locator(".ek-find").fill("penguins")
        page.locator(".ek-find-arm").fill("keyword")
        page.locator(".ek-find").press("Enter")
        wait_text(page, ".ek-found", "found by keyword")
        wait_text(page, ".ek-head", "seal.pdf#2")
        focus(page)
        page.keyboard.press("0")
        page.wait_for_function("() => !document.querySelector('.ek-message')")  # the grade's answer: no message
        page.screenshot(path=str(SHOTS / "judge-found.png"))
        browser.close()
    qs = qrels.load(path)
    long_page = next(j for j in qs["q1"].judgments if j.doc == "long.pdf")
    assert (long_page.gain, long_page.evidence) == (3, quote.strip())
    assert qs.found["q1"] == {("seal.pdf", 2): "search:keyword"} and ("seal.pdf", 2) not in qs.pooled["q1"]
    assert [q.id for q in qs.queries] == ["q1", "needle-01", "needle-03", "trap-01"]
    assert qs["needle-03"].text == "which page says where walrus herds go?"
    text = path.read_text()
    assert 'drafted = "needle-03: distinctive term 3"' in text and 'drafts_rejected = ["needle-02"]' in text
    log = effort.read(effort.log_path(path))
    got = [(a.action, a.query, a.doc, a.display) for a in log.actions]
    assert got == [("draft-accept", "needle-01", None, None), ("draft-reject", "needle-02", None, None),
                   ("draft-accept", "needle-03", None, None), ("draft-accept", "trap-01", None, None),
                   ("evidence", "q1", "long.pdf", "passage"), ("grade", "q1", "long.pdf", "passage"),
                   ("search", "q1", None, None), ("grade", "q1", "seal.pdf", "page")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "evalkit", "qrels", "effort", str(path)], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0 and "draft accepted" in out.stdout and "passage" in out.stdout, out.stderr
    print(out.stdout)
    check = subprocess.run([sys.executable, "-m", "evalkit", "qrels", "check", str(path), "--docs",
                            str(folder / "docs")],
                           capture_output=True, text=True, env=env)
    assert "1 page(s) judged outside the pool, found by search" in check.stdout, check.stdout + check.stderr


@pytest.fixture
def gate_lab(jupyter, isolated):
    """The six pages of tests/test_judging_gate.py as PDFs, its partly graded query file, run, judge and rules,
    and JupyterLab serving a notebook that opens the workbench with the run to gate."""
    from .test_judging_gate import PAGES, gated

    folder = served_folder(jupyter)
    docs = folder / "docs"
    docs.mkdir()
    for name in dict.fromkeys(d for d, _ in PAGES):
        make_pdf(docs / name, [f"{name} page {n}: walrus migration along the sea ice." for n in (1, 2)])
    gated(folder)
    cells = [NOTEBOOK_CELLS[0], f'ek.judge("mine.toml", docs, {ARMS!r}, results="results", baseline_arm="base", '
                                'candidate_arm="cand", rules="gate.toml")']
    yield from lab_serving(jupyter, folder, cells)


def test_can_i_decide_yet_is_shown_and_answers_again_after_each_grade_in_a_browser(gate_lab):
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from .test_judging_gate import gain

    folder = gate_lab.folder
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=HANG_MS)
        page = context_of(browser).new_page()
        page.goto(gate_lab.url)
        run_all(page)
        wait_text(page, ".ek-decide-head", "can I decide yet? not yet")
        assert "refused for" in page.locator(".ek-judge summary").text_content()
        nxt = page.locator(".ek-decide-next").text_content()
        assert "(6 of its 6 pooled pages left)" in nxt
        ask = nxt.split()[3].rstrip(",")  # "grade next: query q14, page …"
        focus(page)
        for _ in range(30):  # to the query asked for
            top = page.locator(".ek-top").text_content()
            if f" — {ask} — " in top:
                break
            page.keyboard.press("]")
            page.wait_for_function("t => document.querySelector('.ek-top').textContent !== t", arg=top)
        assert page.locator(".ek-opinion").count() == 0  # blind: no opinion of an ungraded page on screen
        page.screenshot(path=str(SHOTS / "judge-decide-before.png"))
        for left in range(5, -1, -1):  # grade the query whole, as the person would
            doc, n = page.locator(".ek-head").text_content().split()[0].split("#")
            page.keyboard.press(str(gain(ask, (doc, int(n)))))
            if left:
                wait_text(page, ".ek-decide-next", f"({left} of its 6 pooled pages left)")
        wait_text(page, ".ek-decide-head", "yes: the gate passes")
        page.screenshot(path=str(SHOTS / "judge-decide-after.png"))
        rules = page.locator(".ek-decide-rules").text_content()
        browser.close()
    assert "pass: non-inferiority nDCG@10(doc)" in rules
    assert all(j.gain == gain(ask, (j.doc, j.page)) for j in qrels.load(folder / "mine.toml")[ask].judgments)

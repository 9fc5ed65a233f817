"""The series in a real browser: JupyterLab (started as `make lab` starts it) driven in headless Chromium.

Run by ``make test-browser`` (which installs Playwright's Python client and Debian's chromium); skipped otherwise.
Never saves a notebook: autosave is off and the server refuses every save. Screenshots of failures go to
``browser-failures/``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

if os.environ.get("MHA_BROWSER_TEST") != "1":
    pytest.skip("browser test: run `make test-browser`", allow_module_level=True)

from playwright.sync_api import Browser, Page  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from chromium import launched  # noqa: E402
from lab_server import running_lab  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
RUN_ALL = ("00_", "06_", "08_")
FAILURES = ROOT / "browser-failures"
TOKEN = "mha-browser-test"
STDERR = '[data-mime-type="application/vnd.jupyter.stderr"]'
ERROR = '[data-mime-type="application/vnd.jupyter.error"]'
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
USER_SETTINGS = {
    # Every cell in the DOM (JupyterLab 4 renders only the visible ones by default), and never an autosave.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
SERVER_CONFIG = '''
def refuse_save(model, path, contents_manager, **kwargs):
    raise RuntimeError("the browser test never saves a notebook: " + path)

c.FileContentsManager.pre_save_hook = refuse_save
'''



@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`make lab` on 127.0.0.1 (random port, token), with throw-away user config; yields its base URL."""
    home = tmp_path_factory.mktemp("lab")
    settings = home / "user-settings"
    for name, values in USER_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    (home / "config").mkdir()
    (home / "config" / "jupyter_server_config.py").write_text(SERVER_CONFIG)
    env = dict(
        os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
    )
    log_path = home / "server.log"
    with log_path.open("w") as log:
        try:
            with running_lab(token=TOKEN, env=env, extra_args="--LabApp.expose_app_in_browser=True", log=log) as base:
                yield base
        except RuntimeError as err:
            raise RuntimeError(f"{err}; server log tail:\n{log_path.read_text()[-3000:]}") from None
        finally:
            print(f"JupyterLab log: {log_path}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched("test-browser") as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        FAILURES.mkdir(exist_ok=True)
        shot = FAILURES / f"{request.node.name.replace('/', '_')}.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot of the failure: {shot}")
    context.close()


def _open(page: Page, base: str, path: Path) -> None:
    """Open a notebook in JupyterLab and wait until its kernel is idle and its markdown is rendered."""
    page.goto(f"{base}/lab/tree/notebooks/{path.name}?token={TOKEN}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached")
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return kernel && kernel.status === 'idle' && w.context.isReady;
        }""",
        timeout=90_000,
    )
    page.wait_for_timeout(1500)  # JupyterLab fills in the kernel's metadata after connecting


def _dirty(page: Page) -> bool:
    return page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")


def _local_images(path: Path) -> int:
    nb = nbformat.read(path, as_version=4)
    targets = [t for c in nb.cells if c.cell_type == "markdown" for t in IMAGE.findall(c.source)]
    return sum(not t.startswith(("http://", "https://")) for t in targets)


def _stored_images(path: Path) -> tuple[list[int], set[int]]:
    """How many image/png outputs each cell of the committed notebook holds (figures, `show_diagram` diagrams), and
    which cells have their outputs collapsed (an exercise's answer: `make notebooks` hides it)."""
    nb = nbformat.read(path, as_version=4)
    counts = [sum("image/png" in o.get("data", {}) for o in c.get("outputs", [])) for c in nb.cells]
    collapsed = {i for i, c in enumerate(nb.cells) if c.metadata.get("jupyter", {}).get("outputs_hidden")}
    return counts, collapsed


def _not_rendered(stored: list[int], shown: list[list[int]], skip: set[int]) -> list[str]:
    """The cells whose stored images are not all on the page with a non-zero natural width."""
    return [f"cell {i}: {n} stored, natural widths {shown[i]}" for i, n in enumerate(stored)
            if i not in skip and (len(shown[i]) != n or 0 in shown[i])]


def _scroll_through(page: Page) -> None:
    """Scroll the notebook from top to bottom: JupyterLab renders a markdown cell when it comes into view."""
    cells = page.locator(".jp-Notebook .jp-Cell")
    for index in range(cells.count()):
        cells.nth(index).scroll_into_view_if_needed()
    page.wait_for_timeout(500)


def _loaded(page: Page, selector: str) -> list[dict]:
    """Every ``img`` under ``selector``, once each has loaded: its source (cut short) and natural width."""
    page.wait_for_function(
        "s => Array.from(document.querySelectorAll(s)).every(i => i.complete)", arg=selector
    )
    return page.evaluate(
        """s => Array.from(document.querySelectorAll(s)).map(
            i => ({src: (i.getAttribute('src') || '').slice(0, 100), width: i.naturalWidth}))""",
        selector,
    )


def _images(page: Page) -> tuple[list[dict], list[list[int]]]:
    """The images of the markdown cells; and for each cell, the natural widths of its output images (image/png:
    figures, diagrams)."""
    _scroll_through(page)
    markdown = _loaded(page, ".jp-MarkdownCell img")
    _loaded(page, ".jp-CodeCell .jp-RenderedImage img")
    outputs = page.evaluate(
        """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell')).map(
            c => Array.from(c.querySelectorAll('.jp-RenderedImage img')).map(i => i.naturalWidth))"""
    )
    return markdown, outputs


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_opens_with_every_figure_and_clean(lab: str, page: Page, path: Path) -> None:
    """Every figure loads: each stored image/png output (a collapsed answer's once expanded) renders with a non-zero
    natural width, and so does each markdown image (the badges need the internet and are left out); the notebook
    opens unmodified."""
    _open(page, lab, path)
    assert not _dirty(page), "marked modified just by opening (stored metadata differs from the kernel's)"
    markdown, outputs = _images(page)
    local = [i for i in markdown if i["src"].startswith(lab) or not i["src"].startswith(("http://", "https://"))]
    broken = [i["src"][:80] for i in local if i["width"] == 0]
    assert not broken, f"broken images: {broken}"
    assert len(local) == _local_images(path), "every markdown figure is rendered"
    stored, collapsed = _stored_images(path)
    assert len(outputs) == len(stored), "one cell on the page per cell of the notebook"
    missing = _not_rendered(stored, outputs, skip=collapsed)
    assert not missing, f"stored image/png outputs not rendered: {missing}"
    assert not page.locator(".jp-Notification-Toast").filter(has_text="news").count(), "no news pop-up"
    assert not _dirty(page), "marked modified after scrolling through"
    if any(stored[i] for i in collapsed):  # a collapsed answer's figure shows once the learner expands it
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:show-all-cell-outputs')")
        _, outputs = _images(page)
        missing = _not_rendered(stored, outputs, skip=set())
        assert not missing, f"collapsed image/png outputs not rendered once expanded: {missing}"


def _run_all(page: Page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp.shell.currentWidget;
            const prompts = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt'));
            const busy = prompts.some(p => p.textContent.includes('*'));
            return !busy && w.sessionContext.session.kernel.status === 'idle';
        }""",
        timeout=240_000, polling=500,
    )


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name.startswith(RUN_ALL)], ids=lambda p: p.stem)
def test_run_all_without_errors_or_stderr(lab: str, page: Page, path: Path) -> None:
    _open(page, lab, path)
    _run_all(page)
    errors = page.locator(f"{ERROR}, .jp-OutputArea-output.jp-mod-error")
    assert errors.count() == 0, f"error output: {errors.first.inner_text()[:500]}"
    stderr = page.locator(STDERR)
    texts = [stderr.nth(i).inner_text()[:200] for i in range(min(stderr.count(), 5))]
    assert stderr.count() == 0, f"{stderr.count()} stderr box(es): {texts}"
    if path.name.startswith("06_"):
        _explorer_redraws(page)


def _figure(explorer) -> str:
    image = explorer.locator(".widget-output img, .jupyter-widgets-output-area img").last
    image.wait_for(state="visible")
    return image.get_attribute("src") or ""


def _redrawn(explorer, before: str, what: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = _figure(explorer)
        if now != before:
            return now
        time.sleep(0.3)
    raise AssertionError(f"the explorer did not redraw after {what}")


def _explorer_redraws(page: Page) -> None:
    """06's explorer is live: a new sentence + Enter, another head, and the causal toggle each redraw it."""
    text = page.locator(".widget-text input[type=text], .widget-text input:not([type])").last
    text.wait_for(state="visible")
    explorer = page.locator(".widget-vbox").filter(has=text).last
    figure = _figure(explorer)

    words = text.input_value().split()
    assert len(words) > 1, "the explorer starts with a sentence"
    text.fill(" ".join(reversed(words)))  # the same words in another order: known to the model
    text.press("Enter")
    figure = _redrawn(explorer, figure, "a new sentence and Enter")

    heads = explorer.locator(".widget-dropdown").filter(has_text="head").locator("select")
    if not heads.count():
        heads = explorer.locator(".widget-dropdown select")
    select = heads.last
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("s => s.options[s.selectedIndex].text")
    select.select_option(label=next(o for o in options if o != current))
    figure = _redrawn(explorer, figure, "picking another head")

    causal = explorer.locator(".widget-checkbox input[type=checkbox]")
    if causal.count():
        causal.first.click()
    else:
        explorer.locator(".widget-toggle-button").filter(has_text="causal").first.click()
    _redrawn(explorer, figure, "toggling causal")


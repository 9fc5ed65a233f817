"""The slides in a real browser, offline: `make slides` decks open with no network, and RISE loads in `make lab`.

Run by ``make test-browser`` (Playwright driving Debian's chromium); skipped otherwise. Two decks are built into a
temporary folder by tools/slides.py (the first time, ``npm ci`` fetches reveal.js and MathJax) and opened from
disk, as a teacher would from a USB stick, with every network request refused. On the first slides of each deck:
the text shows, the maths is typeset by MathJax (no raw ``$``), a figure loads, and nothing was fetched from
outside the deck's folder. Screenshots of failures go to ``browser-failures/``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("MHA_BROWSER_TEST") != "1":
    pytest.skip("browser test: run `make test-browser`", allow_module_level=True)

from playwright.sync_api import Browser, Page, Route  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import slides  # noqa: E402
from test_jupyterlab import _open, browser, lab  # noqa: E402, F401 (fixtures shared with the lab test)

DECKS = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if p.name[:2] in ("03", "05")]
FAILURES = ROOT / "browser-failures"
PRESENT = "section.present > section.present, .slides > section.present:not(.stack)"


@pytest.fixture(scope="module")
def decks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("slides")
    slides.write_decks(DECKS, out)
    return out


@pytest.fixture
def offline_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[tuple[Page, list[str]]]:  # noqa: F811
    """A page that may load files from disk only; yields it and the list of URLs it tried to fetch elsewhere."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, offline=True)
    outside: list[str] = []

    def refuse(route: Route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page, outside
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        FAILURES.mkdir(exist_ok=True)
        page.screenshot(path=str(FAILURES / f"{request.node.name.replace('/', '_')}.png"))
    context.close()


def _settled(page: Page) -> None:
    """Wait until reveal.js is ready and MathJax has nothing left to typeset."""
    page.wait_for_selector(".reveal.ready", state="attached")
    page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0"
                           " && !MathJax.Hub.queue.running")
    page.wait_for_timeout(300)


def _current(page: Page) -> dict:
    return page.evaluate(
        """s => { const sec = Array.from(document.querySelectorAll(s)).pop();
            const text = sec.innerText;
            const prose = Array.from(sec.querySelectorAll('.jp-RenderedMarkdown')).map(m => m.innerText).join(' ');
            const imgs = Array.from(sec.querySelectorAll('.jp-OutputArea-output img'));
            return {text: text, math: sec.querySelectorAll('.MathJax_CHTML').length,
                    raw: (prose.match(/\\$[^$\\n]+\\$/g) || []).length,
                    figures: imgs.map(i => ({width: i.naturalWidth, shown: i.getBoundingClientRect().width}))}; }""",
        PRESENT,
    )


@pytest.mark.parametrize("path", DECKS, ids=lambda p: p.stem)
def test_first_slides_show_text_maths_and_a_figure_offline(decks: Path, offline_page, path: Path) -> None:
    page, outside = offline_page
    page.goto((decks / f"{path.stem}.slides.html").as_uri())
    _settled(page)
    title = path.stem[:2] + " · "
    first = _current(page)
    assert first["text"].lstrip().startswith(title), f"the title slide: {first['text'][:80]!r}"
    seen_math = seen_figure = False
    for _ in range(25):  # the first slides, until both a formula and a figure have shown
        now = _current(page)
        assert now["raw"] == 0, f"raw TeX in a slide's prose (MathJax did not typeset it): {now['text'][:200]!r}"
        seen_math |= now["math"] > 0
        for figure in now["figures"]:
            assert figure["width"] > 0 and figure["shown"] > 0, "a figure that does not load"
            seen_figure = True
        if seen_math and seen_figure:
            break
        page.keyboard.press("Space")
        _settled(page)
    assert seen_math, "no typeset formula on the first slides"
    assert seen_figure, "no figure on the first slides"
    assert not outside, f"the deck tried to fetch from outside its folder: {outside[:3]}"


def test_the_index_lists_the_decks(decks: Path, offline_page) -> None:
    page, outside = offline_page
    page.goto((decks / "index.html").as_uri())
    links = page.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert links == [f"{p.stem}.slides.html" for p in DECKS] and not outside


def test_rise_loads_in_jupyterlab(lab: str, browser: Browser) -> None:  # noqa: F811
    """jupyterlab-rise in the JupyterLab `make lab` runs: its commands exist and the notebook shows its button."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        _open(page, lab, DECKS[0])
        commands = page.evaluate("() => window.jupyterapp.commands.listCommands().filter(c => c.startsWith('RISE'))")
        assert {"RISE:slideshow", "RISE:preview"} <= set(commands), f"RISE commands: {commands}"
        button = page.locator(".jp-NotebookPanel-toolbar [data-command='RISE:preview']")
        assert button.count() == 1, "the slideshow button in the notebook's toolbar"
    finally:
        context.close()

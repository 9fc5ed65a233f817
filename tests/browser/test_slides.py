"""The slides in a real browser, offline: `make slides` decks open with no network, and RISE loads in `make lab`.

Run by ``make test-browser`` (Playwright driving Debian's chromium); skipped otherwise. Every deck is built into a
temporary folder by tools/slides.py (the first time, ``npm ci`` fetches reveal.js and MathJax) and opened from
disk, as a teacher would from a USB stick, with every network request refused. On the first slides of two decks:
the text shows, the maths is typeset by MathJax (no raw ``$``), a figure loads, and nothing was fetched from
outside the deck's folder. In every deck, every (sub)slide fits the 1280 x 800 canvas (as drawn, after the deck's
own shrink-to-fit, see tools/slides.py); a speaker note holds each walkthrough pause. Live RISE in JupyterLab
scrolls a slide taller than the screen. Screenshots of failures go to ``browser-failures/``.
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
import deck_cut  # noqa: E402
import slides  # noqa: E402
from test_jupyterlab import TOKEN, _open, browser, lab  # noqa: E402, F401 (fixtures shared with the lab test)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
DECKS = [p for p in NOTEBOOKS if p.name[:2] in ("03", "05")]
FAILURES = ROOT / "browser-failures"
PRESENT = "section.present > section.present, .slides > section.present:not(.stack)"
REVEAL = "lib/reveal.js/dist/reveal.js"  # the deck loads it through require.js, so it is no global
# Every (sub)slide as drawn: its height on the canvas (the content's height times the deck's shrink-to-fit zoom),
# the canvas height, and its first words.
MEASURE = """reveal => new Promise(done => require([reveal], Reveal => {
    Reveal.configure({transition: 'none'});
    const out = [];
    Array.from(document.querySelectorAll('.reveal .slides > section')).forEach((slide, h) => {
        const stack = slide.querySelectorAll(':scope > section');
        (stack.length ? Array.from(stack) : [slide]).forEach((sub, v) => {
            Reveal.slide(h, v);
            const shown = Array.from(sub.children).filter(c => c.tagName !== 'ASIDE').map(c => c.innerText).join(' ');
            out.push({h: h, v: v, height: sub.scrollHeight * (parseFloat(sub.style.zoom) || 1),
                      notes: Array.from(sub.querySelectorAll('aside.notes')).map(a => a.textContent).join(' '),
                      words: shown.trim().split(/\\s+/).slice(0, 10).join(' ')});
        });
    });
    done({slides: out, canvas: Reveal.getConfig().height});
}))"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every notebook's deck, written by tools/slides.py (13 decks in about 20 s)."""
    out = tmp_path_factory.mktemp("slides")
    slides.write_decks(NOTEBOOKS, out)
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
    assert links == [f"{p.stem}.slides.html" for p in NOTEBOOKS] and not outside


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_every_slide_fits_the_canvas(decks: Path, offline_page, path: Path) -> None:
    """No (sub)slide of the deck is taller than the 1280 x 800 canvas; each walkthrough pause is a speaker note."""
    page, outside = offline_page
    page.goto((decks / f"{path.stem}.slides.html").as_uri())
    _settled(page)
    measured = page.evaluate(MEASURE, REVEAL)
    canvas, shown = measured["canvas"], measured["slides"]
    tall = [f"{path.stem} h{s['h']}/v{s['v']}: {s['height']:.0f} px, {s['words'][:70]!r}"
            for s in shown if s["height"] > canvas + 1]
    assert not tall, f"{len(tall)} of {len(shown)} (sub)slides taller than the {canvas} px canvas:\n" + "\n".join(tall)
    notes = " ".join(s["notes"] for s in shown)
    note = deck_cut.teachers_note(path)
    pauses = deck_cut.pause_questions(note) if note else []
    assert notes.count("Pause for a question:") == len(pauses), "a walkthrough pause missing from the notes"
    assert not outside


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


def test_live_rise_scrolls_a_tall_slide(lab: str, browser: Browser) -> None:  # noqa: F811
    """jupyterlab-rise's slideshow of notebook 04 (the notebook's ``metadata.rise``, written by
    tools/sync_notebooks.py): a (sub)slide taller than the screen scrolls instead of being cut off."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(f"{lab}/rise/notebooks/04_masks_and_dropout.ipynb?token={TOKEN}")
        page.wait_for_selector(".reveal .slides section.present", state="attached")
        page.wait_for_timeout(3000)
        seen = []
        for _ in range(40):
            page.keyboard.press("Space")
            page.wait_for_timeout(300)
            now = page.evaluate("""() => {
                const s = document.querySelector('section.present section.present')
                    || document.querySelector('.slides > section.present');
                return {hash: location.hash, tall: s.scrollHeight, shown: s.clientHeight,
                        overflow: getComputedStyle(s).overflowY}; }""")
            seen.append(now)
            if now["tall"] > 800:
                break
        tall = seen[-1]
        assert tall["tall"] > 800, f"no slide of 04 taller than the screen in the first 40: {seen[-3:]}"
        assert tall["overflow"] == "scroll" and tall["shown"] < tall["tall"], (
            f"RISE cuts {tall['hash']} off ({tall}): is metadata.rise.scroll set? run tools/sync_notebooks.py")
        scrolled = page.evaluate("""() => { const s = document.querySelector('section.present section.present')
            || document.querySelector('.slides > section.present'); s.scrollTop = 200; return s.scrollTop; }""")
        assert scrolled > 0, "the tall slide does not scroll"
    finally:
        context.close()

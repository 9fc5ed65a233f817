"""The built website in headless Chromium, served on 127.0.0.1, every request outside it refused (``make test-site``).

Checks what a reader meets: every page loads with no console error and no failed or outside request, every figure
is drawn and has alt text, every equation is typeset; the launch buttons open the right notebook of the right
edition; the answers are folded and say which exercise they answer; figures lead with their code folded, the code
that teaches stays open, with copy buttons; each notebook page lists its own headings and links its neighbours;
search finds what the series teaches, with or without accents; axe-core finds no serious or critical accessibility
problem, in light and in dark mode; on a phone-sized screen (a real 390 px viewport) no page is wider than the
screen, and the menu and the page's contents open. Each translated edition's site (pt-BR/, zh-CN/, ru/: the table of
editions) the same way: its notebook pages, its launch buttons (<code>/student), its search (Chinese words split by
jieba, Russian ones stemmed), its accessibility; and the language menu in every page's header, listing every
edition, on a phone too. Screenshots of
a few pages go to build/site-screenshots/ (desktop, phone, dark), to look at.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import quote, unquote

import nbformat
import pytest
from site_helpers import ROOT, SHOTS, Visit, new_visit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
SLUG = re.fullmatch(r"https://github\.com/([^/]+/[^/]+?)/?", REPOSITORY).group(1)
EDITION_FOLDER = {"student": "student", "teacher": "notebooks"}
sys.path.insert(0, str(ROOT / "tools"))
from editions import EDITIONS, TRANSLATED  # noqa: E402

WORDS = tomllib.loads((ROOT / "site" / "words.toml").read_text(encoding="utf-8"))
DONE = "/finished|finalizada|conclu|完成|заверш/i"  # Sphinx's "Search finished": English, Portuguese, Chinese, Russian


def _edition_of(path: str):
    """The edition whose site ``path`` (relative to the English site's root) belongs to."""
    return next((e for e in TRANSLATED if path.startswith(f"{e.code}/")), EDITIONS[0])


SETTLE = """async () => {
    for (const img of document.images) { img.loading = 'eager'; }
    await Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null)));
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
    await document.fonts.ready;
}"""

FIGURES_AND_MATHS = """() => {
    const article = document.querySelector('.bd-article') || document.body;
    const imgs = Array.from(article.querySelectorAll('img'));
    const maths = Array.from(article.querySelectorAll('.math'));
    return {
        undrawn: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
        no_alt: imgs.filter(i => !(i.getAttribute('alt') || '').trim() || /^[^\\p{L}\\p{N}]*$/u.test(i.alt))
                    .map(i => i.getAttribute('src')),
        maths: maths.length,
        untypeset: maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60)),
        errors: Array.from(article.querySelectorAll('mjx-merror, [data-mjx-error]')).map(e => e.textContent),
        swallowed: (() => { const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_COMMENT);
            const found = []; while (walk.nextNode()) { if (/<(p|div|section|h[1-6])[\\s>]/.test(walk.currentNode.data))
            found.push(walk.currentNode.data.slice(0, 80)); } return found; })(),
        raw_dollars: Array.from(article.querySelectorAll('p, li, td')).filter(
            e => !e.closest('.cell_output, pre, code') && /\\$[^$\\s][^$]*\\$/.test(e.textContent)
                 && !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80)),
    };
}"""


RELAID = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"  # after a resize


def _pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if "_static" not in p.parts)


def _title(notebook: Path) -> str:
    nb = nbformat.read(notebook, as_version=4)
    return next(c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown")


def _open(visit: Visit, url: str) -> None:
    visit.page.goto(url, wait_until="load")
    visit.page.evaluate(SETTLE)


def test_every_page_loads_draws_its_figures_and_typesets_its_maths_and_fits_a_phone(browser, base_url: str,
                                                                                    site: Path) -> None:
    """Each page of every edition's site once, at 1280 px: it loads cleanly, its figures are drawn, its equations
    typeset, and a notebook's page has its launch buttons, downloads, folded answers, contents, previous and next
    (``_check_notebook_page``); then the same page at 390 px (a real viewport: not one Chromium widens to the
    content), where no page may be wider than the screen. One load serves every check (resizing lays the page out
    again), not one load per check or per screen size."""
    pages = _pages(site)
    assert len(pages) > len(NOTEBOOKS) + 14, f"only {len(pages)} pages were built"
    visit = new_visit(browser, base_url)
    problems: dict[str, list[str]] = {}
    maths = figures = checked = 0
    for path in pages:
        visit.clear()
        _open(visit, base_url + path)
        found = visit.page.evaluate(FIGURES_AND_MATHS)
        maths += found["maths"]
        figures += visit.page.evaluate("() => document.querySelectorAll('.bd-article img').length")
        issues = visit.problems()
        issues += [f"figure not drawn: {s}" for s in found["undrawn"]]
        issues += [f"figure without alt text: {s}" for s in found["no_alt"]]
        issues += [f"equation not typeset: {s}" for s in found["untypeset"]]
        issues += [f"MathJax error: {s}" for s in found["errors"]]
        issues += [f"an unclosed HTML comment swallows the page from: {s}" for s in found["swallowed"]]
        issues += [f"raw $...$ left in the text: {s}" for s in found["raw_dollars"]]
        notebook = NOTEBOOK_PAGE.fullmatch(path)
        if notebook:
            folder = notebook.group(1) or ""
            try:
                _check_notebook_page(visit, site, ROOT / f"{folder}notebooks" / f"{notebook.group(2)}.ipynb", folder)
            except AssertionError as err:
                issues.append(f"notebook page: {' '.join(str(err).split())[:600]}")
            checked += 1
        visit.page.set_viewport_size({"width": 390, "height": 844})
        visit.page.evaluate(RELAID)
        width = visit.page.evaluate(PAGE_WIDTH)
        if width["page"] > 390 or width["wide"]:
            issues.append(f"wider than a phone at 390 px: {width['page']} px; {width['wide']}")
        visit.page.set_viewport_size({"width": 1280, "height": 900})
        if issues:
            problems[path] = issues
    visit.page.context.close()
    assert not problems, "\n".join(f"{p}: {i}" for p, issues in problems.items() for i in issues)
    assert maths > 100 and figures > 50, f"only {maths} equations and {figures} figures across the site"
    assert checked == len(NOTEBOOKS) * len(EDITIONS), f"{checked} notebook pages checked"


NOTEBOOK_PAGE = re.compile(r"((?:[a-z]{2}(?:-[A-Z]{2})?/)?)notebooks/(\d\d_\w+)\.html")


def _check_notebook_page(visit: Visit, site: Path, notebook: Path, folder: str = "") -> None:
    """The open page of ``notebook`` in the site under ``folder`` ('' or 'pt-BR/', ...), whose editions lie in
    ``folder`` of the repository: launch buttons, downloads, answers folded behind the edition's own words
    (site/words.toml), contents, previous and next."""
    page = visit.page
    notebooks = sorted(notebook.parent.glob("[0-9][0-9]_*.ipynb"))
    words = WORDS[folder.rstrip("/") or "en"]
    assert page.evaluate("() => document.documentElement.lang") == (folder.rstrip("/") or "en")
    buttons = page.eval_on_selector_all(
        "a.launch-button", "els => els.map(a => [a.dataset.edition, a.dataset.launch, a.getAttribute('href')])")
    assert len(buttons) == 6, buttons
    for edition, edition_folder in EDITION_FOLDER.items():
        path = f"{folder}{edition_folder}/{notebook.name}"
        assert (ROOT / path).is_file(), f"{path} is missing (make student writes the student edition)"
        expected = {
            "colab": f"https://colab.research.google.com/github/{SLUG}/blob/main/{path}",
            "binder": f"https://mybinder.org/v2/gh/{SLUG}/main?labpath={quote(path, safe='')}",
        }
        got = {kind: href for e, kind, href in buttons if e == edition}
        for kind, url in expected.items():
            assert got[kind] == url, f"{edition} {kind}: {got[kind]} (expected {url})"
        download = nbformat.read(site / folder / "notebooks" / unquote(got["download"]), as_version=4)
        title = next(c.source.splitlines()[0] for c in download.cells if c.cell_type == "markdown")
        assert title == _title(ROOT / path), f"{got['download']} is not {path}: its title is {title!r}"
        outputs = sum(len(c.get("outputs", [])) for c in download.cells)
        assert (outputs == 0) == (edition == "student"), f"{got['download']}: {outputs} outputs"
    assert page.is_visible("a.launch-button[data-edition=student][data-launch=colab]")
    assert not page.is_visible("a.launch-button[data-edition=teacher][data-launch=colab]"), "teacher's edition open"

    nb = nbformat.read(notebook, as_version=4)
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    code_answers = sum(c.cell_type == "code" for c in answers)
    folded = page.eval_on_selector_all(".cell.tag_answer", """els => els.map(c => ({
        folded: !!c.querySelector('details') && !c.querySelector('details').open,
        visible: Array.from(c.querySelectorAll('.cell_input')).some(i => i.checkVisibility())}))""")
    assert len(folded) == code_answers, f"{len(folded)} folded code answers on the page, {code_answers} in the notebook"
    assert all(f["folded"] and not f["visible"] for f in folded), folded
    assert page.locator("details.answer[open]").count() == 0
    prompts = page.eval_on_selector_all(".cell.tag_answer details > summary, details.answer > summary",
                                        "els => els.map(s => s.textContent.trim())")
    numbers = {m.group(1) for c in answers if (m := re.match(r"ex(\d+)", c.metadata["nbgrader"].get("grade_id", "")))}
    for number in numbers:
        assert any(re.match(rf"\D*{number}\b", p) for p in prompts), \
            f"no fold says it answers exercise {number}: {prompts}"

    # Figures lead, their code one click away; the code that teaches stays open, with a copy button.
    figures = page.eval_on_selector_all(".cell.tag_hide-input", """els => els.map(c => ({
        drawn: Array.from(c.querySelectorAll('.cell_output img')).some(i => i.checkVisibility()),
        code: Array.from(c.querySelectorAll('.cell_input pre')).some(p => p.checkVisibility()),
        fold: c.querySelector('details > summary') ? c.querySelector('details > summary').textContent.trim() : ''}))""")
    assert figures, "no figure's code is folded"
    assert all(not f["code"] and f["fold"] for f in figures), figures
    assert sum(f["drawn"] for f in figures) >= len(figures) - 1, figures  # the setup cell has no figure
    open_code = page.locator(".cell:not(.tag_hide-input):not(.tag_answer) > .cell_input pre")
    assert open_code.count() >= 3 and open_code.first.is_visible(), "the code that teaches is not on the page"
    copies = page.locator(".cell_input button.copybtn")
    assert copies.count() >= open_code.count(), f"{copies.count()} copy buttons for {open_code.count()} code cells"

    headings = [re.sub(r"[`*$\\]", "", h).strip() for c in nb.cells if c.cell_type == "markdown"
                for h in re.findall(r"^## (.+)$", c.source, re.MULTILINE)]
    toc = [re.sub(r"[`*$\\]", "", t).strip() for t in page.eval_on_selector_all(
        "#pst-page-toc-nav li.toc-h2 > a", "els => els.map(a => a.textContent)")]
    assert len(toc) == len(headings), f"contents {toc} vs the notebook's ## headings {headings}"

    index = notebooks.index(notebook)
    prev_href = page.get_attribute("a.left-prev", "href")
    next_href = page.get_attribute("a.right-next", "href")
    if index > 0:
        assert prev_href.endswith(f"{notebooks[index - 1].stem}.html"), prev_href
    if index < len(notebooks) - 1:
        assert next_href.endswith(f"{notebooks[index + 1].stem}.html"), next_href
    prompts = page.eval_on_selector_all(".cell.tag_answer details > summary, details.answer > summary",
                                        "els => els.map(s => s.textContent.trim())")
    assert all(words["show_answer"].lower() in p.lower() for p in prompts), prompts
    run = re.sub(r"<[^>]+>", "", words["run"])
    assert page.inner_text(".launch-box").startswith(run[:6]), page.inner_text(".launch-box")


@pytest.mark.parametrize(("home", "query", "expected"), [
    ("", "induction head", ["notebooks/08_heads_that_learn.html", "notebooks/06_inspecting_heads.html"]),
    ("", "KV cache", ["notebooks/11_attention_in_modern_models.html"]),
    ("pt-BR/", "consulta", ["pt-BR/notebooks/03_scaled_dot_product_attention.html"]),
    ("zh-CN/", "掩码", ["zh-CN/notebooks/04_masks_and_dropout.html"]),
    ("ru/", "маска", ["ru/notebooks/04_masks_and_dropout.html"]),
], ids=["induction-head", "kv-cache", "pt-BR-consulta", "zh-CN-mask", "ru-mask"])
def test_search_finds_and_lands(visit: Visit, base_url: str, home: str, query: str, expected: list[str]) -> None:
    """Typed into the search box of the home page; each expected page is among the first results and opens."""
    page = visit.page
    _open(visit, base_url + home)
    page.keyboard.press("Control+k")
    box = page.locator("input[name=q]:visible").first
    box.fill(query)
    box.press("Enter")
    page.wait_for_url(f"**/{home}search.html?q=*")
    page.wait_for_selector("#search-results li a", timeout=30_000)
    # Every result is listed, and each one's summary (fetched from its page) has come: leaving earlier aborts them.
    # ("finished" in English; Sphinx's Portuguese says "finalizada" or "concluída", its Chinese 完成, Russian завершён.)
    page.wait_for_function(f"() => {DONE}.test(document.querySelector('#search-results')?.textContent || '')")
    page.wait_for_load_state("networkidle")
    hrefs = page.eval_on_selector_all("#search-results li > a:first-child",
                                      "els => els.map(a => new URL(a.href).pathname)")
    top = [h.lstrip("/") for h in hrefs[:8]]
    for page_path in expected:
        assert page_path in top, f"search for {query!r} did not rank {page_path} among {top}"
    page.click(f"#search-results li > a[href*='{expected[0].split('/')[-1]}']")
    page.wait_for_url(f"**/{expected[0]}*")
    text = " ".join(page.inner_text(".bd-article").lower().split())
    assert query.lower() in text or query.lower() + "s" in text, f"{query!r} is not on the page search landed on"
    assert not visit.problems(), visit.problems()


def _search(visit: Visit, base_url: str, home: str, query: str) -> list[str]:
    """The result pages of a search typed into ``home``'s search page, in order."""
    page = visit.page
    page.goto(f"{base_url}{home}search.html?q={quote(query)}", wait_until="load")
    page.wait_for_function(f"() => {DONE}.test(document.querySelector('#search-results')?.textContent || '')")
    return page.eval_on_selector_all("#search-results li > a:first-child",
                                     "els => els.map(a => new URL(a.href).pathname)")


@pytest.mark.parametrize(("home", "plain", "accented"), [("pt-BR/", "mascara", "máscara"),
                                                          ("pt-BR/", "atencao", "atenção"),
                                                          ("pt-BR/", "indice", "índice")])
def test_search_without_accents_finds_what_accents_find(visit: Visit, base_url: str, home: str, plain: str,
                                                         accented: str) -> None:
    with_accents = _search(visit, base_url, home, accented)
    without = _search(visit, base_url, home, plain)
    assert len(with_accents) >= 3, f"{accented!r} finds only {with_accents}"
    assert sorted(without) == sorted(with_accents), f"{plain!r}: {without}\n{accented!r}: {with_accents}"


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("path", ["index.html", "notebooks/03_scaled_dot_product_attention.html",
                                  "notebooks/05_multi_head_attention.html", "notebooks/12_heads_of_a_real_model.html",
                                  "pt-BR/index.html", "pt-BR/notebooks/03_scaled_dot_product_attention.html",
                                  "pt-BR/notebooks/04_masks_and_dropout.html", "api/mha_lib.mha.html",
                                  "zh-CN/notebooks/03_scaled_dot_product_attention.html",
                                  "ru/notebooks/04_masks_and_dropout.html"])
def test_no_serious_accessibility_violation(browser, base_url: str, path: str, dark: bool) -> None:
    """axe-core, in light and in dark mode (the colour-scaled tables keep their labels and caption readable)."""
    assert AXE.is_file(), f"{AXE} is missing: npm ci (package.json's axe-core)"
    visit = new_visit(browser, base_url, dark=dark)
    _open(visit, base_url + path)
    assert visit.page.evaluate("() => document.documentElement.dataset.theme") == ("dark" if dark else "light")
    visit.page.add_script_tag(path=str(AXE))
    violations = visit.page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']}))
        .violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.impact} ${v.id}: ${v.help}: ${v.nodes.map(n => n.target.join(' ')).join(', ')}`)""")
    visit.page.context.close()
    assert not violations, "\n".join(violations)


PAGE_WIDTH = """() => ({
    page: document.documentElement.scrollWidth,
    wide: Array.from(document.querySelectorAll('.bd-article *')).filter(e => {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.right <= innerWidth + 1) return false;
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            const o = getComputedStyle(a).overflowX;
            if ((o === 'auto' || o === 'scroll' || o === 'hidden') && a.getBoundingClientRect().right <= innerWidth + 1)
                return false;
        }
        return true; }).slice(0, 3).map(e => e.tagName + ' ' + (e.textContent || '').trim().slice(0, 60)),
})"""


@pytest.mark.parametrize("path", ["index.html", "notebooks/03_scaled_dot_product_attention.html",
                                  "notebooks/06_inspecting_heads.html", "api/mha_lib.mha.html",
                                  "pt-BR/notebooks/03_scaled_dot_product_attention.html",
                                  "zh-CN/notebooks/06_inspecting_heads.html", "ru/index.html"])
@pytest.mark.parametrize("width", [390, 800])
def test_phone_sized_screen_opens_the_menu_and_the_contents(browser, base_url: str, path: str, width: int) -> None:
    """Below 992 px the sidebars are drawers: a tap on the menu button opens the list of pages, a tap on the contents
    button the page's headings, each with its links in view; figures fit; wide tables scroll in their box."""
    visit = new_visit(browser, base_url, width=width, height=844)
    page = visit.page
    _open(visit, base_url + path)
    found = page.evaluate("""() => ({
        wide_images: Array.from(document.querySelectorAll('.bd-article img')).filter(
            i => i.getBoundingClientRect().right > window.innerWidth + 1).length,
        page: document.documentElement.scrollWidth})""")
    assert found["page"] <= width and found["wide_images"] == 0, found
    primary = page.locator(".bd-header-article button.primary-toggle")
    assert primary.count() == 1 and primary.is_visible(), "no visible menu button"
    press = (lambda b: b.tap()) if width < 500 else (lambda b: b.click())  # a phone is touched, a tablet window clicked
    press(primary)
    drawer = page.locator("#pst-primary-sidebar-modal")
    drawer.wait_for(state="visible")
    links = drawer.locator("nav.bd-docs-nav a.reference")
    assert links.count() >= 14, f"the menu lists {links.count()} pages"
    notebook_link = links.filter(has_text=re.compile(r"^\s*0\d ·")).first  # "03 · Scaled dot-product attention"
    assert notebook_link.is_visible() and notebook_link.bounding_box()["x"] >= 0, "the menu's links are off screen"
    page.keyboard.press("Escape")
    drawer.wait_for(state="hidden")
    secondary = page.locator(".bd-header-article button.secondary-toggle")
    if "notebooks/" in path or "api/" in path:
        assert secondary.is_visible(), "no visible button for the page's contents"
        press(secondary)
        contents = page.locator("#pst-secondary-sidebar-modal")
        contents.wait_for(state="visible")
        toc = contents.locator("nav.page-toc a, #pst-page-toc-nav a")
        assert toc.count() >= 3 and toc.first.is_visible(), f"the page's contents show {toc.count()} links"
    assert not visit.problems(), visit.problems()
    page.context.close()


SWITCHES = [  # from, to (the same page in the other language, or the other site's home page)
    ("notebooks/03_scaled_dot_product_attention.html", "pt-BR/notebooks/03_scaled_dot_product_attention.html"),
    ("pt-BR/notebooks/03_scaled_dot_product_attention.html", "notebooks/03_scaled_dot_product_attention.html"),
    ("index.html", "pt-BR/index.html"),
    ("pt-BR/index.html", "index.html"),
    ("pt-BR/notebooks/glossary.html", "notebooks/glossary.html"),
    ("teaching/README.html", "pt-BR/index.html"),
    ("api/mha_lib.mha.html", "pt-BR/index.html"),
    ("notebooks/05_multi_head_attention.html", "zh-CN/notebooks/05_multi_head_attention.html"),
    ("zh-CN/notebooks/05_multi_head_attention.html", "ru/notebooks/05_multi_head_attention.html"),
    ("ru/index.html", "index.html"),
]


@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
@pytest.mark.parametrize(("start", "target"), SWITCHES, ids=[f"{a.split('/')[-1][:8]}-{b}" for a, b in SWITCHES])
def test_language_menu(browser, base_url: str, start: str, target: str, width: int) -> None:
    """The menu is in the page's header, visible (on a phone too), lists every edition by its own name, marks this
    one, and its other edition's entry opens ``target``."""
    visit = new_visit(browser, base_url, width=width, height=900 if width > 500 else 844)
    page = visit.page
    _open(visit, base_url + start)
    here, there = _edition_of(start), _edition_of(target)
    button = page.locator(".bd-header-article .language-menu button.language-switch")
    assert button.count() == 1 and button.is_visible(), "no language menu in the header"
    box = button.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 120 and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    shown = here.name if width > 575 else here.code  # a phone shows the edition's code: the header keeps its width
    assert " ".join(button.inner_text().split()) == shown, button.inner_text()
    assert here.name in button.get_attribute("aria-label")
    button.click()
    items = page.locator(".language-menu .dropdown-item")
    items.first.wait_for(state="visible")
    names = [items.nth(i).inner_text().strip() for i in range(items.count())]
    assert names == [e.name for e in EDITIONS], names
    current = page.locator(".language-menu .dropdown-item[aria-current=page]")
    assert current.get_attribute("hreflang") == here.code
    expected_lang = there.code
    choice = page.locator(f".language-menu .dropdown-item[data-edition='{expected_lang}']")
    assert choice.get_attribute("lang") == expected_lang and choice.is_visible()
    href = choice.get_attribute("href")
    assert not href.startswith(("/", "http")), f"{href} is not relative"
    choice.click()
    page.wait_for_url(base_url + target)
    page.evaluate(SETTLE)
    assert page.evaluate("() => document.documentElement.lang") == expected_lang
    assert page.locator(".bd-header-article .language-menu button.language-switch").is_visible()
    problems = visit.problems()
    page.context.close()
    assert not problems, problems


def test_dark_mode_keeps_figures_on_white(browser, base_url: str) -> None:
    visit = new_visit(browser, base_url, dark=True)
    _open(visit, base_url + "notebooks/08_heads_that_learn.html")
    theme = visit.page.evaluate("() => document.documentElement.dataset.theme")
    backgrounds = visit.page.eval_on_selector_all(
        ".cell_output img", "els => els.map(i => getComputedStyle(i).backgroundColor)")
    visit.page.context.close()
    assert theme == "dark"
    assert backgrounds and all(b == "rgb(255, 255, 255)" for b in backgrounds), backgrounds


SCREENSHOTS = [  # name, path, width, height, dark, scroll to
    ("home-desktop", "index.html", 1280, 900, False, None),
    ("nb03-desktop", "notebooks/03_scaled_dot_product_attention.html", 1280, 900, False, None),
    ("nb03-answer-desktop", "notebooks/03_scaled_dot_product_attention.html", 1280, 900, False, ".tag_answer"),
    ("nb06-phone", "notebooks/06_inspecting_heads.html", 390, 844, False, ".cell_output img"),
    ("nb05-phone-table", "notebooks/05_multi_head_attention.html", 390, 844, False, ".cell_output table"),
    ("nb08-dark", "notebooks/08_heads_that_learn.html", 1280, 900, True, ".cell_output img"),
    ("api-desktop", "api/mha_lib.mha.html", 1280, 900, False, None),
    ("home-phone", "index.html", 390, 844, False, None),
    ("pt-home-desktop", "pt-BR/index.html", 1280, 900, False, None),
    ("pt-home-phone", "pt-BR/index.html", 390, 844, False, None),
    ("pt-nb03-answer-desktop", "pt-BR/notebooks/03_scaled_dot_product_attention.html", 1280, 900, False, ".tag_answer"),
    ("pt-nb03-phone", "pt-BR/notebooks/03_scaled_dot_product_attention.html", 390, 844, False, None),
    ("pt-sidebar-desktop", "pt-BR/index.html", 1280, 900, False, "nav.english-pages"),
    ("nb03-dark-table", "notebooks/03_scaled_dot_product_attention.html", 1280, 900, True, ".cell_output table"),
    ("pt-nb04-dark-table-phone", "pt-BR/notebooks/04_masks_and_dropout.html", 390, 844, True, ".cell_output table"),
    ("nb10-figure-first", "notebooks/10_efficient_attention.html", 1280, 900, False, ".tag_hide-input img"),
    ("nb12-phone-code", "notebooks/12_heads_of_a_real_model.html", 390, 844, False, "p code.literal"),
    ("home-dark-phone", "index.html", 390, 844, True, None),
    ("api-package", "api/mha_lib.html", 1280, 900, False, None),
    ("zh-home-phone", "zh-CN/index.html", 390, 844, False, None),
    ("zh-nb06-figure", "zh-CN/notebooks/06_inspecting_heads.html", 1280, 900, False, ".cell_output img"),
    ("ru-nb03-desktop", "ru/notebooks/03_scaled_dot_product_attention.html", 1280, 900, False, None),
    ("ru-nb09-dark-phone", "ru/notebooks/09_which_heads_matter.html", 390, 844, True, ".cell_output img"),
]


@pytest.mark.parametrize(("name", "path", "width", "height", "dark", "scroll"), SCREENSHOTS,
                         ids=[s[0] for s in SCREENSHOTS])
def test_screenshot(browser, base_url: str, name: str, path: str, width: int, height: int, dark: bool,
                    scroll: str | None) -> None:
    """Screenshots to look at (build/site-screenshots/); the page must load cleanly."""
    visit = new_visit(browser, base_url, width=width, height=height, dark=dark)
    _open(visit, base_url + path)
    if scroll:
        visit.page.locator(scroll).first.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    visit.page.screenshot(path=str(SHOTS / f"{name}.png"))
    problems = visit.problems()
    visit.page.context.close()
    assert not problems, problems

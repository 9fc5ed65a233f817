"""The built website's files (``make test-site``): links and anchors, the pages it must have, the API reference,
the publishing workflow, and the site's address written in one place; the Portuguese site (build/site/pt-BR): its
pages, its words, its launch URLs, its links to the English-only pages, and the language switch of every page."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
import yaml
from site_helpers import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(ROOT / "tools"))
import editions  # noqa: E402
import site_build  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
URLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MENU_ITEM = re.compile(r'<a class="dropdown-item language-menu__item" data-edition="(?P<code>[^"]+)"\s+'
                       r'href="(?P<href>[^"]+)"\s+hreflang="(?P<hreflang>[^"]+)" lang="(?P<lang>[^"]+)"[^>]*>'
                       r'(?P<text>[^<]*)</a>')
PORTUGUESE = site_build.edition_site("pt-BR")
MARKERS = re.compile(r"NBVAL_[A-Z_]+|### (?:BEGIN|END) (?:SOLUTION|HIDDEN TESTS)")
ENGLISH_WORDS = ["Show the answer", "Hide the answer", "Open in Colab", "Open in Binder", "Download .ipynb",
                 "Run this notebook", "For teachers", "An interactive explorer", "Skip to main content", "Back to top",
                 "Search...", "Toggle primary sidebar", "Toggle secondary sidebar", "On this page", "Color mode",
                 'aria-label="Main"', "previous page", "next page", "By The series", "the series' authors"]


def _text(path: Path) -> str:
    """A page's text: tags removed, whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")).split())


def _bold_terms(source: str) -> list[str]:
    return [" ".join(t.split()) for t in re.findall(r"\*\*([^*`$]+?)\*\*", source) if ":" not in t][:5]


class _Page(HTMLParser):
    """The ids of a page and the targets of its links (a, link, img, script)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        target = a.get("href") if tag in ("a", "link") else a.get("src") if tag in ("img", "script") else None
        if target:
            self.links.append(target)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def pages(site: Path) -> dict[Path, _Page]:
    return {p: _parse(p) for p in sorted(site.rglob("*.html")) if "_static" not in p.relative_to(site).parts}


def test_every_internal_link_and_anchor_resolves(site: Path, pages: dict[Path, _Page]) -> None:
    broken = []
    checked = 0
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.is_file() or site.resolve() not in target.resolve().parents:
                broken.append(f"{path.relative_to(site)}: {link} (no such file in the site)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {link} (no #{parts.fragment} there)")
    assert checked > 1000, f"only {checked} internal links checked"
    assert not broken, "\n".join(broken)


def test_no_page_loads_anything_from_outside(pages: dict[Path, _Page], site: Path) -> None:
    """Scripts, style sheets, fonts and images come from the site itself (links to elsewhere are fine)."""
    outside = []
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|img|link|iframe|source)\b[^>]*>", text):
            is_link = tag.startswith("<link")
            if is_link and not re.search(r'rel="(?:stylesheet|preload|modulepreload|icon|shortcut icon)"', tag):
                continue
            if re.search(r'(?:src|href)="(?:https?:)?//', tag):
                outside.append(f"{path.relative_to(site)}: {tag}")
    assert not outside, "\n".join(outside[:20])
    css = [p for p in site.rglob("*.css") if re.search(r"url\((['\"]?)(https?:)?//", p.read_text(errors="ignore"))]
    assert not css, f"style sheets that load from outside: {css}"


def test_home_page_has_the_series_and_how_to_run_it(site: Path, pages: dict[Path, _Page]) -> None:
    home = pages[site / "index.html"]
    for nb in NOTEBOOKS:
        assert f"notebooks/{nb.stem}.html" in home.links, f"the home page does not link {nb.stem}"
    text = (site / "index.html").read_text()
    assert re.search(r"<h2[^>]*>Who it is for", text) and re.search(r"<h2[^>]*>How to run it", text)
    for guide in ["teaching/README.html", "benchmarks/README.html", "api/index.html", "notebooks/glossary.html"]:
        assert (site / guide).is_file(), guide
    for md in (ROOT / "teaching").glob("*.md"):
        assert (site / "teaching" / f"{md.stem}.html").is_file(), f"no page for teaching/{md.name}"


@pytest.mark.parametrize(("folder", "lead"), [("", "What you will learn"), ("pt-BR/", "O que você vai aprender"),
                                              ("zh-CN/", "你将学到什么"), ("ru/", "Чему вы научитесь")])
def test_home_page_opens_with_what_a_reader_will_learn(site: Path, folder: str, lead: str) -> None:
    """The first paragraph under the title says what the series teaches; a picture, then the series, come before
    who it is for and how to run it; no maintainer prose (file names as link texts, the test machinery)."""
    text = (site / folder / "index.html").read_text()
    article = text[text.index("<h1"):]
    first = re.search(r"<p>(.*?)</p>", article, re.DOTALL).group(1)
    assert lead in first, f"the home page opens with {first[:120]!r}"
    language = next((lang for lang in site_build.LANGUAGES if f"{lang.folder}/" == folder), site_build.SOURCE)
    series = re.search(rf"<h2[^>]*>{re.escape(language.words['series'])}", article)
    positions = [article.find("<img"), series.start() if series else -1]
    assert all(p > 0 for p in positions) and positions == sorted(positions), positions
    assert f"{language.readme}</a>" not in article and "re-executed by the tests" not in article


def test_glossary_page_is_notebook_00s(site: Path) -> None:
    text = re.sub(r"<[^>]+>", " ", (site / "notebooks" / "glossary.html").read_text())
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    sections = [c.source for c in nb.cells
                if c.cell_type == "markdown" and re.match(r"## .*(Notation|[Gg]lossary|[Ww]ords)", c.source)]
    assert sections, "notebook 00 has no notation or glossary section"
    for source in sections:
        bold = re.findall(r"\*\*([^*`$]+?)\*\*", source)[:5]
        for term in bold:
            assert term.strip() in text, f"the glossary page misses {term!r}"


def _public_modules() -> list[str]:
    import mha_lib

    return sorted(m.name for m in pkgutil.walk_packages(mha_lib.__path__, "mha_lib.")
                  if not any(part.startswith("_") for part in m.name.split(".")))


def test_api_reference_documents_every_public_name_once(site: Path) -> None:
    """Autosummary's page per module; every name a module exports is documented, once, where it is defined; the
    package's page lists ``mha_lib.__all__`` with links to those places."""
    import mha_lib

    modules = _public_modules()
    missing = [f"{m}: no page" for m in ["mha_lib", *modules] if not (site / "api" / f"{m}.html").is_file()]
    ids: dict[str, int] = {}
    for page in (site / "api").glob("*.html"):
        for anchor in _parse(page).ids:
            ids[anchor] = ids.get(anchor, 0) + 1
    for module in modules:
        for name in getattr(importlib.import_module(module), "__all__", []):
            obj = getattr(importlib.import_module(module), name)
            if inspect.isclass(obj) or inspect.isroutine(obj):
                private = any(part.startswith("_") for part in obj.__module__.split("."))
                target = f"{module}.{name}" if private else f"{obj.__module__}.{obj.__qualname__}"
                times = ids.get(target, 0)
            else:  # a constant or an alias: where it is assigned, which autodoc finds and the test need not
                target = f"mha_lib...{name}"
                times = sum(n for anchor, n in ids.items() if anchor.startswith("mha_lib.")
                            and anchor.rsplit(".", 1)[-1] == name)
            if times != 1:
                missing.append(f"{module}.{name} (documented {times} times as {target})")
    package = (site / "api" / "mha_lib.html").read_text()
    for name in mha_lib.__all__:
        obj = getattr(mha_lib, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue
        href = re.search(rf'<a class="reference internal" href="(?P<href>[^"]+)"[^>]*><code[^>]*><span class="pre">'
                         rf'{re.escape(name)}</span>', package)
        if href is None or not href["href"].endswith(f"#{obj.__module__}.{obj.__qualname__}"):
            missing.append(f"mha_lib.{name}: the package's page does not link it where it is documented")
    assert not missing, "\n".join(missing)
    mha = (site / "api" / f"{mha_lib.MultiHeadAttention.__module__}.html").read_text()
    assert "num_heads" in mha and "trace" in mha, "MultiHeadAttention's signature or methods are missing"


def test_launch_urls_name_the_edition() -> None:
    urls = site_build.launch_urls("student", "03_x.ipynb")
    assert urls["colab"].endswith("/blob/main/student/03_x.ipynb")
    assert urls["binder"].endswith("/main?labpath=student%2F03_x.ipynb")
    with pytest.raises(ValueError, match="edition"):
        site_build.launch_urls("teachers", "03_x.ipynb")


def test_figure_alt_text() -> None:
    assert site_build.figure_alt('show_diagram("03_x", "One query scores five keys")', "h") == \
        "One query scores five keys"
    assert site_build.figure_alt('ax.set_title(f"head {h}")\nfig.suptitle("Weights")', "h") == "Figure: head …; Weights"
    assert site_build.figure_alt("plt.plot(x)", "3 · Softmax") == "Figure: 3 · Softmax"


def test_workflow_publishes_the_site_on_push_to_main() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    on = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads the key `on` as True
    assert on["push"]["branches"] == ["main"]
    assert workflow["permissions"]["pages"] == "write" and workflow["permissions"]["id-token"] == "write"
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    assert any("make site" in s.get("run", "") for s in steps)
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload and upload[0]["with"]["path"] == str(site_build.OUT.relative_to(ROOT))
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in steps)
    runs = [s.get("run", "") for s in steps]
    tested = next((i for i, r in enumerate(runs) if "make test-site" in r or "tests/site" in r), None)
    uploaded = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert tested is not None and tested < uploaded, "the workflow publishes without running the site's tests first"


def test_workflow_is_valid() -> None:
    """GitHub's workflow schema (check-jsonschema's vendored copy, offline); actionlint too, where installed."""
    checker = Path(sys.executable).parent / "check-jsonschema"
    result = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    if shutil.which("actionlint"):
        result = subprocess.run(["actionlint", str(WORKFLOW)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_site_address_is_written_in_one_place() -> None:
    """pyproject's [project.urls] Documentation; the README links it; nothing else spells it out."""
    address = URLS["Documentation"]
    assert re.fullmatch(r"https://[a-z0-9-]+\.github\.io/[^/]+/", address), address
    assert f"]({address})" in (ROOT / "README.md").read_text(), "README.md does not link the site"
    files = [WORKFLOW, ROOT / "Makefile", *(ROOT / "site").rglob("*.*"), *(ROOT / "tools").glob("site*.py")]
    spelled = [p for p in files if p.is_file() and address.rstrip("/") in p.read_text(errors="ignore")]
    assert not spelled, f"the site's address is also written in {spelled}: read it from pyproject.toml"


def test_ci_builds_and_reads_the_site() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert '"test-site:chromium-apt:site_job"' in ci, ".ci/run has no test-site job"
    job = ci.split("site_job() {")[1].split("\n}\n")[0]
    assert "make --no-print-directory test-site SITE_VENV=.venv" in job, "the site job runs make test-site"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-site: site$", makefile, re.MULTILINE), "make test-site must build the site first"


TRANSLATED = site_build.LANGUAGES[1:]  # every translated edition's site, from the table of editions
BY_CODE = pytest.mark.parametrize("language", TRANSLATED, ids=lambda lang: lang.code)


def _notebooks(language) -> list[Path]:
    return sorted((ROOT / language.code / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@BY_CODE
def test_translated_site_has_every_notebook_and_the_glossary(site: Path, language) -> None:
    notebooks = _notebooks(language)
    assert notebooks and len(notebooks) == len(NOTEBOOKS), f"{language.code}/notebooks/ does not mirror notebooks/"
    for nb in notebooks:
        page = site / language.folder / "notebooks" / f"{nb.stem}.html"
        assert page.is_file(), f"no {language.code} page for {nb.relative_to(ROOT)}"
        title = next(c.source for c in nbformat.read(nb, as_version=4).cells if c.cell_type == "markdown")
        title = re.sub(r"[`*$\\]", "", title.splitlines()[0].removeprefix("# "))
        assert title in _text(page), f"{page.name}: the {language.code} title {title!r} is not on the page"
    for name in ["index.html", "search.html", "notebooks/glossary.html"]:
        assert (site / language.folder / name).is_file(), f"{language.folder}/{name}"


def test_pages_say_their_language(site: Path, pages: dict[Path, _Page]) -> None:
    """<html lang> is the edition's code under its folder (pt-BR/, zh-CN/, ru/) and en elsewhere; Sphinx's own search
    runs in that language (Chinese: split into words by jieba)."""
    wrong = []
    folders = {lang.folder: lang.code for lang in TRANSLATED}
    for path in pages:
        expected = folders.get(path.relative_to(site).parts[0], "en")
        found = re.search(r"<html[^>]*\blang=\"([^\"]+)\"", path.read_text(encoding="utf-8"))
        if not found or found.group(1) != expected:
            wrong.append(f"{path.relative_to(site)}: lang={found and found.group(1)} (expected {expected})")
    assert not wrong, "\n".join(wrong)
    for language in TRANSLATED:
        options = (site / language.folder / "_static" / "documentation_options.js").read_text()
        assert re.search(rf"LANGUAGE: '{language.sphinx.replace('_', '[-_]')}'", options), options


@BY_CODE
def test_english_only_pages_are_built_once_and_linked_from_each_translated_site(site: Path, language) -> None:
    words, folder = language.words, language.folder
    for english in ["teaching", "benchmarks", "api"]:
        assert not (site / folder / english).exists(), f"{folder}/{english} was built: the English page is enough"
    for page in ["index.html", "notebooks/03_scaled_dot_product_attention.html"]:
        text = (site / folder / page).read_text()
        for target in ["teaching/README.html", "benchmarks/README.html", "api/index.html"]:
            href = "../" * (page.count("/") + 1) + target
            link = re.search(rf'<a [^>]*href="{re.escape(href)}"[^>]*>([^<]*)</a>', text)
            assert link, f"{folder}/{page} does not link the English {target} ({href})"
            assert words["in_source"] in link.group(1), f"{folder}/{page}: the link to {target} does not say English"
            assert (site / target).is_file(), target
    sidebar = _text(site / folder / "index.html")
    for caption in [words["notebooks"], words["teachers"], words["benchmark"], words["library"]]:
        assert caption in sidebar, f"the {language.code} sidebar has no {caption!r}"


@BY_CODE
def test_translated_home_page(site: Path, pages: dict[Path, _Page], language) -> None:
    folder = language.folder
    home = pages[site / folder / "index.html"]
    for nb in _notebooks(language):
        assert f"notebooks/{nb.stem}.html" in home.links, f"the {language.code} home page does not link {nb.stem}"
    text = (site / folder / "index.html").read_text()
    own = (ROOT / "site" / language.home).read_text(encoding="utf-8")
    for heading in [*re.findall(r"^## (.+)$", own, re.M), language.words["series"]]:
        assert re.search(rf"<h2[^>]*>{re.escape(heading)}", text), f"no '## {heading}' on the {language.code} home"
    readme = (ROOT / language.readme).read_text()
    assert readme.splitlines()[0].removeprefix("# ") in _text(site / folder / "index.html")
    commands = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1)
    for line in commands.splitlines():  # the command and its comment in the edition's language
        assert all(" ".join(part.split()) in _text(site / folder / "index.html") for part in line.split("#")), line
    assert "mybinder.org/badge" not in text and "colab-badge" not in text, "the README's badges (images from outside)"
    assert f'href="{URLS["Documentation"]}{folder}/"' not in text, "the home page links itself on the published site"
    assert 'href="notebooks/glossary.html"' in text and 'href="../teaching/README.html"' in text


@BY_CODE
def test_translated_glossary_page_is_notebook_00s(site: Path, language) -> None:
    text = _text(site / language.folder / "notebooks" / "glossary.html")
    assert language.words["glossary"].splitlines()[0].removeprefix("# ") in text
    nb = nbformat.read(_notebooks(language)[0], as_version=4)
    sections = [c.source for c in nb.cells if c.cell_type == "markdown"
                and re.match(rf"## .*({language.words['glossary_sections']})", c.source, re.I)]
    assert len(sections) >= 2, f"{language.code} notebook 00 has no notation or glossary sections"
    for source in sections:
        heading = source.splitlines()[0].removeprefix("## ").strip()
        assert heading in text, f"the {language.code} glossary page misses the section {heading!r}"
        for term in _bold_terms(source):
            assert term in text, f"the {language.code} glossary page misses {term!r}"


@BY_CODE
def test_translated_pages_are_in_their_language(site: Path, language) -> None:
    """The site's own words (launch box, folded answers, the theme's) are the edition's on every page of its site."""
    found = []
    for path in sorted((site / language.folder).rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r'<a class="[^"]*language-switch.*?</a>', "", text, flags=re.DOTALL)  # the switch's own title
        found += [f"{path.relative_to(site)}: {w!r}" for w in ENGLISH_WORDS if w in text]
    assert not found, "\n".join(found)
    words = language.words
    nb03 = (site / language.folder / "notebooks" / "03_scaled_dot_product_attention.html").read_text()
    run = re.sub(r"<[^>]+>", "", words["run"])
    for expected in [run[:6], words["colab"], words["binder"], words["download"], words["show_answer"].lower(),
                     words["teacher"].split(":")[0].split("：")[0], words["search_bar"].rstrip(".…"),
                     words["theme"]["previous page"], words["theme"]["next page"]]:
        assert expected in nb03 or expected in nb03.lower(), f"{expected!r} is not on the {language.code} notebook 03"
    nb06 = (site / language.folder / "notebooks" / "06_inspecting_heads.html").read_text()
    assert words["widget"].strip("*")[:8] in nb06, f"the widget note is not in the {language.code} words"


@BY_CODE
def test_translated_launch_urls_open_the_editions_copies(language) -> None:
    code = language.code
    urls = site_build.launch_urls("student", "03_x.ipynb", language)
    assert urls["colab"].endswith(f"/blob/main/{code}/student/03_x.ipynb")
    assert urls["binder"].endswith(f"/main?labpath={code}%2Fstudent%2F03_x.ipynb")
    teacher = site_build.launch_urls("teacher", "03_x.ipynb", language)
    assert teacher["colab"].endswith(f"/blob/main/{code}/notebooks/03_x.ipynb")
    box = site_build.launch_box("03_x.ipynb", language)
    assert language.words["colab"] in box and "Open in" not in box and urls["binder"] in box


@BY_CODE
def test_translated_downloads_are_the_editions_copies(site: Path, language) -> None:
    for edition, folder in site_build.EDITIONS.items():
        for nb in sorted((ROOT / language.code / folder).glob("[0-9][0-9]_*.ipynb")):
            download = site / language.folder / "ipynb" / edition / nb.name
            assert download.read_bytes() == nb.read_bytes(), \
                f"{download.relative_to(site)} is not {nb.relative_to(ROOT)}"


def test_links_between_the_sites_are_relative(site: Path) -> None:
    """A staged link to a page of the other site: `other-site:` and its relative URL, which conf.py makes a link."""
    rewrite = site_build.rewrite_links
    pt, en = PORTUGUESE, site_build.SOURCE
    assert rewrite("[g](teaching/README.md#a)", ROOT, pt.stage, pt) == "[g](other-site:../teaching/README.html#a)"
    assert rewrite("[e](README.md)", ROOT, pt.stage / "notebooks", pt) == "[e](other-site:../../index.html)"
    assert rewrite("[n](04_masks_and_dropout.ipynb)", ROOT / "pt-BR" / "notebooks", pt.stage / "notebooks", pt) == \
        "[n](04_masks_and_dropout.ipynb)"
    assert rewrite("[p](README.pt-BR.md)", ROOT, en.stage / "notebooks", en) == "[p](other-site:../pt-BR/index.html)"
    assert rewrite("[s](../student)", ROOT / "pt-BR" / "notebooks", pt.stage / "notebooks", pt) == \
        f"[s](https://github.com/{site_build.repository_slug()}/tree/main/pt-BR/student)"
    text = (site / "pt-BR" / "index.html").read_text()
    assert site_build.OTHER_SITE not in text and 'href="../index.html"' in text


def test_every_page_has_the_language_menu(site: Path, pages: dict[Path, _Page]) -> None:
    """One menu in the header listing every edition of locale/editions.toml: the same page in that edition's site,
    or its home page; relative links; the page's own edition marked current."""
    problems, same = [], 0
    folders = {lang.code: lang.folder for lang in site_build.LANGUAGES}
    for path in pages:
        relative = path.relative_to(site)
        here = next((lang for lang in site_build.LANGUAGES[1:] if relative.parts[0] == lang.folder),
                    site_build.SOURCE)
        text = path.read_text(encoding="utf-8")
        items = list(MENU_ITEM.finditer(text))
        if text.count('class="dropdown language-menu"') != 1:
            problems.append(f"{relative}: {text.count('language-menu')} language menus")
        if [(i["code"], i["text"]) for i in items] != [(e.code, e.name) for e in editions.EDITIONS]:
            problems.append(f"{relative}: the menu lists {[(i['code'], i['text']) for i in items]}")
            continue
        inner = relative.relative_to(here.folder) if here.folder else relative
        for item in items:
            if item["hreflang"] != item["code"] or item["lang"] != item["code"]:
                problems.append(f"{relative}: {item.group(0)!r}")
            if urlsplit(item["href"]).scheme or item["href"].startswith("/"):
                problems.append(f"{relative}: {item['href']} is not relative")
            root = site / folders[item["code"]] if folders[item["code"]] else site
            counterpart = root / inner
            expected = counterpart if counterpart.is_file() else root / "index.html"
            if (path.parent / item["href"]).resolve() != expected.resolve():
                problems.append(f"{relative}: {item['code']} opens {item['href']} "
                                f"(expected {expected.relative_to(site)})")
            same += item["code"] != here.code and counterpart.is_file()
            if ('aria-current="page"' in item.group(0)) != (item["code"] == here.code):
                problems.append(f"{relative}: {item['code']} marked current wrongly")
    assert not problems, "\n".join(problems[:40])
    assert same >= 2 * (len(NOTEBOOKS) + 2), f"only {same} pages switch to the same page in another edition"


def test_no_test_or_grading_marker_in_any_page(site: Path, pages: dict[Path, _Page]) -> None:
    """nbval's and nbgrader's markers are the tests' and the grader's, not the reader's: staging leaves them out."""
    found = [f"{p.relative_to(site)}: {m}" for p in pages
             for code in re.findall(r'<div class="cell_input[^"]*">(.*?)</pre>', p.read_text(encoding="utf-8"),
                                    re.DOTALL)
             for m in MARKERS.findall(code)]
    assert not found, "\n".join(found[:20])
    assert MARKERS.search((ROOT / "notebooks" / "03_scaled_dot_product_attention.ipynb").read_text()), \
        "the notebooks have no markers left to strip: this test would prove nothing"


def test_every_page_has_a_description_and_a_card(site: Path, pages: dict[Path, _Page]) -> None:
    """sphinxext-opengraph: a description, og:title/url/image on every page; the card is the site's own file."""
    problems = []
    for path in pages:
        if path.name == "search.html":
            continue
        text = path.read_text(encoding="utf-8")
        description = re.search(r'<meta name="description" content="([^"]*)"', text)
        if not description or len(description.group(1)) < 40:
            problems.append(f"{path.relative_to(site)}: description {description and description.group(1)!r}")
        for prop in ("og:title", "og:url", "og:image", "og:description"):
            if f'property="{prop}"' not in text:
                problems.append(f"{path.relative_to(site)}: no {prop}")
    assert not problems, "\n".join(problems[:30])
    assert (site / "_static" / "card.png").is_file()
    nb03 = (site / "notebooks" / "03_scaled_dot_product_attention.html").read_text()
    card = re.search(r'<meta property="og:image" content="([^"]+)"', nb03).group(1)
    assert card == URLS["Documentation"] + "_static/card.png", card


def test_print_to_pdf_and_one_search_field(site: Path) -> None:
    """The theme's download menu offers "Print to PDF" (site.css's print styles); one search field per page."""
    for page in ["notebooks/03_scaled_dot_product_attention.html",
                 "pt-BR/notebooks/03_scaled_dot_product_attention.html",
                 "index.html", "api/mha_lib.mha.html"]:
        text = (site / page).read_text()
        assert "window.print()" in text, f"{page}: no print button"
        fields = text.count('class="btn search-button-field')
        assert fields == 1, f"{page}: {fields} search fields (the theme's top bar is back?)"
    assert "@media print" in (site / "_static" / "site.css").read_text()


def test_the_site_is_published_small(site: Path) -> None:
    """MathJax once (the English site's), no unlinked jupyter_execute/, no general index."""
    assert not list(site.rglob("jupyter_execute")), "MyST-NB's jupyter_execute/ is published"
    mathjax = [p.relative_to(site) for p in site.rglob("tex-chtml.js")]
    assert mathjax == [Path("_static/mathjax/tex-chtml.js")], mathjax
    assert not list(site.rglob("genindex.html"))
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    # the English site (its pages, the API, MathJax) about 30 MB; each translated one about 21 MB (pages, figures,
    # both editions' .ipynb downloads)
    limit = 32e6 + 24e6 * len(TRANSLATED)
    assert size < limit, f"the site is {size / 1e6:.0f} MB (limit {limit / 1e6:.0f} MB)"


def test_pages_in_both_languages_name_each_other(site: Path) -> None:
    """<link rel="alternate" hreflang> to the published address of each language's version, for search engines."""
    for relative in ["index.html", "notebooks/03_scaled_dot_product_attention.html", "notebooks/glossary.html"]:
        for page in (site / relative, site / "pt-BR" / relative):
            text = page.read_text()
            for code, url in [("en", URLS["Documentation"] + relative),
                              ("pt-BR", URLS["Documentation"] + "pt-BR/" + relative)]:
                assert f'<link rel="alternate" hreflang="{code}" href="{url}">' in text, f"{page}: no {code} alternate"
    assert 'rel="alternate"' not in (site / "teaching" / "README.html").read_text()

"""Build the series' website (``make site``): stage its sources in ``build/site-src``, then run Sphinx.

One site per edition of the table of editions (``locale/editions.toml``, read through tools/editions.py), built by
the same code: the English one from ``notebooks/``, ``student/`` and ``README.md`` into ``build/site``, and each
translated one (``pt-BR``...) from its own folders, staged in ``build/site-src-<code>`` and built into
``build/site/<code>``, with Sphinx's own words in its language. The teacher's guide, the benchmark page and the API
reference are English only: the other sites link to those pages of the English one and say so. Every page carries a
language menu (site/_templates/language-switch.html) listing every edition: the same page in that edition's site, or
its home page where there is none. All links between the sites are relative, so they work offline and under any path.

Nothing is executed: each notebook page shows the outputs committed in the teacher's edition, staged by
``tools/site_stage.py`` (launch buttons, folded answers, figures before their code, no test markers, alt text). The
API reference is Sphinx's autosummary and autodoc (``site/api/index.rst``, ``site/_templates/autosummary/``): a page
per public module of ``mha_lib``, each name documented once, in the module that defines it. MathJax comes from the
``mathjax3`` npm package (``npm ci``) and is served once, from the English site's ``_static``; no page loads anything
from outside the site. The site's address and the repository are read from ``pyproject.toml`` ([project.urls]).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from site_stage import (  # noqa: E402,F401 (the names the tests and conf.py use from here)
    BRANCH,
    EDITIONS,
    LANGUAGES,
    OTHER_SITE,
    OUT,
    ROOT,
    SITE,
    SOURCE,
    Language,
    figure_alt,
    glossary_page,
    launch_box,
    launch_urls,
    project_urls,
    repository_slug,
    rewrite_links,
    stage_notebook,
)
from site_stage import language as edition_site  # noqa: E402,F401 (an edition's site, by its code)

# The figures' Chinese font serves the Chinese pages too: mha_lib/fonts/ read as a file, as the site's venv need not
# have mha_lib installed (conf.py imports it from the checkout for autodoc).
_FONTS = importlib.util.spec_from_file_location("mha_fonts", ROOT / "mha_lib" / "fonts" / "__init__.py")
FONTS = importlib.util.module_from_spec(_FONTS)
_FONTS.loader.exec_module(FONTS)
DOCTREES = ROOT / "build" / "site-doctrees"  # Sphinx's pickles, kept out of the published site
MATHJAX = ROOT / "node_modules" / "mathjax3" / "es5"
# What tex-chtml.js loads: itself, the TeX extensions it autoloads, its fonts, the menu and its accessibility tools.
MATHJAX_PARTS = ["tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y", "sre",
                 "adaptors"]
CARD = "images/05_multi_head_attention.png"  # every page's social card (og:image), published at _static/card.png


def site_url(language: Language = SOURCE) -> str:
    """The published address of ``language``'s site (pyproject's Documentation, then its folder)."""
    return project_urls()["Documentation"] + (f"{language.folder}/" if language.folder else "")


def readme_title(language: Language = SOURCE) -> str:
    """The title of ``language``'s README (its first line, without the '# '): the site's title."""
    return (ROOT / language.readme).read_text().splitlines()[0].removeprefix("# ").strip()


def _readme_section(readme: str, title: str, name: str = "README.md") -> str:
    """The body of README's ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f"{name} has no '## {title}' section for the home page")
    return match.group(1).strip()


def home_page(language: Language = SOURCE) -> str:
    """index.md: the README's title, site/home*.md's text (what a reader will learn first), the README's series
    table where the text says ``{{series}}`` and its commands where it says ``{{commands}}``, and the toctrees."""
    words = language.words
    readme = (ROOT / language.readme).read_text()
    commands = re.search(r"```bash\n.*?```", readme.split("\n## ", 1)[0], re.DOTALL)
    series = f"## {words['series']}\n\n{_readme_section(readme, words['series'], language.readme)}"
    home = (SITE / language.home).read_text()
    for placeholder in ("{{series}}", "{{commands}}"):
        if placeholder not in home:
            raise ValueError(f"site/{language.home} has no {placeholder} for the home page")
    home = home.replace("{{commands}}", commands.group(0) if commands else "").replace("{{series}}", series)
    stage = language.stage
    notebooks = sorted(p.stem for p in (stage / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    toctrees = [(words["notebooks"], [f"notebooks/{n}" for n in notebooks] + ["notebooks/glossary"])]
    if language.is_source:  # the pages only the English site has (the others link them: english_pages)
        notes = sorted(f"teaching/{p.stem}" for p in (stage / "teaching").glob("[0-9][0-9]_*.md"))
        toctrees += [(words["teachers"], ["teaching/README", *notes]), (words["benchmark"], ["benchmarks/README"]),
                     (words["library"], ["api/index"])]
    tocs = "\n".join(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(entries) + "\n```\n"
                     for caption, entries in toctrees)
    return f"# {readme_title(language)}\n\n{home}\n\n{tocs}"


def site_pages(language: Language) -> list[str]:
    """The pages (Sphinx's names) of ``language``'s site that are the same page in each edition's site."""
    return ["index", "search", "notebooks/glossary"] + [f"notebooks/{p.stem}" for p in language.notebooks()]


def language_menu(language: Language) -> dict:
    """What site/_templates/language-switch.html needs: every edition's site, its root from this one, its pages."""
    here = language.folder or "."
    return {"label": language.words["languages"], "current": language.code,
            "editions": [{"code": other.code, "name": other.name, "pages": site_pages(other),
                          "root": os.path.relpath(other.folder or ".", here) + "/", "site_url": site_url(other)}
                         for other in LANGUAGES]}


def english_pages(language: Language) -> dict:
    """The English-only pages another edition's sidebar links (site/_templates/english-pages.html); none in English."""
    if language.is_source:
        return {}
    words = language.words
    root = os.path.relpath(".", language.folder) + "/"
    return {"label": words["english_pages"],
            "pages": [{"caption": caption, "title": f"{title} {words['in_source']}", "href": root + page}
                      for caption, title, page in [
                          (words["teachers"], words["teachers_guide"], "teaching/README.html"),
                          (words["benchmark"], words["benchmark_page"], "benchmarks/README.html"),
                          (words["library"], words["api"], "api/index.html")]]}


def theme_catalog(language: Language) -> str:
    """A gettext catalog (.po) of the theme's words that Sphinx's and the themes' catalogs leave in English."""
    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    entries = [f"msgid {quoted(k)}\nmsgstr {quoted(v)}\n" for k, v in language.words.get("theme", {}).items()]
    header = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
              f'"Language: {language.sphinx}\\n"\n')
    return "\n".join([header, *entries])


def search_catalog(language: Language) -> str | None:
    """Sphinx's own JavaScript catalog of the language (the search page's words), with the entries it leaves empty
    filled from site/words.toml's ``[<code>.search]`` (Sphinx 9's Russian catalog has no "Search finished, found N
    pages": the search page then says nothing when it ends); None when the language needs none."""
    import json

    import sphinx

    extra = language.words.get("search", {})
    bundled = Path(sphinx.__file__).parent / "locale" / language.sphinx / "LC_MESSAGES" / "sphinx.js"
    if not extra or not bundled.is_file():
        return None
    text = bundled.read_text(encoding="utf-8")
    catalog = json.loads(text[text.index("(") + 1:text.rindex(")")])
    for msgid, translation in extra.items():
        if not any(catalog["messages"].get(msgid) or [""]):
            catalog["messages"][msgid] = translation
    return f"Documentation.addTranslations({json.dumps(catalog, ensure_ascii=False, indent=4)});\n"


@functools.cache
def exported_names() -> frozenset[str]:
    """Every name some module of mha_lib exports (its ``__all__``): the constants the API reference documents."""
    import mha_lib

    modules = [mha_lib] + [importlib.import_module(m.name) for m in pkgutil.walk_packages(mha_lib.__path__, "mha_lib.")
                           if not any(part.startswith("_") for part in m.name.split("."))]
    return frozenset(name for module in modules for name in getattr(module, "__all__", []))


def private_homes() -> dict[str, list[tuple[str, str]]]:
    """For each public module of mha_lib, the names it exports (``__all__``) that a private module defines
    (``mha_lib.checks.run`` from ``mha_lib.checks._core``), with the autodoc directive that documents each: the API
    reference has no page for a private module, so the exporting module's page documents them."""
    import mha_lib

    found: dict[str, list[tuple[str, str]]] = {}
    for info in pkgutil.walk_packages(mha_lib.__path__, "mha_lib."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            home = getattr(obj, "__module__", "") if inspect.isclass(obj) or inspect.isroutine(obj) else ""
            if any(part.startswith("_") for part in home.split(".")):
                kind = ("autoexception" if issubclass(obj, BaseException) else "autoclass") if inspect.isclass(obj) \
                    else "autofunction"
                found.setdefault(info.name, []).append((name, kind))
    return found


def _stage_files(language: Language) -> None:
    """Write ``language.stage``'s files from the repository, links as they are (see _link_pages)."""
    stage = language.stage
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "notebooks").mkdir(parents=True)
    shutil.copy(SITE / "conf.py", stage / "conf.py")
    shutil.copytree(SITE / "_static", stage / "_static")
    shutil.copytree(SITE / "_templates", stage / "_templates")
    shutil.copytree(ROOT / "images", stage / "images", ignore=shutil.ignore_patterns("src", "*.lock"))
    if language.is_source:  # one MathJax and one card for every site (the others point at these)
        if not (MATHJAX / "tex-chtml.js").is_file():
            raise FileNotFoundError(f"{MATHJAX / 'tex-chtml.js'} is missing: run `npm ci` (package.json's mathjax3)")
        for part in MATHJAX_PARTS:
            (stage / "_static" / "mathjax" / part).parent.mkdir(parents=True, exist_ok=True)
            copy = shutil.copytree if (MATHJAX / part).is_dir() else shutil.copy
            copy(MATHJAX / part, stage / "_static" / "mathjax" / part)
        shutil.copy(ROOT / CARD, stage / "_static" / "card.png")
    if language.code in FONTS.NEEDS_CJK:  # the Chinese glyphs, for a reader whose system has no CJK font (cjk.css)
        shutil.copy(ROOT / "mha_lib" / "fonts" / FONTS.CJK_FONT, stage / "_static" / FONTS.CJK_FONT)
    catalog = stage / "_locale" / language.sphinx / "LC_MESSAGES"
    if language.words.get("theme"):
        catalog.mkdir(parents=True, exist_ok=True)
        (catalog / "sphinx.po").write_text(theme_catalog(language))
    if (search := search_catalog(language)) is not None:  # the JavaScript catalog Sphinx copies from here
        catalog.mkdir(parents=True, exist_ok=True)
        (catalog / "sphinx.js").write_text(search, encoding="utf-8")
    for edition in EDITIONS:
        target = stage / "_extra" / "ipynb" / edition
        target.mkdir(parents=True)
        for nb in sorted((ROOT / language.repository_folder(edition)).glob("[0-9][0-9]_*.ipynb")):
            shutil.copy(nb, target / nb.name)
    if language.is_source:  # the English-only pages
        shutil.copytree(ROOT / "teaching", stage / "teaching", ignore=lambda d, names: [
            n for n in names if not n.endswith(".md")])
        (stage / "benchmarks").mkdir()
        shutil.copy(ROOT / "benchmarks" / "README.md", stage / "benchmarks" / "README.md")
        shutil.copytree(SITE / "api", stage / "api")
    notebooks = language.notebooks()
    if not notebooks:
        raise FileNotFoundError(f"no notebooks in {ROOT / language.repository_folder('teacher')}")
    for nb in notebooks:
        nbformat.write(stage_notebook(nb, language), stage / "notebooks" / nb.name)
    (stage / "notebooks" / "glossary.md").write_text(glossary_page(notebooks[0], language))
    (stage / "index.md").write_text(home_page(language))


def _link_pages(language: Language) -> None:
    """Rewrite the relative links of ``language.stage``'s pages, once every site's staged file exists."""
    stage, notebooks = language.stage, ROOT / language.repository_folder("teacher")
    sources = {stage / "index.md": ROOT, stage / "notebooks" / "glossary.md": notebooks}
    if language.is_source:
        sources |= {p: ROOT / "teaching" for p in (stage / "teaching").glob("*.md")}
        sources[stage / "benchmarks" / "README.md"] = ROOT / "benchmarks"
    for staged, original_dir in sources.items():
        staged.write_text(rewrite_links(staged.read_text(), original_dir, staged.parent, language))
    for staged in (stage / "notebooks").glob("*.ipynb"):
        nb = nbformat.read(staged, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = rewrite_links(cell.source, notebooks, staged.parent, language)
        nbformat.write(nb, staged)


def stage(languages: tuple[Language, ...] = LANGUAGES) -> None:
    """Write each edition's staged sources (build/site-src, build/site-src-<code>) from the repository.

    Links last, once every staged file exists: a link to a page of the same site stays relative, one to a page of
    another site becomes a relative URL of it, and any other goes to GitHub.
    """
    for lang in languages:
        _stage_files(lang)
    for lang in languages:
        _link_pages(lang)


def language_of(stage_dir: Path) -> Language:
    """The edition whose staged sources are ``stage_dir`` (conf.py asks, from where it was copied to)."""
    for lang in LANGUAGES:
        if lang.stage.resolve() == Path(stage_dir).resolve():
            return lang
    raise ValueError(f"{stage_dir} is no edition's staged sources ({[str(x.stage) for x in LANGUAGES]})")


def _sphinx(language: Language, jobs: str) -> list[str]:
    return [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", jobs, "-E",
            "-d", str(DOCTREES / language.code), str(language.stage), str(language.out)]


def build(jobs: str = "auto", languages: tuple[Language, ...] = LANGUAGES) -> int:
    """Run Sphinx over each edition's staged sources, side by side, into build/site and build/site/<code>.

    Returns the first non-zero exit status (0 when every build succeeded). MyST-NB writes the notebooks' outputs
    into ``jupyter_execute/`` beside each site's folder; for a site inside build/site that folder would be
    published though no page links it, so it goes once the build is done.
    """
    runs = [subprocess.Popen(_sphinx(lang, jobs), cwd=ROOT) for lang in languages]
    statuses = [run.wait() for run in runs]
    for lang in languages:
        leftover = lang.out.parent / "jupyter_execute"
        if OUT.resolve() in leftover.resolve().parents and leftover.is_dir():
            shutil.rmtree(leftover)
    return next((s for s in statuses if s), 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="auto", help="Sphinx's -j (default: auto)")
    parser.add_argument("--stage-only", action="store_true", help="write build/site-src* and stop")
    args = parser.parse_args(argv)
    start = time.monotonic()
    stage()
    if args.stage_only:
        return 0
    for folder in (OUT, DOCTREES):
        if folder.exists():
            shutil.rmtree(folder)
    status = build(args.jobs)
    pages = ", ".join(f"{lang.out.relative_to(ROOT)}/index.html" for lang in LANGUAGES)
    print(f"site: {pages} ({time.monotonic() - start:.0f} s)")
    return status


if __name__ == "__main__":
    sys.exit(main())

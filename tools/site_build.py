"""Build the series' website (``make site``): stage its sources in ``build/site-src``, then run Sphinx.

Two sites, one per language, built by the same code (a ``Language`` gives each its folders and its words): the
English one from ``notebooks/``, ``student/`` and ``README.md`` into ``build/site``, and the Brazilian Portuguese one
from ``pt-BR/notebooks/``, ``pt-BR/student/`` and ``README.pt-BR.md`` (staged in ``build/site-src-pt-BR``) into
``build/site/pt-BR``, with Sphinx's own words in Portuguese. The teacher's guide, the benchmark page and the API
reference are English only: the Portuguese site links to those pages of the English one and says so. Every page
carries a language switch (site/_templates/language-switch.html) to the same page in the other site, or to its home
page where there is none; all links between the two sites are relative, so they work offline and under any path.

Nothing is executed: each notebook page shows the outputs committed in ``notebooks/`` (the teacher's edition).
The staging step copies what the site renders into one tree that mirrors the repository, so the relative links
between notebooks, teacher's notes and benchmark pages keep working, and changes the copies only:

- each notebook's Colab and Binder badges (images fetched from outside) become launch buttons for the student
  edition, with the teacher's edition folded below them, and a "Download .ipynb" link for each edition;
- each exercise's answer (a cell with nbgrader's ``solution: true``) is folded behind "Show the answer";
- each figure gets alt text: the diagram's description, or the titles the cell draws, or its section's heading;
- widget outputs (an explorer that needs a running kernel) are replaced by a note saying so;
- a relative link to a file the site does not render points at the file on GitHub instead;
- HTML comments are dropped (the student edition's wording, beside the teacher's);
- notebook 00's notation and glossary also get a page of their own;
- a relative link to a page of the other language's site becomes ``other-site:`` and a relative URL (conf.py
  turns it into a plain link: MyST would look for it among this site's own pages).

The API reference is written from the package itself at build time: one page per public module of ``mha_lib``
(autodoc, every public name with its signature and docstring), and an index of ``mha_lib.__all__``.
MathJax comes from the ``mathjax3`` npm package (``npm ci``) and is served with the site; no page loads anything
from outside it. The site's address and the repository are read from ``pyproject.toml`` ([project.urls]).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import nbformat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"  # conf.py, the home pages' own text, the style sheet, the templates
STAGE = ROOT / "build" / "site-src"  # the English site's staged sources (another language's: site-src-<code>)
OUT = ROOT / "build" / "site"  # the English site (another language's: a folder of it, build/site/<code>)
DOCTREES = ROOT / "build" / "site-doctrees"  # Sphinx's pickles, kept out of the published site
MATHJAX = ROOT / "node_modules" / "mathjax3" / "es5"
BRANCH = "main"
EDITIONS = {"student": "student", "teacher": "notebooks"}  # edition -> its folder in the repository
ANSWER_TAG = "answer"  # cell tag (class tag_answer on the page) of a folded exercise answer
OTHER_SITE = "other-site:"  # a staged link's prefix for a page of the other language's site (see conf.py)

WORDS_EN = {
    "run": "<strong>Run this notebook</strong> (student edition: the exercises are left for you to write):",
    "colab": "Open in Colab",
    "binder": "Open in Binder",
    "download": "Download .ipynb",
    "teacher": "For teachers: the teacher's edition, with the answers",
    "show_answer": "Show the answer",
    "hide_answer": "Hide the answer",
    "widget": "*An interactive explorer shows here when the notebook runs (Colab, Binder or JupyterLab).*",
    "figure": "Figure",
    "glossary_sections": r"notation|glossary|words used",
    "glossary": "# Notation and glossary\n\nThe notation and the words the whole series uses, from "
                "[notebook 00]({notebook}). Each notebook defines them again where it first needs them.",
    "series": "The series",
    "notebooks": "Notebooks",
    "teachers": "For teachers",
    "benchmark": "Benchmark",
    "library": "Library",
    "author": "The series' authors",
    "copyright": "the series' authors, MIT license",
    "author_line": None,  # the theme's: "By" and the author
    "search_bar": "Search...",
    "switch_same": "This page in English",
    "switch_home": "The English edition's home page",
}
WORDS_PT_BR = {
    "run": "<strong>Rode este notebook</strong> (edição do aluno: os exercícios ficam para você escrever):",
    "colab": "Abrir no Colab",
    "binder": "Abrir no Binder",
    "download": "Baixar o .ipynb",
    "teacher": "Para professores: a edição do professor, com as respostas",
    "show_answer": "Mostrar a resposta",
    "hide_answer": "Esconder a resposta",
    "widget": "*Um explorador interativo aparece aqui quando o notebook roda (Colab, Binder ou JupyterLab).*",
    "figure": "Figura",
    "glossary_sections": r"nota[çc][ãa]o|gloss[áa]rio|palavras usadas",
    "glossary": "# Notação e glossário\n\nA notação e as palavras que a série inteira usa, tiradas do "
                "[notebook 00]({notebook}). Cada notebook as define de novo onde precisa delas pela primeira vez.",
    "series": "A série",
    "notebooks": "Notebooks",
    "teachers": "Para professores",
    "benchmark": "Benchmark",
    "library": "Biblioteca",
    "author": "Os autores da série",
    "copyright": "os autores da série, licença MIT",
    "author_line": "Pelos autores da série",  # the theme's "De Os autores da série" does not read well
    "search_bar": "Buscar...",
    "switch_same": "Esta página em português",
    "switch_home": "A página inicial da edição em português",
    "in_english": "(em inglês)",
    "english_pages": "Páginas em inglês",
    "teachers_guide": "Guia do professor",
    "benchmark_page": "Benchmark das implementações",
    "api": "Referência da API do mha_lib",
    # The theme's words that pydata-sphinx-theme has no Portuguese for (Sphinx's and the book theme's have theirs).
    "theme": {
        "Skip to main content": "Pular para o conteúdo principal",
        "Back to top": "Voltar ao topo",
        "Site navigation": "Navegação do site",
        "On this page": "Nesta página",
        "Color mode": "Modo de cor",
        "Light": "Claro",
        "Dark": "Escuro",
        "System Settings": "Configuração do sistema",
        "Version warning": "Aviso de versão",
        "Please activate JavaScript to enable the search functionality.": "Ative o JavaScript para usar a busca.",
        "Main": "Principal",
        "Toggle primary sidebar": "Mostrar ou esconder o menu lateral",
        "Toggle secondary sidebar": "Mostrar ou esconder o sumário da página",
        "previous page": "página anterior",
        "next page": "próxima página",
    },
}


@dataclass(frozen=True)
class Language:
    """One language's site: where its notebooks and README lie, where it is staged and built, and its words."""

    code: str  # BCP 47 tag: the pages' lang, the switch's hreflang, and the folder of its edition and site ('' first)
    sphinx: str  # Sphinx's ``language``: Sphinx's and the themes' own words
    name: str  # its own name, on the other site's language switch
    folder: str  # its editions' folder in the repository and its site's folder under build/site ('' for English)
    readme: str  # its README (the home page's opening and series table)
    home: str  # the home page's own text, in site/
    words: dict = field(default_factory=dict, hash=False)  # the site's own words (WORDS_EN's keys)

    @property
    def stage(self) -> Path:
        return STAGE.with_name(f"{STAGE.name}-{self.code}") if self.folder else STAGE

    @property
    def out(self) -> Path:
        return OUT / self.folder if self.folder else OUT

    def repository_folder(self, edition: str) -> str:
        """The repository folder of an edition ('student' or 'teacher') in this language, e.g. ``pt-BR/student``."""
        if edition not in EDITIONS:
            raise ValueError(f"edition must be one of {sorted(EDITIONS)}, got {edition!r}")
        return f"{self.folder}/{EDITIONS[edition]}" if self.folder else EDITIONS[edition]

    def notebooks(self) -> list[Path]:
        """The teacher's-edition notebooks this site makes pages of."""
        return sorted((ROOT / self.repository_folder("teacher")).glob("[0-9][0-9]_*.ipynb"))


ENGLISH = Language("en", "en", "English", "", "README.md", "home.md", WORDS_EN)
PORTUGUESE = Language("pt-BR", "pt_BR", "Português", "pt-BR", "README.pt-BR.md", "home.pt-BR.md", WORDS_PT_BR)
LANGUAGES = (ENGLISH, PORTUGUESE)
BADGES = re.compile(r"^[ \t]*\[!\[[^\]]*\]\(https?://[^)]*\)\]\(https?://[^)]*\)(?:[ \t]*\[!\[[^\]]*\]\(https?://[^)]*\)\]"
                    r"\(https?://[^)]*\))*[ \t]*$", re.MULTILINE)
LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")


def project_urls() -> dict[str, str]:
    """``[project.urls]`` of pyproject.toml: ``Repository`` and ``Documentation`` (the site's address)."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]


def repository_slug() -> str:
    """``owner/name`` of the GitHub repository, from its URL in pyproject.toml."""
    url = project_urls()["Repository"].rstrip("/")
    match = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)", url)
    if match is None:
        raise ValueError(f"[project.urls] Repository must be https://github.com/OWNER/NAME, got {url!r}")
    return match.group(1)


def launch_urls(edition: str, notebook: str, language: Language = ENGLISH) -> dict[str, str]:
    """Colab and Binder URLs that open ``notebook`` (a file name) of ``edition`` ('student' or 'teacher')."""
    path = f"{language.repository_folder(edition)}/{notebook}"
    slug = repository_slug()
    return {
        "colab": f"https://colab.research.google.com/github/{slug}/blob/{BRANCH}/{path}",
        "binder": f"https://mybinder.org/v2/gh/{slug}/{BRANCH}?labpath={quote(path, safe='')}",
    }


def launch_box(notebook: str, language: Language = ENGLISH) -> str:
    """The HTML block under a notebook page's title: the student edition's buttons, the teacher's folded."""
    words = language.words

    def buttons(edition: str) -> str:
        urls = launch_urls(edition, notebook, language)
        download = f"../ipynb/{edition}/{notebook}"
        return (f'<a class="launch-button" data-edition="{edition}" data-launch="colab" href="{urls["colab"]}">'
                f'{words["colab"]}</a> '
                f'<a class="launch-button" data-edition="{edition}" data-launch="binder" href="{urls["binder"]}">'
                f'{words["binder"]}</a> '
                f'<a class="launch-button" data-edition="{edition}" data-launch="download" href="{download}" '
                f'download="{notebook}">{words["download"]}</a>')

    return ('<div class="launch-box">'
            f'<p class="launch-label">{words["run"]}</p>'
            f'<p class="launch-buttons">{buttons("student")}</p>'
            f'<details class="teacher-edition"><summary>{words["teacher"]}</summary>'
            f'<p class="launch-buttons">{buttons("teacher")}</p></details>'
            '</div>')


def _string_literals(pattern: str, source: str) -> list[str]:
    """The string arguments that ``pattern`` (ending where a quoted string starts) captures in ``source``."""
    found = []
    for match in re.finditer(pattern + r"""\s*f?(?P<quote>["'])(?P<text>.*?)(?<!\\)(?P=quote)""", source):
        text = re.sub(r"\{[^{}]*\}", "…", match.group("text")).replace("\\n", " ").strip()
        if text and text not in found:
            found.append(text)
    return found


def figure_alt(source: str, heading: str, language: Language = ENGLISH) -> str:
    """Alt text for the figure a code cell draws: its diagram's description, else its titles, else its section."""
    described = _string_literals(r"""show_diagram\(\s*(?:"[^"]*"|'[^']*')\s*,""", source)
    if described:
        return described[0]
    figure = language.words["figure"]
    titles = _string_literals(r"(?:set_title\(|suptitle\(|\btitles?\s*=\s*\[?)", source)
    if titles:
        return f"{figure}: " + "; ".join(titles)[:400]
    heading = re.sub(r"[*`]", "", heading)
    return f"{figure}: {heading}" if heading else figure


def _staged_page(language: Language, relative: Path) -> Path | None:
    """The staged file (relative to ``language.stage``) of a repository file that ``language``'s site renders."""
    if relative.as_posix() == language.readme:
        staged = Path("index.md")
    elif language.folder:
        if relative.parts[:1] != (language.folder,):
            return None
        staged = relative.relative_to(language.folder)
    elif any(relative.parts[:1] == (other.folder,) for other in LANGUAGES if other.folder):
        return None
    else:
        staged = relative
    return staged if (language.stage / staged).is_file() else None


def _rewrite_links(text: str, source_dir: Path, staged_dir: Path, language: Language = ENGLISH) -> str:
    """Point each relative link of a markdown text at a staged page, or at the file on GitHub.

    A page of the same site stays a relative link to the staged source (MyST makes it the page's); a page of the
    other language's site becomes ``other-site:`` and the relative URL of that page. HTML comments go too: the
    student edition's wording sits in ``<!-- student: ... -->`` beside the teacher's, and a comment that opens a
    paragraph and spans lines is not one HTML block in markdown, so its end would be escaped and the rest of the page
    swallowed by the open comment.
    """
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    slug = repository_slug()
    here = staged_dir.relative_to(language.stage)

    def fix(match: re.Match[str]) -> str:
        label, target = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        anchor = "#" + anchor if anchor else ""
        original = (source_dir / path).resolve()
        try:
            relative = original.relative_to(ROOT)
        except ValueError:
            return match.group(0)
        staged = _staged_page(language, relative)
        if staged is not None:
            return f"{label}({Path(os.path.relpath(staged, here)).as_posix()}{anchor})"
        for other in LANGUAGES:
            staged = _staged_page(other, relative) if other != language else None
            if staged is not None:
                page = Path(other.folder or ".", staged).with_suffix(".html")
                url = Path(os.path.relpath(page, Path(language.folder or ".", here))).as_posix()
                return f"{label}({OTHER_SITE}{url}{anchor})"
        kind = "tree" if original.is_dir() else "blob"
        url = f"https://github.com/{slug}/{kind}/{BRANCH}/{relative.as_posix()}"
        return f"{label}({url}{anchor})"

    return LINK.sub(fix, text)


def _luminance(hex_color: str) -> float:
    """WCAG relative luminance of ``#rrggbb``."""
    channels = [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def readable_table_colors(html: str) -> str:
    """A pandas Styler's cell colours with the text colour (its own light one, or black) that contrasts most.

    ``background_gradient`` picks light text below a luminance threshold, which leaves mid-tone cells at about
    2.5:1 (WCAG asks 4.5:1); the page keeps every background and changes only such a cell's text colour.
    """

    def fix(match: re.Match[str]) -> str:
        background, text = match.group("bg"), match.group("fg")
        light, dark = sorted([_luminance(text), 0.0], reverse=True)
        bg = _luminance(background)
        light_ratio = (max(light, bg) + 0.05) / (min(light, bg) + 0.05)
        black_ratio = (bg + 0.05) / (dark + 0.05)
        best = text if light_ratio >= black_ratio else "#000000"
        return f"{{\n  background-color: {background};\n  color: {best};\n}}"

    return re.sub(r"\{\s*background-color: (?P<bg>#[0-9a-fA-F]{6});\s*color: (?P<fg>#[0-9a-fA-F]{6});\s*\}", fix, html)


def _with_launch_box(markdown: str, notebook: str, language: Language = ENGLISH) -> str:
    """The title cell with its badges (images from outside) replaced by the launch box, or the box under the title."""
    box = "\n\n" + launch_box(notebook, language) + "\n\n"
    if BADGES.search(markdown):
        return BADGES.sub("", BADGES.sub(lambda _: box, markdown, count=1))
    return re.sub(r"^(# .*)$", lambda m: m.group(1) + box, markdown, count=1, flags=re.MULTILINE)


def stage_notebook(path: Path, language: Language = ENGLISH) -> nbformat.NotebookNode:
    """The page's copy of a teacher's-edition notebook (see the module docstring)."""
    words = language.words
    nb = nbformat.read(path, as_version=4)
    heading = ""
    titled = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if not titled and re.search(r"^# ", cell.source, re.MULTILINE):
                titled = True
                cell.source = _with_launch_box(cell.source, path.name, language)
            headings = re.findall(r"^#{1,3} (.+)$", cell.source, re.MULTILINE)
            if headings:
                heading = headings[-1].strip()
        solution = cell.metadata.get("nbgrader", {}).get("solution", False)
        if solution and cell.cell_type == "markdown":
            cell.source = (f'<details class="answer"><summary>{words["show_answer"]}</summary>\n\n{cell.source}\n\n'
                           "</details>")
        elif solution and cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            tags += [t for t in ("hide-cell", ANSWER_TAG) if t not in tags]
            cell.metadata["mystnb"] = {"code_prompt_show": words["show_answer"],
                                       "code_prompt_hide": words["hide_answer"]}
        if cell.cell_type == "code":
            outputs = []
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    output = nbformat.v4.new_output("display_data", data={"text/markdown": words["widget"]})
                if "text/html" in data:
                    html = data["text/html"]
                    data["text/html"] = readable_table_colors(html if isinstance(html, str) else "".join(html))
                outputs.append(output)
            cell.outputs = outputs
            if any("image/png" in o.get("data", {}) for o in outputs):
                cell.metadata.setdefault("mystnb", {})["image"] = {"alt": figure_alt(cell.source, heading, language)}
    nb.metadata.pop("widgets", None)
    return nb


def glossary_page(notebook: Path, language: Language = ENGLISH) -> str:
    """Notebook 00's notation and glossary sections as a page of their own (markdown)."""
    nb = nbformat.read(notebook, as_version=4)
    keep, taking = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        match = re.match(r"^## (.+)$", cell.source, re.MULTILINE)
        if match:
            taking = bool(re.search(language.words["glossary_sections"], match.group(1), re.IGNORECASE))
        if taking:
            keep.append(cell.source)
    if not keep:
        raise ValueError(f"{notebook} has no notation or glossary section ({language.words['glossary_sections']}) "
                         "to make the glossary page from")
    return language.words["glossary"].format(notebook=notebook.name) + "\n\n" + "\n\n".join(keep) + "\n"


def _readme_section(readme: str, title: str, name: str = "README.md") -> str:
    """The body of README's ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f"{name} has no '## {title}' section for the home page")
    return match.group(1).strip()


def site_url(language: Language = ENGLISH) -> str:
    """The published address of ``language``'s site (pyproject's Documentation, then its folder)."""
    return project_urls()["Documentation"] + (f"{language.folder}/" if language.folder else "")


def readme_title(language: Language = ENGLISH) -> str:
    """The title of ``language``'s README (its first line, without the '# '): the site's title."""
    return (ROOT / language.readme).read_text().splitlines()[0].removeprefix("# ").strip()


def home_page(language: Language = ENGLISH) -> str:
    """index.md: the README's opening, its series table, site/home*.md's text, and the pages' toctrees."""
    words = language.words
    readme = (ROOT / language.readme).read_text()
    title = readme.splitlines()[0]
    opening = readme.split("\n## ", 1)[0]
    commands = re.search(r"```bash\n.*?```", opening, re.DOTALL)
    prose = BADGES.sub("", opening.replace(title, "", 1))
    prose = re.sub(r"```bash\n.*?```", "", prose, flags=re.DOTALL).strip()
    site_link = re.escape(site_url(language))
    prose = re.sub(rf"(?:^|\n\n)[^\n]*\]\({site_link}\).*?(?=\n\n|\Z)", "", prose, flags=re.DOTALL).strip()
    home = (SITE / language.home).read_text()
    home = home.replace("{{commands}}", commands.group(0) if commands else "")
    stage = language.stage
    notebooks = sorted(p.stem for p in (stage / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    toctrees = [(words["notebooks"], [f"notebooks/{n}" for n in notebooks] + ["notebooks/glossary"])]
    if language == ENGLISH:  # the pages only the English site has (the others link them: english_pages)
        notes = sorted(f"teaching/{p.stem}" for p in (stage / "teaching").glob("[0-9][0-9]_*.md"))
        teaching = ["teaching/README", *notes]
        toctrees += [(words["teachers"], teaching), (words["benchmark"], ["benchmarks/README"]),
                     (words["library"], ["api/index"])]
    tocs = "\n".join(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(entries) + "\n```\n"
                     for caption, entries in toctrees)
    series = _readme_section(readme, words["series"], language.readme)
    return f"{title}\n\n{prose}\n\n{home}\n\n## {words['series']}\n\n{series}\n\n{tocs}"


def site_pages(language: Language) -> list[str]:
    """The pages (Sphinx's names) of ``language``'s site that are the same page in each language's site."""
    return (["index", "search", "notebooks/glossary"]
            + [f"notebooks/{p.stem}" for p in language.notebooks()])


def language_switch(language: Language) -> dict:
    """What site/_templates/language-switch.html needs: the other site, its root from this one, its pages."""
    other = next(o for o in LANGUAGES if o != language)
    root = os.path.relpath(other.folder or ".", language.folder or ".")
    return {"code": other.code, "name": other.name, "root": root + "/", "pages": site_pages(other),
            "title_same": other.words["switch_same"], "title_home": other.words["switch_home"],
            "site_url": site_url(other), "this_site_url": site_url(language), "this_code": language.code}


def english_pages(language: Language) -> dict:
    """The English-only pages another language's sidebar links (site/_templates/english-pages.html); none in English."""
    if language == ENGLISH:
        return {}
    words = language.words
    root = os.path.relpath(".", language.folder) + "/"
    return {"label": words["english_pages"],
            "pages": [{"caption": caption, "title": f"{title} {words['in_english']}", "href": root + page}
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


def public_modules() -> list[str]:
    """Every public module of mha_lib (no part of its name starts with '_'), subpackages included."""
    import mha_lib

    names = []
    for info in pkgutil.walk_packages(mha_lib.__path__, prefix="mha_lib."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        if getattr(module, "__file__", None) and module.__file__.endswith(".py"):
            names.append(info.name)
    return sorted(names)


def public_names(module_name: str) -> list[str]:
    """A module's public names: its ``__all__``, else what it defines whose name does not start with '_'."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [name for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == module_name]


def api_pages() -> dict[str, str]:
    """api/*.rst: an index of ``mha_lib.__all__`` and one autodoc page per public module."""
    import mha_lib

    modules = public_modules()
    pages = {}
    for name in modules:
        title = name
        module = importlib.import_module(name)
        # Constants and type aliases (autodoc's :members: skips those it cannot find assigned in the module).
        data = [n for n in public_names(name) if not (inspect.isclass(o := getattr(module, n))
                                                       or inspect.isroutine(o) or inspect.ismodule(o))]
        exclude = f"   :exclude-members: {', '.join(data)}\n" if data else ""
        pages[f"api/{name}.rst"] = (f"{title}\n{'=' * len(title)}\n\n.. automodule:: {name}\n   :members:\n"
                                    "   :undoc-members:\n   :show-inheritance:\n   :member-order: bysource\n"
                                    + exclude + "".join(f"\n.. autodata:: {name}.{n}\n" for n in data))
    rows = []
    for name in mha_lib.__all__:
        obj = getattr(mha_lib, name)
        home = getattr(obj, "__module__", "mha_lib")
        target = f"{home}.{getattr(obj, '__qualname__', name)}"
        role = "class" if inspect.isclass(obj) else "func" if callable(obj) else "data"
        summary = (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")
        rows.append(f"   * - :py:{role}:`{name} <{target}>`\n     - {summary or ' '}")
    modules_toc = "\n".join(f"   {name}" for name in modules)
    pages["api/index.rst"] = (
        "API reference: ``mha_lib``\n==========================\n\n"
        "Written from the library's docstrings when the site is built. ``from mha_lib import ...`` gives the names "
        "below; the modules hold the rest.\n\n"
        "The package's names\n-------------------\n\n.. list-table::\n   :header-rows: 1\n   :widths: 30 70\n\n"
        "   * - name\n     - what it is\n" + "\n".join(rows) + "\n\n"
        "Modules\n-------\n\n.. toctree::\n   :maxdepth: 1\n\n" + modules_toc + "\n")
    return pages


def _stage_files(language: Language) -> None:
    """Write ``language.stage``'s files from the repository, links as they are (see _link_pages)."""
    stage = language.stage
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "notebooks").mkdir(parents=True)
    shutil.copy(SITE / "conf.py", stage / "conf.py")
    shutil.copytree(SITE / "_static", stage / "_static")
    shutil.copytree(SITE / "_templates", stage / "_templates")
    if not (MATHJAX / "tex-chtml.js").is_file():
        raise FileNotFoundError(f"{MATHJAX / 'tex-chtml.js'} is missing: run `npm ci` (package.json's mathjax3)")
    shutil.copytree(MATHJAX, stage / "_static" / "mathjax", ignore=shutil.ignore_patterns("*-full*", "node-main*"))
    shutil.copytree(ROOT / "images", stage / "images", ignore=shutil.ignore_patterns("src", "*.lock"))
    if language.words.get("theme"):
        catalog = stage / "_locale" / language.sphinx / "LC_MESSAGES"
        catalog.mkdir(parents=True)
        (catalog / "sphinx.po").write_text(theme_catalog(language))
    for edition in EDITIONS:
        target = stage / "_extra" / "ipynb" / edition
        target.mkdir(parents=True)
        for nb in sorted((ROOT / language.repository_folder(edition)).glob("[0-9][0-9]_*.ipynb")):
            shutil.copy(nb, target / nb.name)
    if language == ENGLISH:  # the English-only pages
        (stage / "teaching").mkdir()
        for md in sorted((ROOT / "teaching").glob("*.md")):
            shutil.copy(md, stage / "teaching" / md.name)
        (stage / "benchmarks").mkdir()
        shutil.copy(ROOT / "benchmarks" / "README.md", stage / "benchmarks" / "README.md")
        for name, text in api_pages().items():
            (stage / name).parent.mkdir(exist_ok=True)
            (stage / name).write_text(text)
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
    if language == ENGLISH:
        sources |= {p: ROOT / "teaching" for p in (stage / "teaching").glob("*.md")}
        sources[stage / "benchmarks" / "README.md"] = ROOT / "benchmarks"
    for staged, original_dir in sources.items():
        staged.write_text(_rewrite_links(staged.read_text(), original_dir, staged.parent, language))
    for staged in (stage / "notebooks").glob("*.ipynb"):
        nb = nbformat.read(staged, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = _rewrite_links(cell.source, notebooks, staged.parent, language)
        nbformat.write(nb, staged)


def stage(languages: tuple[Language, ...] = LANGUAGES) -> None:
    """Write each language's staged sources (build/site-src, build/site-src-pt-BR) from the repository.

    Links last, once every staged file exists: a link to a page of the same site stays relative, one to a page of the
    other site becomes a relative URL of it, and any other goes to GitHub.
    """
    for language in languages:
        _stage_files(language)
    for language in languages:
        _link_pages(language)


def language_of(stage_dir: Path) -> Language:
    """The language whose staged sources are ``stage_dir`` (conf.py asks, from where it was copied to)."""
    for language in LANGUAGES:
        if language.stage.resolve() == Path(stage_dir).resolve():
            return language
    raise ValueError(f"{stage_dir} is no language's staged sources ({[str(x.stage) for x in LANGUAGES]})")


def _sphinx(language: Language, jobs: str) -> list[str]:
    return [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", jobs, "-E",
            "-d", str(DOCTREES / language.code), str(language.stage), str(language.out)]


def build(jobs: str = "auto", languages: tuple[Language, ...] = LANGUAGES) -> int:
    """Run Sphinx over each language's staged sources, side by side, into build/site and build/site/<code>.

    Returns the first non-zero exit status (0 when every build succeeded).
    """
    runs = [subprocess.Popen(_sphinx(language, jobs), cwd=ROOT) for language in languages]
    statuses = [run.wait() for run in runs]
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
    pages = ", ".join(f"{language.out.relative_to(ROOT)}/index.html" for language in LANGUAGES)
    print(f"site: {pages} ({time.monotonic() - start:.0f} s)")
    return status


if __name__ == "__main__":
    sys.exit(main())

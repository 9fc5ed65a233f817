"""The website's staged copy of each notebook and page (``tools/site_build.py`` writes them, Sphinx reads them).

One ``Language`` per edition of ``locale/editions.toml`` (tools/editions.py): its folders, and its words from
``site/words.toml``. Staging changes the copies only, never the committed notebooks:

- each notebook's Colab and Binder badges (images fetched from outside) become launch buttons for the student
  edition, with the teacher's edition folded below them, and a "Download .ipynb" link for each edition;
- each exercise's answer (a cell with nbgrader's ``solution: true``) is folded behind "Exercise N: show the answer"
  (N from its ``grade_id``, ``ex3-...``);
- the test and grading markers are left out of the code: ``# NBVAL_...`` lines and nbgrader's ``### BEGIN SOLUTION``,
  ``### END SOLUTION``, ``### BEGIN HIDDEN TESTS``, ``### END HIDDEN TESTS`` (the lines between them stay);
- a cell whose statements mostly draw a figure, and the setup cell, show their output first and fold their code
  behind "Show the code" (MyST-NB's ``hide-input`` tag); a cell that defines a function or class, or mostly
  computes, stays open (``plotting_cell``);
- each figure gets alt text: the diagram's description, or the titles the cell draws, or its section's heading;
- widget outputs (an explorer that needs a running kernel) are replaced by a note saying so;
- a relative link to a file the site does not render points at the file on GitHub instead, and one to a page of
  another edition's site becomes ``other-site:`` and its relative URL (conf.py makes it a plain link);
- HTML comments are dropped (the student edition's wording, beside the teacher's).
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import nbformat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"  # conf.py, the home pages' own text, the words, the style sheet, the templates
STAGE = ROOT / "build" / "site-src"  # the source edition's staged sources (another edition's: site-src-<code>)
OUT = ROOT / "build" / "site"  # the source edition's site (another edition's: a folder of it, build/site/<code>)
BRANCH = "main"
EDITIONS = {"student": "student", "teacher": "notebooks"}  # edition -> its folder in the repository
ANSWER_TAG = "answer"  # cell tag (class tag_answer on the page) of a folded exercise answer
OTHER_SITE = "other-site:"  # a staged link's prefix for a page of another edition's site (see conf.py)
WORDS = tomllib.loads((SITE / "words.toml").read_text(encoding="utf-8"))
MARKER = re.compile(r"^[ \t]*(?:# NBVAL_[A-Z_]+|### (?:BEGIN|END) (?:SOLUTION|HIDDEN TESTS))[ \t]*\n?", re.MULTILINE)
PLOTTING = re.compile(r"\b(?:plt|fig|figure|ax|axes|axs|ax_\w+|Figure)\b|\bshow_\w+\(|\bplot_\w+\(|imshow|colorbar|"
                      r"legend\(|annotate\(|subplots|set_(?:title|[xy]label|[xy]ticks|[xy]ticklabels|[xy]lim)|"
                      r"mha_lib\.plots|matplotlib")


@dataclass(frozen=True)
class Language:
    """One edition's site: its row of the table of editions and its words (site/words.toml)."""

    edition: editions.Edition
    words: dict = field(default_factory=dict, hash=False, compare=False)

    code = property(lambda self: self.edition.code)  # BCP 47: the pages' lang, hreflang, the site's folder
    sphinx = property(lambda self: self.edition.sphinx)  # Sphinx's ``language``: Sphinx's and the themes' words
    name = property(lambda self: self.edition.name)  # its own name, on every page's language menu
    folder = property(lambda self: self.edition.folder)  # its folders' parent in the repository and under build/site
    readme = property(lambda self: self.edition.readme)  # its README (the series table, the commands)
    is_source = property(lambda self: self.edition.is_source)  # the English edition: the only one with the guides

    @property
    def home(self) -> str:
        """The home page's own text in site/: home.md for the source edition, home.<code>.md for another."""
        return "home.md" if self.is_source else f"home.{self.code}.md"

    @property
    def stage(self) -> Path:
        return STAGE if self.is_source else STAGE.with_name(f"{STAGE.name}-{self.code}")

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


def _language(edition: editions.Edition) -> Language:
    if edition.code not in WORDS:
        raise KeyError(f"site/words.toml has no [{edition.code}] table for the edition {edition.name!r}")
    return Language(edition, WORDS[edition.code])


LANGUAGES = tuple(_language(e) for e in editions.EDITIONS)
SOURCE = LANGUAGES[0]
BADGES = re.compile(r"^[ \t]*\[!\[[^\]]*\]\(https?://[^)]*\)\]\(https?://[^)]*\)(?:[ \t]*\[!\[[^\]]*\]\(https?://[^)]*\)\]"
                    r"\(https?://[^)]*\))*[ \t]*$", re.MULTILINE)
LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")


def language(code: str) -> Language:
    """The site of the edition ``code`` ("en", "pt-BR"...)."""
    return LANGUAGES[[e.code for e in editions.EDITIONS].index(editions.get(code).code)]


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


def launch_urls(edition: str, notebook: str, language: Language = SOURCE) -> dict[str, str]:
    """Colab and Binder URLs that open ``notebook`` (a file name) of ``edition`` ('student' or 'teacher')."""
    path = f"{language.repository_folder(edition)}/{notebook}"
    slug = repository_slug()
    return {
        "colab": f"https://colab.research.google.com/github/{slug}/blob/{BRANCH}/{path}",
        "binder": f"https://mybinder.org/v2/gh/{slug}/{BRANCH}?labpath={quote(path, safe='')}",
    }


def launch_box(notebook: str, language: Language = SOURCE) -> str:
    """The HTML block under a notebook page's title: the student edition's buttons, the teacher's folded."""
    words = language.words

    def buttons(edition: str) -> str:
        urls = launch_urls(edition, notebook, language)
        links = [f'<a class="launch-button" data-edition="{edition}" data-launch="{kind}" href="{urls[kind]}">'
                 f'{words[kind]}</a>' for kind in ("colab", "binder")]
        links.append(f'<a class="launch-button" data-edition="{edition}" data-launch="download" '
                     f'href="../ipynb/{edition}/{notebook}" download="{notebook}">{words["download"]}</a>')
        return " ".join(links)

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


def figure_alt(source: str, heading: str, language: Language = SOURCE) -> str:
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


def plotting_cell(source: str) -> bool:
    """Whether a code cell is there to draw its figure: at least half of its statements draw (call a plotting
    function, set up axes), and it defines no function or class. Its code then folds under its figure."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        statements = ast.parse(code).body
    except SyntaxError:
        return False
    if not statements or any(isinstance(s, (ast.FunctionDef, ast.ClassDef)) for s in statements):
        return False
    drawing = sum(bool(PLOTTING.search(ast.get_source_segment(code, s) or "")) for s in statements)
    return 2 * drawing >= len(statements)


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


def rewrite_links(text: str, source_dir: Path, staged_dir: Path, language: Language = SOURCE) -> str:
    """Point each relative link of a markdown text at a staged page, or at the file on GitHub.

    A page of the same site stays a relative link to the staged source (MyST makes it the page's); a page of
    another edition's site becomes ``other-site:`` and the relative URL of that page. HTML comments go too: the
    student edition's wording sits in ``<!-- student: ... -->`` beside the teacher's, and a comment that opens a
    paragraph and spans lines is not one HTML block in markdown, so the rest of the page would be swallowed.
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
        if label.startswith("!") and (staged_dir / path).is_file():  # an image staged beside the page
            return match.group(0)
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
        return f"{label}(https://github.com/{slug}/{kind}/{BRANCH}/{relative.as_posix()}{anchor})"

    return LINK.sub(fix, text)


def _with_launch_box(markdown: str, notebook: str, language: Language = SOURCE) -> str:
    """The title cell with its badges (images from outside) replaced by the launch box, or the box under the title."""
    box = "\n\n" + launch_box(notebook, language) + "\n\n"
    if BADGES.search(markdown):
        return BADGES.sub("", BADGES.sub(lambda _: box, markdown, count=1))
    return re.sub(r"^(# .*)$", lambda m: m.group(1) + box, markdown, count=1, flags=re.MULTILINE)


def _fold_prompts(cell: nbformat.NotebookNode, words: dict) -> tuple[str, str]:
    """An answer fold's words: "Exercise 3: show the answer" where the grade_id (``ex3-...``) numbers it."""
    number = re.match(r"ex(\d+)", cell.metadata.get("nbgrader", {}).get("grade_id", ""))
    if number is None:
        return words["show_answer"], words["hide_answer"]
    return (words["exercise_answer"].format(number=number.group(1)),
            words["exercise_hide"].format(number=number.group(1)))


def _tag(cell: nbformat.NotebookNode, *tags: str) -> None:
    present = cell.metadata.setdefault("tags", [])
    present += [t for t in tags if t not in present]


def stage_notebook(path: Path, language: Language = SOURCE) -> nbformat.NotebookNode:
    """The page's copy of a teacher's-edition notebook (see the module docstring)."""
    words = language.words
    nb = nbformat.read(path, as_version=4)
    heading, titled, setup_seen = "", False, False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if not titled and re.search(r"^# ", cell.source, re.MULTILINE):
                titled = True
                cell.source = _with_launch_box(cell.source, path.name, language)
            headings = re.findall(r"^#{1,3} (.+)$", cell.source, re.MULTILINE)
            heading = headings[-1].strip() if headings else heading
        solution = cell.metadata.get("nbgrader", {}).get("solution", False)
        if solution and cell.cell_type == "markdown":
            show, _ = _fold_prompts(cell, words)
            cell.source = f'<details class="answer"><summary>{show}</summary>\n\n{cell.source}\n\n</details>'
        if cell.cell_type != "code":
            continue
        original = cell.source
        cell.source = MARKER.sub("", cell.source)
        if solution:
            _tag(cell, "hide-cell", ANSWER_TAG)
            show, hide = _fold_prompts(cell, words)
            cell.metadata["mystnb"] = {"code_prompt_show": show, "code_prompt_hide": hide}
        elif (not setup_seen and "google.colab" in original) or (
                any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])) and plotting_cell(original)):
            _tag(cell, "hide-input")
            cell.metadata["mystnb"] = {"code_prompt_show": words["show_code"], "code_prompt_hide": words["hide_code"]}
        setup_seen = True
        outputs = []
        for output in cell.get("outputs", []):
            if "application/vnd.jupyter.widget-view+json" in output.get("data", {}):
                output = nbformat.v4.new_output("display_data", data={"text/markdown": words["widget"]})
            outputs.append(output)
        cell.outputs = outputs
        if any("image/png" in o.get("data", {}) for o in outputs):
            cell.metadata.setdefault("mystnb", {})["image"] = {"alt": figure_alt(original, heading, language)}
    nb.metadata.pop("widgets", None)
    return nb


def glossary_page(notebook: Path, language: Language = SOURCE) -> str:
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

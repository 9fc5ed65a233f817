"""Build the series' website (``make site``): stage its sources in ``build/site-src``, then run Sphinx.

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
- notebook 00's notation and glossary also get a page of their own.

The API reference is written from the package itself at build time: one page per public module of ``mha_lib``
(autodoc, every public name with its signature and docstring), and an index of ``mha_lib.__all__``.
MathJax comes from the ``mathjax3`` npm package (``npm ci``) and is served with the site; no page loads anything
from outside it. The site's address and the repository are read from ``pyproject.toml`` ([project.urls]).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import nbformat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"  # conf.py, the home page's own text, the style sheet
STAGE = ROOT / "build" / "site-src"
OUT = ROOT / "build" / "site"
MATHJAX = ROOT / "node_modules" / "mathjax3" / "es5"
BRANCH = "main"
EDITIONS = {"student": "student", "teacher": "notebooks"}  # edition -> its folder in the repository
ANSWER_TAG = "answer"  # cell tag (class tag_answer on the page) of a folded exercise answer
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


def launch_urls(edition: str, notebook: str) -> dict[str, str]:
    """Colab and Binder URLs that open ``notebook`` (a file name) of ``edition`` ('student' or 'teacher')."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {sorted(EDITIONS)}, got {edition!r}")
    path = f"{EDITIONS[edition]}/{notebook}"
    slug = repository_slug()
    return {
        "colab": f"https://colab.research.google.com/github/{slug}/blob/{BRANCH}/{path}",
        "binder": f"https://mybinder.org/v2/gh/{slug}/{BRANCH}?labpath={quote(path, safe='')}",
    }


def launch_box(notebook: str) -> str:
    """The HTML block under a notebook page's title: the student edition's buttons, the teacher's folded."""

    def buttons(edition: str) -> str:
        urls = launch_urls(edition, notebook)
        download = f"../ipynb/{edition}/{notebook}"
        return (f'<a class="launch-button" data-edition="{edition}" data-launch="colab" href="{urls["colab"]}">'
                f'Open in Colab</a> '
                f'<a class="launch-button" data-edition="{edition}" data-launch="binder" href="{urls["binder"]}">'
                f'Open in Binder</a> '
                f'<a class="launch-button" data-edition="{edition}" data-launch="download" href="{download}" '
                f'download="{notebook}">Download .ipynb</a>')

    return ('<div class="launch-box">'
            '<p class="launch-label"><strong>Run this notebook</strong> (student edition: the exercises are '
            'left for you to write):</p>'
            f'<p class="launch-buttons">{buttons("student")}</p>'
            '<details class="teacher-edition"><summary>For teachers: the teacher\'s edition, with the answers'
            '</summary>'
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


def figure_alt(source: str, heading: str) -> str:
    """Alt text for the figure a code cell draws: its diagram's description, else its titles, else its section."""
    described = _string_literals(r"""show_diagram\(\s*(?:"[^"]*"|'[^']*')\s*,""", source)
    if described:
        return described[0]
    titles = _string_literals(r"(?:set_title\(|suptitle\(|\btitles?\s*=\s*\[?)", source)
    if titles:
        return "Figure: " + "; ".join(titles)[:400]
    heading = re.sub(r"[*`]", "", heading)
    return f"Figure: {heading}" if heading else "Figure"


def _rewrite_links(text: str, source_dir: Path, staged_dir: Path) -> str:
    """Point each relative link of a markdown text at a staged page, or at the file on GitHub.

    HTML comments go too: the student edition's wording sits in ``<!-- student: ... -->`` beside the teacher's, and
    a comment that opens a paragraph and spans lines is not one HTML block in markdown, so its end would be escaped
    and the rest of the page swallowed by the open comment.
    """
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    slug = repository_slug()

    def fix(match: re.Match[str]) -> str:
        label, target = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        original = (source_dir / path).resolve()
        try:
            relative = original.relative_to(ROOT)
        except ValueError:
            return match.group(0)
        staged = STAGE / relative
        if relative.as_posix() == "README.md":
            staged = STAGE / "index.md"
        if staged.is_file():
            rel = Path(staged).relative_to(STAGE)
            new = Path(*([".."] * len(staged_dir.relative_to(STAGE).parts)), rel).as_posix()
            return f"{label}({new}{'#' + anchor if anchor else ''})"
        kind = "tree" if original.is_dir() else "blob"
        url = f"https://github.com/{slug}/{kind}/{BRANCH}/{relative.as_posix()}"
        return f"{label}({url}{'#' + anchor if anchor else ''})"

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


def _with_launch_box(markdown: str, notebook: str) -> str:
    """The title cell with its badges (images from outside) replaced by the launch box, or the box under the title."""
    box = "\n\n" + launch_box(notebook) + "\n\n"
    if BADGES.search(markdown):
        return BADGES.sub("", BADGES.sub(lambda _: box, markdown, count=1))
    return re.sub(r"^(# .*)$", lambda m: m.group(1) + box, markdown, count=1, flags=re.MULTILINE)


def stage_notebook(path: Path) -> nbformat.NotebookNode:
    """The page's copy of a teacher's-edition notebook (see the module docstring)."""
    nb = nbformat.read(path, as_version=4)
    heading = ""
    titled = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if not titled and re.search(r"^# ", cell.source, re.MULTILINE):
                titled = True
                cell.source = _with_launch_box(cell.source, path.name)
            headings = re.findall(r"^#{1,3} (.+)$", cell.source, re.MULTILINE)
            if headings:
                heading = headings[-1].strip()
        solution = cell.metadata.get("nbgrader", {}).get("solution", False)
        if solution and cell.cell_type == "markdown":
            cell.source = (f'<details class="answer"><summary>Show the answer</summary>\n\n{cell.source}\n\n'
                           "</details>")
        elif solution and cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            tags += [t for t in ("hide-cell", ANSWER_TAG) if t not in tags]
            cell.metadata["mystnb"] = {"code_prompt_show": "Show the answer", "code_prompt_hide": "Hide the answer"}
        if cell.cell_type == "code":
            outputs = []
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    output = nbformat.v4.new_output(
                        "display_data",
                        data={"text/markdown": "*An interactive explorer shows here when the notebook runs "
                                               "(Colab, Binder or JupyterLab).*"})
                if "text/html" in data:
                    html = data["text/html"]
                    data["text/html"] = readable_table_colors(html if isinstance(html, str) else "".join(html))
                outputs.append(output)
            cell.outputs = outputs
            if any("image/png" in o.get("data", {}) for o in outputs):
                cell.metadata.setdefault("mystnb", {})["image"] = {"alt": figure_alt(cell.source, heading)}
    nb.metadata.pop("widgets", None)
    return nb


def glossary_page(notebook: Path) -> str:
    """Notebook 00's notation and glossary sections as a page of their own (markdown)."""
    nb = nbformat.read(notebook, as_version=4)
    keep, taking = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        match = re.match(r"^## (.+)$", cell.source, re.MULTILINE)
        if match:
            taking = bool(re.search(r"notation|glossary|words used", match.group(1), re.IGNORECASE))
        if taking:
            keep.append(re.sub(r"^## ", "## ", cell.source))
    if not keep:
        raise ValueError(f"{notebook.name} has no '## Notation' or glossary section to make the glossary page from")
    intro = (f"# Notation and glossary\n\nThe notation and the words the whole series uses, from "
             f"[notebook 00]({notebook.name}). Each notebook defines them again where it first needs them.\n\n")
    return intro + "\n\n".join(keep) + "\n"


def _readme_section(readme: str, title: str) -> str:
    """The body of README's ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f"README.md has no '## {title}' section for the home page")
    return match.group(1).strip()


def home_page() -> str:
    """index.md: the README's opening, its series table, site/home.md's text, and the pages' toctrees."""
    readme = (ROOT / "README.md").read_text()
    title = readme.splitlines()[0]
    opening = readme.split("\n## ", 1)[0]
    commands = re.search(r"```bash\n.*?```", opening, re.DOTALL)
    prose = BADGES.sub("", opening.replace(title, "", 1))
    prose = re.sub(r"```bash\n.*?```", "", prose, flags=re.DOTALL).strip()
    site_link = re.escape(project_urls()["Documentation"])
    prose = re.sub(rf"(?:^|\n\n)[^\n]*\]\({site_link}\).*?(?=\n\n|\Z)", "", prose, flags=re.DOTALL).strip()
    home = (SITE / "home.md").read_text()
    home = home.replace("{{commands}}", commands.group(0) if commands else "")
    notebooks = sorted(p.stem for p in (STAGE / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    teaching = ["teaching/README"] + sorted(f"teaching/{p.stem}" for p in (STAGE / "teaching").glob("[0-9][0-9]_*.md"))
    toctrees = [("Notebooks", [f"notebooks/{n}" for n in notebooks] + ["notebooks/glossary"]),
                ("For teachers", teaching), ("Benchmark", ["benchmarks/README"]), ("Library", ["api/index"])]
    tocs = "\n".join(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(entries) + "\n```\n"
                     for caption, entries in toctrees)
    return (f"{title}\n\n{prose}\n\n{home}\n\n## The series\n\n{_readme_section(readme, 'The series')}\n\n"
            f"{tocs}")


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


def stage() -> None:
    """Write build/site-src from the repository (see the module docstring)."""
    if STAGE.exists():
        shutil.rmtree(STAGE)
    (STAGE / "notebooks").mkdir(parents=True)
    shutil.copy(SITE / "conf.py", STAGE / "conf.py")
    shutil.copytree(SITE / "_static", STAGE / "_static")
    shutil.copytree(SITE / "_templates", STAGE / "_templates")
    if not (MATHJAX / "tex-chtml.js").is_file():
        raise FileNotFoundError(f"{MATHJAX / 'tex-chtml.js'} is missing: run `npm ci` (package.json's mathjax3)")
    shutil.copytree(MATHJAX, STAGE / "_static" / "mathjax", ignore=shutil.ignore_patterns("*-full*", "node-main*"))
    shutil.copytree(ROOT / "images", STAGE / "images", ignore=shutil.ignore_patterns("src", "*.lock"))
    for edition, folder in EDITIONS.items():
        target = STAGE / "_extra" / "ipynb" / edition
        target.mkdir(parents=True)
        for nb in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
            shutil.copy(nb, target / nb.name)
    (STAGE / "teaching").mkdir()
    for md in sorted((ROOT / "teaching").glob("*.md")):
        shutil.copy(md, STAGE / "teaching" / md.name)
    (STAGE / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "README.md", STAGE / "benchmarks" / "README.md")
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for nb in notebooks:
        nbformat.write(stage_notebook(nb), STAGE / "notebooks" / nb.name)
    (STAGE / "notebooks" / "glossary.md").write_text(glossary_page(notebooks[0]))
    (STAGE / "index.md").write_text(home_page())
    for name, text in api_pages().items():
        (STAGE / name).parent.mkdir(exist_ok=True)
        (STAGE / name).write_text(text)
    # Links last, once every staged file exists: a link to one stays relative, any other goes to GitHub.
    sources = {STAGE / "index.md": ROOT, STAGE / "notebooks" / "glossary.md": ROOT / "notebooks"}
    sources |= {p: ROOT / "teaching" for p in (STAGE / "teaching").glob("*.md")}
    sources[STAGE / "benchmarks" / "README.md"] = ROOT / "benchmarks"
    for staged, original_dir in sources.items():
        staged.write_text(_rewrite_links(staged.read_text(), original_dir, staged.parent))
    for staged in (STAGE / "notebooks").glob("*.ipynb"):
        nb = nbformat.read(staged, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = _rewrite_links(cell.source, ROOT / "notebooks", staged.parent)
        nbformat.write(nb, staged)


def build(jobs: str = "auto") -> int:
    """Run Sphinx over the staged sources into build/site; returns its exit status."""
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", jobs, "-E", str(STAGE), str(OUT)]
    return subprocess.call(command, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="auto", help="Sphinx's -j (default: auto)")
    parser.add_argument("--stage-only", action="store_true", help="write build/site-src and stop")
    args = parser.parse_args(argv)
    start = time.monotonic()
    stage()
    if args.stage_only:
        return 0
    if OUT.exists():
        shutil.rmtree(OUT)
    status = build(args.jobs)
    print(f"site: {OUT.relative_to(ROOT)}/index.html ({time.monotonic() - start:.0f} s)")
    return status


if __name__ == "__main__":
    sys.exit(main())

"""The classroom kit (teaching/README.md): graded exercises in nbgrader markup, the student edition, slides, guide.

Fast checks, run by `make test`. The slow ones (every student copy run top to bottom, the nbgrader round trip)
are in test_kit_roundtrip.py (`make test-kit`); the slides in a browser are in browser/test_slides.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import slides  # noqa: E402
import student_edition as student  # noqa: E402
import sync_notebooks  # noqa: E402
from nbgrader_course import create  # noqa: E402
from setup_cell import REPOSITORY  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STUDENT = ROOT / "student"
REPO = REPOSITORY.removeprefix("https://github.com/")
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME",
           "END MARK SCHEME")
SECTIONS = ["## At a glance", "## Walkthrough plan", "## Misconceptions", "## Discussion questions", "## Quiz",
            "## When time is short"]
ids = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)


def _load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _grader(cell: nbformat.NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def _regions(source: str, begin: str, end: str) -> tuple[list[str], list[str]]:
    """The lines inside ``### begin`` / ``### end`` regions and the lines outside; raises on unbalanced markers."""
    inside, outside, open_ = [], [], False
    for line in source.splitlines():
        if begin in line:
            assert not open_, f"nested {begin}"
            open_ = True
        elif end in line:
            assert open_, f"{end} without {begin}"
            open_ = False
        else:
            (inside if open_ else outside).append(line)
    assert not open_, f"{begin} without {end}"
    return inside, outside


# ----- the teacher's edition: exercises in nbgrader markup -----

@ids
def test_a_graded_implement_it_exercise(path: Path) -> None:
    """A check cell (grade, points, calls checks.) right after the solution cell that defines the function."""
    cells = _load(path).cells
    graded = [i for i, c in enumerate(cells) if c.cell_type == "code" and _grader(c).get("grade")
              and _grader(c).get("points", 0) > 0 and "checks." in c.source]
    assert graded, "no graded check cell (nbgrader grade: true, points > 0, calling checks.<name>(...))"
    for index in graded:
        before = [c for c in cells[:index] if c.cell_type == "code"]
        assert before, "a check cell with no solution cell before it"
        solution = before[-1]
        assert _grader(solution).get("solution") and not _grader(solution).get("grade"), (
            f"{_grader(cells[index])['grade_id']}: the code cell before a check is its solution cell"
            " (nbgrader solution: true, grade: false)"
        )
        inside, _ = _regions(solution.source, "BEGIN SOLUTION", "END SOLUTION")
        assert inside, f"{_grader(solution)['grade_id']}: the answer sits between ### BEGIN/END SOLUTION"
        defined = re.findall(r"^def (\w+)\(", solution.source, re.M)
        assert any(f"({name}" in cells[index].source for name in defined), (
            f"{_grader(cells[index])['grade_id']} checks a function its solution cell defines ({defined})"
        )


@ids
def test_nbgrader_metadata_is_valid(path: Path) -> None:
    """nbgrader's own validator (schema, unique grade_ids, points on graded cells), as generate_assignment runs it."""
    nb = _load(path)
    grade_ids = [_grader(c)["grade_id"] for c in nb.cells if _grader(c)]
    assert len(grade_ids) == len(set(grade_ids)), f"grade_ids repeat: {sorted(grade_ids)}"
    MetadataValidator().validate_nb(nb)


@ids
def test_markers_only_where_nbgrader_expects_them(path: Path) -> None:
    """Solution markers only in solution cells, hidden tests only in graded cells, each region closed."""
    for cell in _load(path).cells:
        start = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
        if "BEGIN SOLUTION" in cell.source or "END SOLUTION" in cell.source:
            assert _grader(cell).get("solution"), f"solution markers in a cell without solution metadata: {start}"
            _regions(cell.source, "BEGIN SOLUTION", "END SOLUTION")
        if "HIDDEN TESTS" in cell.source:
            assert _grader(cell).get("grade"), f"hidden tests in a cell that is not graded: {start}"
            _regions(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
        if "MARK SCHEME" in cell.source:
            assert _grader(cell).get("task"), f"a mark scheme outside a task cell: {start}"


@ids
def test_every_answer_is_in_a_solution_cell(path: Path) -> None:
    """A cell tagged 'solution' without nbgrader markup would keep its answer in the student edition."""
    for cell in _load(path).cells:
        marked_up = bool(_grader(cell).get("solution"))
        if "solution" in cell.metadata.get("tags", []):
            assert marked_up, f"tagged 'solution' without nbgrader solution metadata: {cell.source[:60]!r}"
        if _grader(cell).get("solution") and cell.cell_type == "code":
            _, outside = _regions(cell.source, "BEGIN SOLUTION", "END SOLUTION")
            shown = "\n".join(outside)
            assert not re.search(r"\bsolution\b", shown, re.I), (
                f"{_grader(cell)['grade_id']}: text outside the markers stays in the student edition and names the"
                f" solution: {shown[:120]!r}"
            )


# ----- make notebooks: collapsed solutions, slide metadata -----

@ids
def test_solutions_collapsed_and_slides_in_sync(path: Path) -> None:
    assert sync_notebooks.in_sync(path), f"run: .venv/bin/python tools/sync_notebooks.py notebooks/{path.name}"


@ids
def test_every_cell_has_a_slide_type(path: Path) -> None:
    kinds = [c.metadata.get("slideshow", {}).get("slide_type") for c in _load(path).cells]
    assert kinds[0] == "slide" and set(kinds) <= {"slide", "subslide", "-", "skip"}, kinds


def _cell(kind: str, source: str, **metadata) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source)
    cell.metadata.update(metadata)
    return cell


def test_the_slide_rule() -> None:
    solution = {"nbgrader": {"grade": False, "grade_id": "e", "locked": False, "schema_version": 3,
                             "solution": True, "task": False}}
    long_prose = "\n\n".join(["A paragraph of prose that fills one line of the slide."] * 14)
    cells = [
        _cell("md", "# 01 · Title"), _cell("code", "# setup"), _cell("code", "import math\nfrom torch import nn"),
        _cell("md", "## 1 · A section"), _cell("code", "x = 1"), _cell("md", "### A subsection"),
        _cell("md", long_prose), _cell("md", long_prose), _cell("code", "y = 2"),
        _cell("code", "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", **solution),
        _cell("md", "**Next:** ..."),
    ]
    kinds = sync_notebooks.slide_types(nbformat.v4.new_notebook(cells=cells))
    assert kinds == ["slide", "skip", "skip", "slide", "-", "subslide", "-", "subslide", "-", "skip", "-"]


def test_sync_is_idempotent_and_collapses_solutions(tmp_path: Path) -> None:
    path = tmp_path / NOTEBOOKS[-1].name
    path.write_text(NOTEBOOKS[-1].read_text())
    sync_notebooks.sync(path)
    assert sync_notebooks.in_sync(path) and not sync_notebooks.sync(path)
    for cell in _load(path).cells:
        if _grader(cell).get("solution") and cell.cell_type == "code":
            assert cell.metadata["jupyter"] == {"source_hidden": True, "outputs_hidden": True}


# ----- the student edition -----

def test_one_student_copy_per_notebook() -> None:
    assert sorted(p.name for p in STUDENT.glob("*.ipynb")) == [p.name for p in NOTEBOOKS], "run `make student`"


@ids
def test_student_copy_is_up_to_date(path: Path) -> None:
    copy = STUDENT / path.name
    assert copy.exists() and copy.read_text(encoding="utf-8") == student.render(path), "run `make student`"


@ids
def test_student_copy_has_no_answers_and_no_outputs(path: Path) -> None:
    teacher, copy = _load(path), _load(STUDENT / path.name)
    text = "\n".join(c.source for c in copy.cells)
    lines = {line.strip() for line in text.splitlines()}
    for marker in MARKERS:
        assert marker not in text, f"{marker} left in the student copy"
    shown = {line.strip() for c in teacher.cells if not _grader(c).get("solution")
             for line in _regions(c.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")[1]}
    for cell in teacher.cells:
        if _grader(cell).get("solution"):
            answer = {line.strip() for line in _regions(cell.source, "BEGIN SOLUTION", "END SOLUTION")[0]}
        elif _grader(cell).get("grade"):
            answer = {line.strip() for line in _regions(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")[0]}
        else:
            continue
        for line in answer - shown:
            if len(line) >= 12 and not line.startswith("#"):
                assert line not in lines, f"a line of an answer is in the student copy: {line!r}"
    for cell in copy.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"an output is left: {cell.source[:60]!r}"
        if _grader(cell).get("solution"):
            assert not cell.metadata.get("jupyter", {}).get("source_hidden"), "the stub to fill in is expanded"


@ids
def test_student_copy_links_the_student_copies(path: Path) -> None:
    copy = _load(STUDENT / path.name)
    head = copy.cells[0].source
    assert f"github/{REPO}/blob/main/student/{path.name}" in head, "Open in Colab opens the student copy"
    assert f"?labpath=student%2F{path.name}" in head, "Binder opens the student copy"
    assert "/blob/main/notebooks/" not in head.replace(f"github.com/{REPO}/blob/main/notebooks/{path.name}", ""), (
        "no badge opens the teacher's edition"
    )
    assert "**Student edition.**" in head and f"github.com/{REPO}/blob/main/notebooks/{path.name}" in head
    last = copy.cells[-1].source
    for target in re.findall(r"\]\((\d\d_\w+\.ipynb)\)", last):
        assert (STUDENT / target).exists(), f"Next: {target} is not in student/"


def test_course_config_stub_and_repository() -> None:
    config = student.course_config()
    assert config.ClearSolutions.code_stub == {"python": "# YOUR CODE HERE\npass"}
    edition = [p for p in config.GenerateAssignment.preprocessors if p.__name__ == "StudentEdition"]
    assert edition and edition[0].class_traits()["repository"].default() == REPO, "the repository of setup_cell.py"


def test_a_stubbed_exercise_runs_and_scores_zero(tmp_path: Path) -> None:
    """Through the real config: the stub returns None, the visible check says 'not attempted', the hidden one fails."""
    from mha_lib.checks import CheckFailed

    solution = {"nbgrader": {"grade": False, "grade_id": "ex", "locked": False, "schema_version": 3,
                             "solution": True, "task": False}, "tags": ["solution"]}
    check = {"nbgrader": {"grade": True, "grade_id": "ex-check", "locked": True, "points": 1, "schema_version": 3,
                          "solution": False, "task": False}}
    cells = [
        _cell("md", "# 04 · Test\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                    f"(https://colab.research.google.com/github/{REPO}/blob/main/notebooks/04_test.ipynb)"),
        _cell("code", "import torch\nfrom mha_lib import checks, masked_softmax"),
        _cell("code", "def mine(scores, valid_lens):\n    ### BEGIN SOLUTION\n    return masked_softmax(scores, "
                      "valid_lens)\n    ### END SOLUTION", **solution),
        _cell("code", "checks.masked_softmax(mine)\n### BEGIN HIDDEN TESTS\nchecks.masked_softmax(mine, strict=True)\n"
                      "### END HIDDEN TESTS", **check),
        _cell("code", "### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", **{**solution, "nbgrader": {
            **solution["nbgrader"], "grade_id": "ex2"}}),
    ]
    path = tmp_path / "04_test.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    copy = student.student_notebook(path)
    assert copy.cells[2].source.endswith("# YOUR CODE HERE\n    pass") and "return" not in copy.cells[2].source
    assert "strict" not in copy.cells[3].source and copy.cells[4].source == "# YOUR CODE HERE\npass"
    assert "blob/main/student/04_test.ipynb" in copy.cells[0].source
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for cell in copy.cells[1:]:
            exec(cell.source, namespace)
    assert "not attempted yet" in out.getvalue()
    with pytest.raises(CheckFailed):
        exec("checks.masked_softmax(mine, strict=True)", namespace)


# ----- the course folder, RISE, the slides' assets -----

def test_nbgrader_course_folder(tmp_path: Path) -> None:
    ids = create(tmp_path / "course", NOTEBOOKS[:2])
    assert ids == [p.stem for p in NOTEBOOKS[:2]]
    assert (tmp_path / "course" / "nbgrader_config.py").read_text() == student.CONFIG.read_text()
    assert (tmp_path / "course" / "source" / ids[0] / NOTEBOOKS[0].name).exists()


def test_rise_is_enabled_in_the_lab() -> None:
    """jupyterlab-rise's extension is installed and enabled in the JupyterLab `make lab` runs."""
    listing = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True,
                             text=True, timeout=120)
    line = next((x for x in (listing.stdout + listing.stderr).splitlines() if "jupyterlab-rise" in x), "")
    assert "enabled" in line and "OK" in line, f"jupyterlab-rise not enabled: {line or 'not listed'}"


def test_slide_assets_are_pinned_to_what_the_template_loads() -> None:
    package = json.loads((ROOT / "package.json").read_text())["dependencies"]
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in package.values()), "exact versions"
    for name, version in package.items():
        assert lock[f"node_modules/{name}"]["version"] == version, f"package-lock.json vs package.json: {name}"
    assert package["reveal.js"].startswith("4."), "nbconvert's reveal template loads reveal.js 4 (dist/reveal.js)"
    assert package["mathjax"].startswith("2."), "the template calls MathJax 2's MathJax.Hub"
    assert set(slides.ASSETS) == set(package)
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "slides/" in ignored and "node_modules/" in ignored



def test_a_deck_loads_nothing_from_the_internet() -> None:
    """tools/slides.py's exporter: every script and style from lib/, no badges, links to the next deck."""
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    figure = nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": png, "text/plain": "[diagram 99_x: a picture]"})])
    cells = [_cell("md", "# 99 · Test\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                         "(https://colab.research.google.com/github/x/y/blob/main/notebooks/99_test.ipynb)\n\n$x^2$"),
             figure, _cell("md", "**Next:** [00 · Start](00_start_here.ipynb)")]
    html, _ = slides.exporter().from_notebook_node(nbformat.v4.new_notebook(cells=cells))
    loaded = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
    loaded += re.findall(r"import \w+ from '([^']+)'", html) + re.findall(r'"([^"]*/dist/reveal\.js)"', html)
    assert loaded and all(url.startswith("lib/") for url in loaded), loaded
    assert "colab-badge" not in html and 'href="00_start_here.slides.html"' in html
    assert 'alt="diagram 99_x: a picture"' in html and "1280" in html and "800" in html

# ----- the teacher's guide -----

@ids
def test_teachers_notes(path: Path) -> None:
    notes = ROOT / "teaching" / f"{path.stem}.md"
    assert notes.exists(), f"teaching/{notes.name} is missing"
    text = notes.read_text()
    title = _load(path).cells[0].source.splitlines()[0].removeprefix("# ")
    heading = text.splitlines()[0].removeprefix("# ")
    assert heading.endswith(": teacher's notes") and title.startswith(heading.removesuffix(": teacher's notes")), (
        f"headed '# {title}: teacher's notes' (or a shorter title: '# {title.split(':')[0]}: teacher's notes')"
    )
    positions = [text.find(f"\n{section}\n") for section in SECTIONS]
    missing = [s for s, at in zip(SECTIONS, positions) if at < 0]
    assert not missing, f"missing sections: {missing}"
    assert positions == sorted(positions), "sections in the order of teaching/README.md"
    quiz = text[positions[4]:positions[5]]
    assert "<details><summary>Answers</summary>" in quiz, "quiz answers folded"


def test_guide_index_lists_every_notebook() -> None:
    index = (ROOT / "teaching" / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"]({path.stem}.md)" in index, f"teaching/README.md does not link {path.stem}.md"


# ----- the commands -----

def test_make_targets_and_ci() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("student", "slides", "test-kit"):
        assert re.search(rf"^{target}:", makefile, re.M) and f"make {target} " in makefile, f"make {target} + help"
    assert (ROOT / ".ci" / "run").read_text().count("make --no-print-directory test-kit") == 1
    notebooks = makefile.split("\nnotebooks:")[1].split("\n\n")[0]
    assert notebooks.count("tools/sync_notebooks.py") == 2, "sync before executing and after (slide heights)"

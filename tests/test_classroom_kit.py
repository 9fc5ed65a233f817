"""The classroom kit (teaching/README.md): graded exercises in nbgrader markup, the student edition, slides, guide.

Fast checks, run by `make test`. The slow ones (every student copy run top to bottom, the nbgrader round trip)
are in test_kit_roundtrip.py (`make test-kit`); the slides in a browser are in browser/test_slides.py.
"""

from __future__ import annotations

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
from nbgrader_course import create, parse_dues, roster_rows  # noqa: E402
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


def test_a_stubbed_exercise_fails_its_check_cell_and_run_all_goes_on(tmp_path: Path) -> None:
    """Through the real config: the stub returns None, the check cell raises "not attempted yet" (so Validate fails
    it) and is tagged raises-exception (so Run All carries on); a markdown answer becomes YOUR ANSWER HERE."""
    from mha_lib.checks import CheckFailed

    solution = {"nbgrader": {"grade": False, "grade_id": "ex", "locked": False, "schema_version": 3,
                             "solution": True, "task": False}, "tags": ["solution"]}
    check = {"nbgrader": {"grade": True, "grade_id": "ex-check", "locked": True, "points": 1, "schema_version": 3,
                          "solution": False, "task": False}}
    written = {"nbgrader": {"grade": True, "grade_id": "ex3-why", "locked": False, "points": 2, "schema_version": 3,
                            "solution": True, "task": False}}
    cells = [
        _cell("md", "# 04 · Test\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                    f"(https://colab.research.google.com/github/{REPO}/blob/main/notebooks/04_test.ipynb)"),
        _cell("code", "import torch\nfrom mha_lib import checks"),
        _cell("code", "def mine(scores, valid_lens):\n    ### BEGIN SOLUTION\n"
                      "    keys = torch.arange(scores.shape[-1])\n"
                      "    return torch.softmax(scores.masked_fill(keys >= valid_lens[:, None, None], -1e9), -1)\n"
                      "    ### END SOLUTION", **solution),
        _cell("code", "from mha_lib import checks\n\nchecks.masked_softmax(mine)\n### BEGIN HIDDEN TESTS\n"
                      "checks.masked_softmax(mine, strict=True)\n### END HIDDEN TESTS", **check),
        _cell("code", "### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", **{**solution, "nbgrader": {
            **solution["nbgrader"], "grade_id": "ex2"}}),
        _cell("md", "Because the row has no key.\n\n**Mark scheme (2 points).** 1 point: ...", **written),
    ]
    path = tmp_path / "04_test.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    copy = student.student_notebook(path)
    assert copy.cells[2].source.endswith("# YOUR CODE HERE\n    pass") and "return" not in copy.cells[2].source
    assert "strict" not in copy.cells[3].source and copy.cells[4].source == "# YOUR CODE HERE\npass"
    assert copy.cells[3].metadata["tags"] == ["raises-exception"]
    assert copy.cells[5].source == "YOUR ANSWER HERE", "a markdown answer cell is replaced whole"
    assert "blob/main/student/04_test.ipynb" in copy.cells[0].source
    namespace: dict = {}
    for cell in copy.cells[1:3]:
        exec(cell.source, namespace)
    with pytest.raises(CheckFailed, match="not attempted yet"):
        exec(copy.cells[3].source, namespace)


def test_for_students_replaces_teacher_passages() -> None:
    """The markers of the teacher's edition (notebook-kit conventions): inline, across lines, whole paragraphs."""
    for_students = student.for_students
    assert for_students("no markers, <b>html</b> kept") == "no markers, <b>html</b> kept"
    assert for_students("The answers <!-- teacher -->follow, collapsed<!-- /teacher --><!-- student: go in the cell "
                        "under each question -->.") == "The answers go in the cell under each question."
    assert for_students("A.\n\n<!-- teacher -->These notebooks are the teacher's edition:\nanswers collapsed.\n\n"
                        "Second paragraph.<!-- /teacher -->\n\nB.") == "A.\n\nB."
    assert for_students("<!-- teacher -->\nold\n<!-- /teacher -->\n<!-- student:\nWrite **yours**\nhere.\n-->\nEnd"
                        ) == "Write **yours**\nhere.\nEnd"
    assert for_students("x <!--teacher-->a<!--/teacher--> y <!-- teacher -->b<!-- /teacher --><!-- student: c --> z"
                        ) == "x  y c z"
    assert for_students("<!-- teacher -->only the teacher's<!-- /teacher -->") == ""


TEACHER_WORDING = ("teacher's edition", "collapsed", "saved here", "run saved", "after the solutions",
                   "after the answers")


def _teacher_wording(copy: nbformat.NotebookNode) -> list[str]:
    """Teacher-only phrases in a student copy, outside the generated note under its badges."""
    found = []
    for index, cell in enumerate(copy.cells):
        text = cell.source
        if index == 0:  # the generated note under the badges may name the teacher's edition (its link)
            text = re.sub(r"^> \*\*Student edition\.\*\*.*$", "", text, flags=re.M)
        found += [f"cell {index}: {phrase!r}" for phrase in TEACHER_WORDING if phrase in " ".join(text.lower().split())]
    return found


@ids
def test_student_copy_speaks_to_students(path: Path) -> None:
    """No teacher-only wording in a student copy (W1, W2, M1, M2): mark it <!-- teacher --> in notebooks/."""
    found = _teacher_wording(_load(STUDENT / path.name))
    assert not found, "teacher's wording in the student copy (wrap it in <!-- teacher -->...<!-- /teacher -->): " + (
        "; ".join(found))


@ids
def test_written_questions_are_marked_by_hand(path: Path) -> None:
    """G2: every solution cell is an implement-it function (its check cell follows) or a hand-marked answer with
    points and a mark scheme; prose answers are markdown cells."""
    cells = _load(path).cells
    for index, cell in enumerate(cells):
        grader = _grader(cell)
        if not grader.get("solution"):
            continue
        following = next((c for c in cells[index + 1:] if c.cell_type == "code"), None)
        checked = (cell.cell_type == "code" and following is not None and _grader(following).get("grade")
                   and "checks." in following.source)
        if checked:
            continue
        if cell.cell_type == "code" and not grader.get("grade") and any(
                _grader(c).get("grade") and c.cell_type == "markdown" and _grader(c).get("solution")
                for c in cells[index + 1:index + 3]):
            continue  # code that an explanation cell right after it is marked with
        assert grader.get("grade") and grader.get("points", 0) > 0, (
            f"{grader['grade_id']}: a question's answer is graded by hand (nbgrader grade: true, points 1 or 2)")
        assert re.search(r"mark scheme", cell.source, re.I), f"{grader['grade_id']}: a mark scheme in the answer cell"
        if cell.cell_type == "code":
            inside, _ = _regions(cell.source, "BEGIN SOLUTION", "END SOLUTION")
            assert any("mark scheme" in line.lower() for line in inside), (
                f"{grader['grade_id']}: the mark scheme sits inside ### BEGIN/END SOLUTION (the stub drops it)")
        else:
            assert "BEGIN SOLUTION" not in cell.source, f"{grader['grade_id']}: no solution markers in markdown"


@ids
def test_check_cells_import_checks_themselves(path: Path) -> None:
    """M5: a locked check cell does not depend on an import cell the student may edit."""
    for cell in _load(path).cells:
        if cell.cell_type == "code" and _grader(cell).get("grade") and "checks." in cell.source:
            assert cell.source.startswith("from mha_lib import checks"), (
                f"{_grader(cell)['grade_id']}: start the check cell with `from mha_lib import checks`")


@ids
def test_stubs_keep_no_teacher_lines(path: Path) -> None:
    """M3: what only the teacher's answer needs (NBVAL_IGNORE_OUTPUT) stays inside the solution region."""
    for cell in _load(STUDENT / path.name).cells:
        if _grader(cell).get("solution"):
            assert "NBVAL_IGNORE_OUTPUT" not in cell.source, f"{_grader(cell)['grade_id']}: {cell.source[:80]!r}"


@ids
def test_a_markdown_answer_is_blank_in_the_student_copy(path: Path) -> None:
    for cell in _load(STUDENT / path.name).cells:
        if cell.cell_type == "markdown" and _grader(cell).get("solution"):
            assert cell.source == "YOUR ANSWER HERE", f"{_grader(cell)['grade_id']}: {cell.source[:80]!r}"


@ids
def test_check_cells_carry_on_in_the_student_copy(path: Path) -> None:
    for cell in _load(STUDENT / path.name).cells:
        if cell.cell_type == "code" and _grader(cell).get("grade") and "checks." in cell.source:
            assert "raises-exception" in cell.metadata.get("tags", []), _grader(cell)["grade_id"]


# ----- the course folder, RISE, the slides' assets -----

def _head() -> str:
    """A commit of this repository (its HEAD, short): a ref the course tool accepts in any clone, tags or not."""
    done = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        pytest.skip("not a git checkout")
    return done.stdout.strip()


def test_nbgrader_course_folder(tmp_path: Path) -> None:
    ids = create(tmp_path / "course", NOTEBOOKS[:2])
    assert ids == [p.stem for p in NOTEBOOKS[:2]]
    config = (tmp_path / "course" / "nbgrader_config.py").read_text()
    assert config.startswith(student.CONFIG.read_text()) and "c.StudentEdition.teacher_link = False" in config
    assert (tmp_path / "course" / "source" / ids[0] / NOTEBOOKS[0].name).exists()
    head = _head()
    create(tmp_path / "course", NOTEBOOKS[:1], ref=head)  # run again: one managed block, now with the ref
    config = (tmp_path / "course" / "nbgrader_config.py").read_text()
    assert config.count("teacher_link = False") == 1 and f"c.StudentEdition.ref = {head!r}" in config
    with pytest.raises(ValueError, match="ref must be a git tag or commit"):
        create(tmp_path / "course", NOTEBOOKS[:1], ref="main; rm -rf")


def test_a_ref_that_is_not_in_the_repository_is_refused(tmp_path: Path) -> None:
    """N-W1: `--ref v1999.1` (no such tag) fails, names the argument, and writes no course folder."""
    import nbgrader_course

    _head()
    with pytest.raises(ValueError, match=r"--ref 'v1999\.1' is not a tag or commit of this repository"):
        create(tmp_path / "course", NOTEBOOKS[:1], ref="v1999.1")
    assert not (tmp_path / "course").exists(), "a refused ref leaves nothing behind"
    with pytest.raises(SystemExit):
        nbgrader_course.main([str(tmp_path / "course2"), "00", "--ref", "0123456789abcdef0123"])
    assert not (tmp_path / "course2").exists()


def test_a_ref_whose_notebooks_differ_from_the_checkout_is_flagged_and_own_cases_are_kept(tmp_path: Path) -> None:
    """The assignments are copied from the checkout: a ref whose notebooks differ gets a warning (check it out
    first); running the tool again keeps a source notebook the lecturer changed (their own hidden case)."""
    import nbgrader_course

    _head()
    first = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    same = first and subprocess.run(["git", "diff", "--quiet", first[-1], "--", "notebooks", "mha_lib"], cwd=ROOT)
    if not same or same.returncode == 0:
        pytest.skip("a shallow clone: no older commit with other notebooks")
    assert "differ from" in (nbgrader_course.check_ref(first[-1]) or ""), "the first commit's notebooks differ"
    assert nbgrader_course.check_ref(_head()) is None
    create(tmp_path / "course", NOTEBOOKS[:1])
    source = tmp_path / "course" / "source" / NOTEBOOKS[0].stem / NOTEBOOKS[0].name
    source.write_text(source.read_text() + " ")
    create(tmp_path / "course", NOTEBOOKS[:1])
    assert source.read_text().endswith(" "), "the lecturer's source/ is kept"


def test_outside_a_git_checkout_only_a_release_tag_or_a_hash_is_taken(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    import nbgrader_course

    monkeypatch.setattr(nbgrader_course, "ROOT", tmp_path)  # a downloaded zip: no .git
    assert "not checked" in nbgrader_course.check_ref("v2026.1")
    assert "not checked" in nbgrader_course.check_ref("3f2c1ab")
    with pytest.raises(ValueError, match="not a git checkout, so the ref cannot be checked"):
        nbgrader_course.check_ref("my-branch")


def test_a_pinned_release_opens_and_installs_its_ref(tmp_path: Path) -> None:
    """G4/M8: --ref rewrites the badges and the setup cell's install line; the graded release links no answers."""
    path = NOTEBOOKS[12 if len(NOTEBOOKS) > 12 else -1]
    ref = _head()
    create(tmp_path / "course", [path], ref=ref)
    copy = student.student_notebook(path, tmp_path / "course" / "nbgrader_config.py")
    head = copy.cells[0].source
    assert f"github/{REPO}/blob/{ref}/student/{path.name}" in head and f"gh/{REPO}/{ref}?labpath=student" in head
    assert "/blob/main/" not in head and "teacher's edition" not in head.lower()
    setup = next(c for c in copy.cells if c.cell_type == "code")
    assert f'"mha_lib @ git+{REPOSITORY}@{ref}"' in setup.source


def test_a_release_without_badges_and_without_pointers_to_the_answers(tmp_path: Path) -> None:
    """N-M3: --no-badges drops Colab and Binder (they open the public copy, which links the answers), and a graded
    release of 00 no longer says where the answers are ("linked at the top": nothing is linked)."""
    create(tmp_path / "course", NOTEBOOKS[:1], badges=False)
    copy = student.student_notebook(NOTEBOOKS[0], tmp_path / "course" / "nbgrader_config.py")
    text = "\n".join(c.source for c in copy.cells)
    assert "colab.research.google.com" not in text and "mybinder.org" not in text
    assert copy.cells[0].source.splitlines()[2].startswith("> **Student edition.**"), copy.cells[0].source[:300]
    assert "linked at the top" not in text and "The edition with the answers" not in text
    public = "\n".join(c.source for c in _load(STUDENT / NOTEBOOKS[0].name).cells)
    assert "linked at the top" in public, "the public student copy links the teacher's edition, and says so"


def test_student_copies_say_how_a_student_installed() -> None:
    """N-M4: no student copy says `make lab` installed everything (students install with INSTALL.md)."""
    for folder, wrong, right in ((STUDENT, "locally `make lab` already did", "INSTALL.md"),
                                 (ROOT / "pt-BR" / "student", "localmente, `make lab` já fez isso", "INSTALL.md")):
        for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            copy = _load(path)
            text = " ".join("\n".join(c.source for c in copy.cells).split())
            assert wrong not in text and "`make lab` has already installed" not in text, path
            assert "`make lab` já instalou" not in text, path
            setup = next(c for c in copy.cells if c.cell_type == "code")
            assert right in setup.source, path


def test_validate_shows_every_hint_whole() -> None:
    """N-M1: c.Validator.width exceeds the longest line any check prints for its known bugs (tests/check_cases),
    with Validate's indent and its "..." (nbgrader cuts a line at width - 3)."""
    import contextlib
    import importlib
    import io

    from mha_lib.checks import CheckFailed
    from mha_lib.checks._core import library_allowed

    config = student.course_config()
    rows = [row for module in sorted((ROOT / "tests" / "check_cases").glob("[a-z]*.py"))
            for row in importlib.import_module(f"check_cases.{module.stem}").ROWS]
    longest = ""
    with library_allowed():
        for check, _, bugs in rows:
            for bug, _ in bugs:
                with contextlib.redirect_stdout(io.StringIO()), pytest.raises(CheckFailed) as caught:
                    check(bug)
                longest = max([longest, *caught.value._render_traceback_()], key=len)
    indent = config.Validator.indent if "indent" in config.Validator else "    "
    assert len(indent + longest) <= config.Validator.width - 3, (len(longest), longest)


def test_the_late_policy() -> None:
    """G4: late work recorded without a penalty by default; per_day per started day, after an extension."""
    from traitlets.config import Config

    policy = next(v for k, v in _config_namespace().items() if k == "LatePolicy")
    day = 86400
    assert policy().late_submission_penalty("1", 10.0, 3 * day) == 0.0
    strict = policy(config=Config({"LatePolicy": {"per_day": 0.1, "extensions": {"2": 48, "3": {"03_x": 24}}}}))
    assert strict.late_submission_penalty("1", 10.0, 1) == pytest.approx(1.0)  # one second: one started day
    assert strict.late_submission_penalty("1", 10.0, day + 1) == pytest.approx(2.0)
    assert strict.late_submission_penalty("1", 10.0, 20 * day) == 10.0, "never more than the score"
    assert strict.late_submission_penalty("2", 10.0, 2 * day) == 0.0, "within the 48 h extension"
    assert strict.late_submission_penalty("3", 10.0, day) == pytest.approx(1.0), "no parent: not this assignment"


def _config_namespace() -> dict:
    """The names the shipped config defines (its classes), as nbgrader reads it."""
    import runpy

    from traitlets.config import Config

    return runpy.run_path(str(student.CONFIG), init_globals={"get_config": lambda: Config()})


def test_a_roster_from_moodle_and_from_canvas(tmp_path: Path) -> None:
    """G5: the platforms' exports become nbgrader's roster, ids as in their submissions' file names."""
    moodle = tmp_path / "worksheet.csv"
    moodle.write_text("Identifier,Full name,Email address,Status,Grade,Maximum Grade\n"
                      "Participant 12345,Ada Lovelace,ada@example.org,Submitted for grading,,10.00\n"
                      "Participant 23456,Grace Brewster Hopper,grace@example.org,No submission,,10.00\n",
                      encoding="utf-8-sig")
    assert roster_rows(moodle) == [
        {"id": "12345", "first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.org",
         "lms_user_id": "Participant 12345"},
        {"id": "23456", "first_name": "Grace Brewster", "last_name": "Hopper", "email": "grace@example.org",
         "lms_user_id": "Participant 23456"}]
    canvas = tmp_path / "grades.csv"
    canvas.write_text('Student,ID,SIS User ID,SIS Login ID,Section,Week 2 (4411)\n'
                      '    Points Possible,,,,,13\n"Lovelace, Ada",12345,s001,ada,A,\n'
                      '"Student, Test",99999,,,A,\n', encoding="utf-8")
    assert roster_rows(canvas) == [{"id": "12345", "first_name": "Ada", "last_name": "Lovelace", "email": "",
                                    "lms_user_id": "s001"}]
    other = tmp_path / "other.csv"
    other.write_text("Name,Mark\nAda,3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a roster this tool reads"):
        roster_rows(other)


def test_a_due_date_needs_its_offset() -> None:
    assert parse_dues(["03=2027-02-08T09:00+01:00", "04=2027-02-08 09:00Z"]) == [
        ("03", "2027-02-08T09:00:00+01:00"), ("04", "2027-02-08T09:00:00+00:00")]
    with pytest.raises(ValueError, match="give the UTC offset"):
        parse_dues(["03=2027-02-08T09:00"])


def test_the_marking_table_and_the_week_files(tmp_path: Path) -> None:
    """G1: the guide's marking load is counted from the notebooks; each week's file holds every scheme."""
    import assessment
    import marking

    assert marking.main(["--check"]) == 0, "run: python tools/marking.py --guide"
    written = marking.write_weeks(tmp_path)
    assert [p.name for p in written] == [f"week-{w}.md" for w in assessment.WEEKS] + ["optional-12.md"]
    hand = sum(assessment.points(p)[1] for p in NOTEBOOKS if p.name[:2] in sum(
        (n for n, _ in assessment.WEEKS.values()), []))
    text = "".join(p.read_text(encoding="utf-8") for p in written[:-1])
    cells = [c for p in NOTEBOOKS if p.name[:2] != "12" for c in _load(p).cells
             if _grader(c).get("grade") and _grader(c).get("solution")]
    assert text.count("\n### `") == len(cells) and sum(a["points"] for p in NOTEBOOKS if p.name[:2] != "12"
                                                         for a in marking.answers(p)) == hand
    for cell in cells:
        assert f"`{_grader(cell)['grade_id']}`" in text
    assert text.count("(no mark scheme)") == 0, "every hand-marked answer has its mark scheme"


def test_students_can_be_spared_the_instructor_menus() -> None:
    """N-M10: INSTALL.md's lines that hide nbgrader's instructor tools name extensions this nbgrader installs (the
    round trip, `make test-kit`, runs them)."""
    text = (ROOT / "INSTALL.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("jupyter ") and " disable " in line]
    assert len(lines) == 5, lines
    static = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader" / "static"
    plugins = {m for js in static.glob("*.js") for m in re.findall(r'"(@jupyter/nbgrader:[a-z-]+)"', js.read_text())}
    listing = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    servers = set(json.loads(listing.read_text())["ServerApp"]["jpserver_extensions"])
    named = {line.split()[-1] for line in lines}
    assert named == {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                     "@jupyter/nbgrader:course-list", "nbgrader.server_extensions.formgrader",
                     "nbgrader.server_extensions.course_list"}
    assert named <= plugins | servers, named - plugins - servers


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
    for target in ("student", "slides", "test-kit", "lab-student", "test-install"):
        assert re.search(rf"^{target}:", makefile, re.M) and f"make {target} " in makefile, f"make {target} + help"
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.count("make --no-print-directory test-kit") == 1 and ci.count("make --no-print-directory test-install")
    notebooks = makefile.split("\nnotebooks:")[1].split("\n\n")[0]
    assert notebooks.count("tools/sync_notebooks.py") == 2, "sync before executing and after (slide heights)"


def test_a_release_can_be_named() -> None:
    """G4: mha_lib.__version__ is YYYY.N, the tag vYYYY.N a term pins (`nbgrader_course.py --ref vYYYY.N`)."""
    import mha_lib

    assert re.fullmatch(r"20\d\d\.[1-9]\d*", mha_lib.__version__), mha_lib.__version__
    assert 'version = { attr = "mha_lib.__version__" }' in (ROOT / "pyproject.toml").read_text()
    guide = (ROOT / "teaching" / "README.md").read_text()
    assert "vYYYY.N" in guide and "--ref" in guide, "teaching/README.md, 'Pin your term', names the tag scheme"


def test_student_copies_at_a_release_tag_keep_their_ref(tmp_path: Path) -> None:
    """`student_edition.py --ref vYYYY.N` (a release commit): badges and setup cell at the tag, kept by --check."""
    path = NOTEBOOKS[0]
    assert student.main(["--out", str(tmp_path), "--ref", "v2027.1", str(path)]) == 0
    copy = tmp_path / path.name
    assert student.ref_of(copy) == "v2027.1" and f"blob/v2027.1/student/{path.name}" in copy.read_text()
    assert student.main(["--out", str(tmp_path), "--check", str(path)]) == 0, "--check keeps the copy's ref"


def _masked_softmax_by_hand(scores, valid_lens):
    import torch

    keys = torch.arange(scores.shape[-1])
    lens = valid_lens[:, None, None] if valid_lens.dim() == 1 else valid_lens[..., None]
    return torch.softmax(scores.masked_fill(keys >= lens, float("-inf")), dim=-1).nan_to_num(0.0)


def test_the_guides_own_hidden_case_runs_and_catches_a_bug(capsys: pytest.CaptureFixture) -> None:
    """teaching/README.md, "Your own hidden case": the example cell passes a right answer and fails one that only
    the teacher's case catches."""
    from mha_lib.checks import CheckFailed

    guide = (ROOT / "teaching" / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", guide.split("### Your own hidden case")[1], re.S).group(1)
    assert "### BEGIN HIDDEN TESTS" in code and "checks.Case(" in code and "checks.run(" in code
    exec(code, {"masked_softmax_by_hand": _masked_softmax_by_hand})
    assert capsys.readouterr().out.startswith("✓ masked_softmax: all ")

    def right_but_on_four_keys(scores, valid_lens):
        weights = _masked_softmax_by_hand(scores, valid_lens)
        return weights.flip(-1) if tuple(scores.shape) == (1, 1, 4) else weights

    with pytest.raises(CheckFailed, match="the last key is padding"):
        exec(code, {"masked_softmax_by_hand": right_but_on_four_keys})


def test_the_teaching_extra_sets_up_a_course_in_a_translated_edition() -> None:
    """The documented install ("teaching" extra) has what ``nbgrader_course.py --edition pt-BR`` imports: the kit's
    words come from the edition's catalog, read with polib (field notes: a Portuguese course stopped on it)."""
    import importlib.util

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    teaching = re.search(r"^teaching = \[(.*?)\]", text, re.M).group(1)
    extra = {re.match(r'"([A-Za-z0-9_.-]+)', item.strip()).group(1) for item in teaching.split(",") if item.strip()}
    tool = (ROOT / "tools" / "translations.py").read_text(encoding="utf-8")
    third_party = {"polib"} & set(re.findall(r"^import (\w+)", tool, re.M))
    assert third_party == {"polib"} and third_party <= extra, f"the teaching extra lacks {third_party - extra}"
    assert importlib.util.find_spec("polib") is not None

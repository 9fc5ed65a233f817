"""The classroom kit end to end, with real nbgrader (`make test-kit`; skipped otherwise: it takes minutes).

In a temporary course folder set up by tools/nbgrader_course.py (teaching/nbgrader_config.py plus the block the
tool writes: no link to the answers), ``nbgrader generate_assignment`` releases every notebook, and each release
must be what tools/student_edition.py makes with that config. Then ``nbgrader autograde`` grades three submissions
of every notebook with a graded exercise:

- ``teacher``: the teacher's edition (hidden tests already inside): every autograded point;
- ``untouched``: the release as it was handed out: zero points, and its run goes to the end, each check cell
  stopping with "not attempted yet" (CheckFailed) and nothing else failing;
- ``filled``: the release with the teacher's answers pasted into its answer cells, as a student who got everything
  right would submit it: every autograded point, with the hidden tests nbgrader puts back. Only for FILLED (03 and
  04, the latter with two check cells): each submission is one more run of the notebook, and CI has 45 minutes.

The written answers are graded by hand: autograde leaves them to the grader (0 when left blank), and a mark set
through nbgrader's gradebook API, as formgrader sets it, reaches ``nbgrader export``'s grades.csv.

``nbgrader validate`` (the Validate button) runs on three submissions of VALIDATED (03): untouched and wrong must
fail, right (the filled release) must pass. ``MHA_KIT_ONLY="03 12"`` limits the whole test to those notebooks.
The scores are printed. The other half of `make test-kit` runs the student copies on the Colab simulation.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

if os.environ.get("MHA_KIT_TEST") != "1":
    pytest.skip("the nbgrader round trip: run `make test-kit`", allow_module_level=True)

from nbgrader.api import Gradebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import student_edition  # noqa: E402
from nbgrader_course import create, graded  # noqa: E402

ONLY = os.environ.get("MHA_KIT_ONLY", "").split()
NOTEBOOKS = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if not ONLY or p.name[:2] in ONLY]
GRADED = [p for p in NOTEBOOKS if graded(p)]
# Validate executes the notebook once per submission: one notebook is enough to show what the button says.
VALIDATED = [p for p in GRADED if p.name.startswith("03_")] or GRADED[:1]
FILLED = [p for p in GRADED if p.name[:2] in ("03", "04")] or GRADED[:1]
NBGRADER = [sys.executable, "-m", "nbgrader"]
SUBMISSIONS = ("teacher", "untouched", "filled")


def _grader(cell: nbformat.NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def _checked(cell: nbformat.NotebookNode) -> bool:
    """A check cell: graded, not an answer, calls mha_lib.checks (autograded)."""
    grader = _grader(cell)
    return cell.cell_type == "code" and grader.get("grade") and not grader.get("solution") and "checks." in cell.source


def _by_hand(cell: nbformat.NotebookNode) -> bool:
    """An answer marked by hand: graded and a solution (nbgrader's "manually graded answer")."""
    return bool(_grader(cell).get("grade") and _grader(cell).get("solution"))


def _env() -> dict[str, str]:
    # nbgrader runs the `alembic` command of its environment (the gradebook's schema): the venv's bin on PATH.
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _nbgrader(course: Path, *args: str) -> str:
    result = subprocess.run([*NBGRADER, *args], cwd=course, env=_env(), capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


def _answered(release: nbformat.NotebookNode, teacher: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The release with the teacher's answer pasted into each answer cell (the solution markers left out)."""
    answers = {_grader(c)["grade_id"]: c.source for c in teacher.cells if _grader(c).get("solution")}
    filled = nbformat.from_dict(release)
    for cell in filled.cells:
        if _grader(cell).get("solution"):
            lines = answers[_grader(cell)["grade_id"]].splitlines()
            cell.source = "\n".join(line for line in lines if not re.match(r"\s*### (BEGIN|END) SOLUTION", line))
    return filled


def _wrong(filled: nbformat.NotebookNode, release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The filled release whose implement-it functions return 0: every written answer given, every check failing."""
    wrong = nbformat.from_dict(filled)
    stubs = {_grader(c)["grade_id"]: c.source for c in release.cells if _grader(c).get("solution")}
    for index, cell in enumerate(wrong.cells):
        after = next((c for c in wrong.cells[index + 1:] if c.cell_type == "code"), None)
        if cell.cell_type == "code" and _grader(cell).get("solution") and after is not None and _checked(after):
            cell.source = stubs[_grader(cell)["grade_id"]].replace("    pass", "    return 0")
    return wrong


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A course folder with every notebook released and the graded ones autograded for the three submissions."""
    folder = tmp_path_factory.mktemp("course")
    for assignment in create(folder, NOTEBOOKS):
        _nbgrader(folder, "generate_assignment", assignment)
    for path in GRADED:
        release = nbformat.read(folder / "release" / path.stem / path.name, as_version=4)
        editions = {"teacher": nbformat.read(path, as_version=4), "untouched": release,
                    "filled": _answered(release, nbformat.read(path, as_version=4))}
        for student in SUBMISSIONS if path in FILLED else SUBMISSIONS[:2]:
            target = folder / "submitted" / student / path.stem
            target.mkdir(parents=True)
            nbformat.write(editions[student], target / path.name)
        _nbgrader(folder, "autograde", path.stem)
    yield folder
    print("\nnbgrader autograde scores (points / max; written answers not yet marked by hand):")
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        for path in GRADED:
            scores = {s.student_id: s for s in book.assignment_submissions(path.stem)}
            row = "  ".join(f"{name} {scores[name].score:g}/{scores[name].max_score:g}" for name in SUBMISSIONS
                            if name in scores)
            print(f"  {path.stem:36} {row}")


def _grades(course: Path, path: Path, student: str) -> dict[str, tuple[float | None, float, bool]]:
    """grade_id -> (score, max_score, needs a hand mark) of one submission."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        notebook = book.find_submission_notebook(path.stem, path.stem, student)
        return {g.name: (g.score if g.auto_score is not None or g.manual_score is not None else None, g.max_score,
                         g.needs_manual_grade) for g in notebook.grades}


def _kinds(path: Path) -> tuple[list[str], list[str]]:
    """The grade_ids of the check cells and of the answers marked by hand."""
    cells = nbformat.read(path, as_version=4).cells
    return [_grader(c)["grade_id"] for c in cells if _checked(c)], [_grader(c)["grade_id"] for c in cells
                                                                     if _by_hand(c)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_release_is_the_student_edition(course: Path, path: Path) -> None:
    released = nbformat.read(course / "release" / path.stem / path.name, as_version=4)
    source = course / "source" / path.stem / path.name  # the teacher's edition nbgrader released from
    expected = nbformat.reads(nbformat.writes(student_edition.student_notebook(source, course / "nbgrader_config.py")),
                              as_version=4)
    assert released == expected, "nbgrader's release differs from tools/student_edition.py's with the course config"
    assert "teacher's edition" not in released.cells[0].source.lower(), "a graded release links no answers (M8)"


RIGHT = [(p, "teacher") for p in GRADED] + [(p, "filled") for p in FILLED]


@pytest.mark.parametrize(("path", "student"), RIGHT, ids=[f"{p.stem}-{s}" for p, s in RIGHT])
def test_every_autograded_point(course: Path, path: Path, student: str) -> None:
    """The teacher's edition, and the release with the right answers pasted in, get every check's points."""
    grades = _grades(course, path, student)
    checks, by_hand = _kinds(path)
    assert checks
    for grade_id in checks:
        score, total, _ = grades[grade_id]
        assert total > 0 and score == total, f"{grade_id}: {score}/{total}"
    for grade_id in by_hand:
        score, _, needs = grades[grade_id]
        assert needs and score is None, f"{grade_id}: a written answer waits for the grader ({score}, {needs})"


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_untouched_release_gets_zero(course: Path, path: Path) -> None:
    grades = _grades(course, path, "untouched")
    assert grades and all(score == 0 for score, _, _ in grades.values()), grades


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_untouched_release_runs_to_the_end_and_says_not_attempted(course: Path, path: Path) -> None:
    run = nbformat.read(course / "autograded" / "untouched" / path.stem / path.name, as_version=4)
    for cell in run.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if _checked(cell):
            assert errors and all(e.ename == "CheckFailed" and "not attempted yet" in e.evalue for e in errors), (
                f"{_grader(cell)['grade_id']}: {[(e.ename, e.evalue[:200]) for e in errors]}")
        else:
            assert not errors, f"a stub broke a cell that is no check: {cell.source[:80]!r}: {errors[0].evalue}"


@pytest.mark.parametrize(("path", "student"), RIGHT, ids=[f"{p.stem}-{s}" for p, s in RIGHT])
def test_a_right_submission_runs_without_error_under_nbgrader(course: Path, path: Path, student: str) -> None:
    run = nbformat.read(course / "autograded" / student / path.stem / path.name, as_version=4)
    errors = [(c.source[:80], o.evalue) for c in run.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors, errors[:2]


def test_a_hand_mark_reaches_the_exported_grades(course: Path) -> None:
    """A grader marks one written answer (the gradebook API, as formgrader does); nbgrader export counts it."""
    path = next((p for p in FILLED if _kinds(p)[1]), None)
    assert path is not None, "no notebook has an answer marked by hand (nbgrader grade + solution)"
    checks, by_hand = _kinds(path)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        grade = book.find_grade(by_hand[0], path.stem, path.stem, "filled")
        grade.manual_score = grade.max_score
        mark = grade.max_score
        book.db.commit()
        automatic = sum(book.find_grade(g, path.stem, path.stem, "filled").score for g in checks)
    _nbgrader(course, "export", "--to", str(course / "grades.csv"))
    with open(course / "grades.csv", newline="") as handle:
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(handle)}
    row = rows[(path.stem, "filled")]
    assert float(row["score"]) == pytest.approx(automatic + mark), row
    assert float(row["max_score"]) > float(row["score"]), "the other written answers are not marked yet"


@pytest.mark.parametrize("path", VALIDATED, ids=lambda p: p.stem)
def test_validate_fails_untouched_and_wrong_and_passes_right(course: Path, path: Path, tmp_path: Path) -> None:
    """The Validate button: what `nbgrader validate` says of three submissions."""
    release = nbformat.read(course / "release" / path.stem / path.name, as_version=4)
    filled = _answered(release, nbformat.read(path, as_version=4))
    said = {}
    for name, nb in (("untouched", release), ("wrong", _wrong(filled, release)), ("right", filled)):
        folder = tmp_path / name
        folder.mkdir()
        nbformat.write(nb, folder / path.name)
        said[name] = _nbgrader(course, "validate", str(folder / path.name))
    assert "Success! Your notebook passes all the tests." in said["right"], said["right"][-2000:]
    for name in ("untouched", "wrong"):
        assert "VALIDATION FAILED" in said[name] and "checks." in said[name], said[name][-2000:]
    assert "not attempted yet" in said["untouched"]
    assert "✗" in said["wrong"] and "not attempted yet" not in said["wrong"]

"""The classroom kit end to end, with real nbgrader (`make test-kit`; skipped otherwise: it takes minutes).

In a temporary course folder set up by tools/nbgrader_course.py (teaching/nbgrader_config.py, one assignment per
notebook): ``nbgrader generate_assignment`` releases every notebook, and each release must be the committed student
copy; then ``nbgrader autograde`` grades two submissions of every notebook with a graded exercise: the teacher's
edition (full marks) and the untouched student copy (zero points). The student copy's graded run is its run top to
bottom: no cell but the graded ones may fail, and each visible check says "not attempted yet". The scores are
printed. The other half of `make test-kit` runs the student copies on the Colab simulation.
"""

from __future__ import annotations

import os
import shutil
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
from nbgrader_course import create, graded  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
GRADED = [p for p in NOTEBOOKS if graded(p)]
NBGRADER = [sys.executable, "-m", "nbgrader"]
SUBMISSIONS = {"teacher": ROOT / "notebooks", "untouched": ROOT / "student"}


def _nbgrader(course: Path, *args: str) -> None:
    # nbgrader runs the `alembic` command of its environment (the gradebook's schema): the venv's bin on PATH.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run([*NBGRADER, *args], cwd=course, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A course folder with every notebook released and the graded ones autograded for both submissions."""
    folder = tmp_path_factory.mktemp("course")
    for assignment in create(folder, NOTEBOOKS):
        _nbgrader(folder, "generate_assignment", assignment)
    for path in GRADED:
        for student, edition in SUBMISSIONS.items():
            target = folder / "submitted" / student / path.stem
            target.mkdir(parents=True)
            shutil.copyfile(edition / path.name, target / path.name)
        _nbgrader(folder, "autograde", path.stem)
    yield folder
    print("\nnbgrader autograde scores (points / max):")
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        for path in GRADED:
            scores = {s.student_id: s for s in book.assignment_submissions(path.stem)}
            row = "  ".join(f"{name} {scores[name].score:g}/{scores[name].max_score:g}" for name in SUBMISSIONS
                            if name in scores)
            print(f"  {path.stem:36} {row}")


def _score(course: Path, assignment: str, student: str) -> tuple[float, float]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        submission = book.find_submission(assignment, student)
        return submission.score, submission.max_score


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_release_is_the_student_copy(course: Path, path: Path) -> None:
    released = nbformat.read(course / "release" / path.stem / path.name, as_version=4)
    committed = nbformat.read(ROOT / "student" / path.name, as_version=4)
    assert released == committed, "nbgrader's release differs from student/: run `make student`"


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_teachers_edition_gets_full_marks(course: Path, path: Path) -> None:
    score, total = _score(course, path.stem, "teacher")
    assert total > 0 and score == total, f"{score}/{total}"


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_untouched_student_copy_gets_zero(course: Path, path: Path) -> None:
    score, total = _score(course, path.stem, "untouched")
    assert total > 0 and score == 0, f"{score}/{total}"


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_untouched_copy_runs_to_the_end_and_says_not_attempted(course: Path, path: Path) -> None:
    run = nbformat.read(course / "autograded" / "untouched" / path.stem / path.name, as_version=4)
    for cell in run.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        grader = cell.metadata.get("nbgrader", {})
        if grader.get("grade"):
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            if "checks." in cell.source:
                assert "not attempted yet" in text, f"{grader['grade_id']}: {text[:300]!r}"
            assert all(e.ename == "CheckFailed" for e in errors), f"{grader['grade_id']}: {errors[:1]}"
        else:
            assert not errors, f"a stub broke a cell that is not graded: {cell.source[:80]!r}: {errors[0].evalue}"


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_teachers_edition_runs_without_error_under_nbgrader(course: Path, path: Path) -> None:
    run = nbformat.read(course / "autograded" / "teacher" / path.stem / path.name, as_version=4)
    errors = [(c.source[:80], o.evalue) for c in run.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors, errors[:2]

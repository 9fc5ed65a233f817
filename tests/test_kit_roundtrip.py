"""The classroom kit end to end, with real nbgrader (`make test-kit`; skipped otherwise: it takes minutes).

In a temporary course folder set up by tools/nbgrader_course.py (teaching/nbgrader_config.py plus the block the
tool writes: no link to the answers), ``nbgrader generate_assignment`` releases every notebook, and each release
must be what tools/student_edition.py makes with that config. Then ``nbgrader autograde`` grades the submissions:

- ``untouched``, of every notebook with a graded exercise: the release as it was handed out: zero points, and its
  run goes to the end, each check cell stopping with "not attempted yet" (CheckFailed) and nothing else failing;
- ``filled``, of FILLED (03 and 04, the latter with two check cells): the release with the teacher's answers pasted
  into its answer cells, as a student who got everything right would submit it: every autograded point, with the
  hidden tests nbgrader puts back;
- ``teacher``, of FILLED too: the teacher's edition (hidden tests already inside): every autograded point.

Each submission is one more run of its notebook, and CI pays for each. That every other notebook's right answers
earn every point is proved without one: nbgrader gives a check cell its points when it raises nothing (FILLED shows
it, hidden tests included), and `make test` runs every teacher's edition strictly, where a check cell that raised
would fail (``test_every_check_of_the_teachers_edition_passes_under_nbval`` keeps any from being excused).

The course is made as the guide says, with a roster from a learning platform's export (``--roster``, Canvas's
columns) and a due date for 03 (``--due``); 04's check cell carries the guide's own hidden case ("Your own hidden
case"). 03's untouched submission comes a day after the due date (its ``timestamp.txt``, as ``nbgrader collect``
writes it) and must be seen as late; the filled one, before it, must not.

The written answers are graded by hand: autograde leaves them to the grader (0 when left blank). ``nbgrader export``
refuses while any waits for its mark; a mark set through nbgrader's gradebook API, as formgrader sets it, reaches a
provisional export, and once every answer is marked the export carries the roster's ids and names.
``nbgrader generate_feedback`` must not show a hidden test: neither the strict checks nor the lecturer's case.

``nbgrader validate`` (the Validate button) runs on three submissions of VALIDATED (03): untouched and wrong must
fail, right (the filled release) must pass. ``MHA_KIT_ONLY="03 12"`` limits the whole test to those notebooks.
The scores are printed. Every notebook is graded, so the untouched submissions run every English student copy top
to bottom (the release is the student edition): the proof that they run, which CI makes only here.
``MHA_KIT_PYTHON`` (``make test-kit KIT_PYTHON=...``) grades with another venv's nbgrader, whose kernel runs the
submissions: CI passes the venv that INSTALL.md's lines made (``make test-install``), so that the term runs where a
lecturer's would, and every English student copy runs in the documented install.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

if os.environ.get("MHA_KIT_TEST") != "1":
    pytest.skip("the nbgrader round trip: run `make test-kit`", allow_module_level=True)

from nbgrader.api import Gradebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import student_edition  # noqa: E402
from nbgrader_course import create, due_dates, graded, import_roster  # noqa: E402

ONLY = os.environ.get("MHA_KIT_ONLY", "").split()
NOTEBOOKS = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if not ONLY or p.name[:2] in ONLY]
GRADED = [p for p in NOTEBOOKS if graded(p)]
# Validate executes the notebook once per submission: one notebook is enough to show what the button says.
VALIDATED = [p for p in GRADED if p.name.startswith("03_")] or GRADED[:1]
FILLED = [p for p in GRADED if p.name[:2] in ("03", "04")] or GRADED[:1]
# The environment whose nbgrader grades, and whose kernel runs the submissions: this one, or another venv's Python
# (MHA_KIT_PYTHON: CI grades the term in the venv INSTALL.md makes, `make test-install`, as a lecturer would).
PYTHON = Path(os.environ.get("MHA_KIT_PYTHON") or sys.executable)
NBGRADER = [str(PYTHON), "-m", "nbgrader"]
SUBMISSIONS = ("teacher", "untouched", "filled")
DUE = "2027-02-08T09:00+00:00"  # 03's due date; the untouched submission comes a day later, the filled one before
STAMPS = {"untouched": "2027-02-09 09:00:00+00:00", "filled": "2027-02-07 18:00:00+00:00"}
# A learning platform's roster (Canvas's gradebook export), whose ids are the submissions' student ids.
ROSTER = ('Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n'
          '"Edition, Teacher",teacher,s100,teacher,A\n"Release, Untouched",untouched,s101,untouched,A\n'
          '"Answers, Filled",filled,s102,filled,A\n"Student, Test",test,,,A\n')
GUIDE = (ROOT / "teaching" / "README.md").read_text(encoding="utf-8")
# The guide's worked example of a lecturer's own hidden case (for 04's masked_softmax check).
OWN_CASE = re.search(r"```python\n(.*?)```", GUIDE.split("### Your own hidden case")[1], re.S).group(1)


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
    return dict(os.environ, PATH=f"{PYTHON.parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _run(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NBGRADER, *args], cwd=course, env=_env(), capture_output=True, text=True, timeout=1200)


def _nbgrader(course: Path, *args: str) -> str:
    result = _run(course, *args)
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


def _with_own_case(source: Path) -> None:
    """Put the guide's own hidden case into the check cell of 04's masked softmax in the course's source/."""
    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if _checked(c) and "checks.masked_softmax(" in c.source)
    hidden = OWN_CASE.split("### BEGIN HIDDEN TESTS\n")[1].split("### END HIDDEN TESTS")[0]
    name = re.search(r"checks\.masked_softmax\((\w+)", cell.source).group(1)
    cell.source = cell.source.replace("### END HIDDEN TESTS", hidden.replace(
        "checks.masked_softmax(masked_softmax_by_hand, strict=True)\n", "").replace(
        "masked_softmax_by_hand", name) + "### END HIDDEN TESTS")
    assert "this term's own" in cell.source
    nbformat.write(nb, source)


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
    ids = create(folder, NOTEBOOKS)
    export = folder / "canvas-gradebook.csv"
    export.write_text(ROSTER, encoding="utf-8")
    assert import_roster(folder, export) == 3
    if any(i.startswith("03_") for i in ids):
        due_dates(folder, [f"03={DUE}"])
    for assignment in ids:
        if assignment.startswith("04_"):
            _with_own_case(folder / "source" / assignment / f"{assignment}.ipynb")
    # One nbgrader command for every assignment (its ids are globs), not one each: each start costs about 4 s.
    _nbgrader(folder, "generate_assignment", "*")
    for path in GRADED:
        release = nbformat.read(folder / "release" / path.stem / path.name, as_version=4)
        editions = {"teacher": nbformat.read(path, as_version=4), "untouched": release,
                    "filled": _answered(release, nbformat.read(path, as_version=4))}
        for student in SUBMISSIONS if path in FILLED else ("untouched",):
            target = folder / "submitted" / student / path.stem
            target.mkdir(parents=True)
            nbformat.write(editions[student], target / path.name)
            if path.name.startswith("03_") and student in STAMPS:
                (target / "timestamp.txt").write_text(STAMPS[student])
    _nbgrader(folder, "autograde", "*")
    yield folder
    print("\nnbgrader scores (points / max: the checks, and the hand marks the export test set, one full, the rest 0):")
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


RIGHT = [(p, student) for p in FILLED for student in ("teacher", "filled")]


@pytest.mark.parametrize(("path", "student"), RIGHT, ids=[f"{p.stem}-{s}" for p, s in RIGHT])
def test_every_autograded_point(course: Path, path: Path, student: str) -> None:
    """The teacher's edition, and the release with the right answers pasted in, get every check's points (FILLED)."""
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
def test_every_check_of_the_teachers_edition_passes_under_nbval(path: Path) -> None:
    """Why the other notebooks need no teacher submission: strict nbval (`make test`) fails on any cell that raises,
    except one tagged raises-exception, and no check cell of a teacher's edition is; its committed run shows none
    raising. nbgrader then gives each its points, as FILLED's runs show."""
    checks = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" and _checked(c)]
    assert checks
    for cell in checks:
        assert "raises-exception" not in cell.metadata.get("tags", []), _grader(cell)["grade_id"]
        assert not [o for o in cell.outputs if o.output_type == "error"], _grader(cell)["grade_id"]


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
    """Export refuses while written answers wait for their marks (nbgrader would count them 0); a grader marks one
    (the gradebook API, as formgrader does) and a provisional export counts it; once every answer is marked, the
    export carries the roster's ids, names and the due date."""
    path = next((p for p in FILLED if _kinds(p)[1]), None)
    assert path is not None, "no notebook has an answer marked by hand (nbgrader grade + solution)"
    refused = _run(course, "export", "--to", str(course / "grades.csv"))
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "not marked yet" in said and " of teacher (" in said, said[-2000:]
    assert not (course / "grades.csv").exists(), "nothing written while answers wait for their marks"
    checks, by_hand = _kinds(path)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        grade = book.find_grade(by_hand[0], path.stem, path.stem, "filled")
        grade.manual_score, grade.needs_manual_grade = grade.max_score, False
        mark = grade.max_score
        book.db.commit()
        automatic = sum(book.find_grade(g, path.stem, path.stem, "filled").score for g in checks)
    said = _nbgrader(course, "export", "--to", str(course / "grades.csv"), "--MarkedCsvExport.allow_unmarked=True")
    assert "provisional export" in said
    with open(course / "grades.csv", newline="") as handle:
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(handle)}
    row = rows[(path.stem, "filled")]
    assert float(row["score"]) == pytest.approx(automatic + mark), row
    assert float(row["max_score"]) > float(row["score"]), "the other written answers are not marked yet"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:  # the markers finish: every answer 0
        for assignment in book.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.needs_manual_grade:
                            grade.manual_score, grade.needs_manual_grade = 0.0, False
        book.db.commit()
    _nbgrader(course, "export", "--to", str(course / "grades.csv"))
    with open(course / "grades.csv", newline="") as handle:
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(handle)}
    row = rows[(path.stem, "filled")]
    assert float(row["score"]) == pytest.approx(automatic + mark), row
    assert (row["first_name"], row["last_name"]) == ("Filled", "Answers"), "the roster's names (G5)"
    assert {sid for _, sid in rows} == {"teacher", "untouched", "filled"}, "the roster's ids, its test student left out"


def test_a_submission_after_the_due_date_is_late(course: Path) -> None:
    """G4: 03's due date is set (`--due`); the untouched submission, a day after it, is late; the filled one is not."""
    path = next((p for p in GRADED if p.name.startswith("03_")), None)
    if path is None:
        pytest.skip("03 not in MHA_KIT_ONLY")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        due = book.find_assignment(path.stem).duedate
        assert due is not None and due.replace(tzinfo=timezone.utc) == datetime.fromisoformat(DUE)
        assert book.find_submission(path.stem, "untouched").total_seconds_late == pytest.approx(86400)
        assert book.find_submission(path.stem, "filled").total_seconds_late == 0
        assert book.find_submission(path.stem, "untouched").late_submission_penalty == 0, "recorded, no penalty"


def test_feedback_keeps_the_hidden_tests_hidden(course: Path) -> None:
    """G2: `nbgrader generate_feedback` with the course config: no hidden test on the page, the lecturer's own case
    (put into 04's check cell from the guide) included, while the autograded notebook it renders from holds them."""
    path = next((p for p in GRADED if p.name.startswith("04_")), None)
    if path is None:
        pytest.skip("04 not in MHA_KIT_ONLY")
    autograded = (course / "autograded" / "untouched" / path.stem / path.name).read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" in autograded and "this term's own" in autograded, "autograde put them back"
    _nbgrader(course, "generate_feedback", path.stem)
    pages = sorted((course / "feedback").glob(f"*/{path.stem}/{path.stem}.html"))
    assert {p.parts[-3] for p in pages} == {"teacher", "untouched", "filled"}
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "masked_softmax(" in html, "the visible check is on the page"
        for secret in ("HIDDEN TESTS", "strict=True", "this term&#39;s own", "this term's own", "2.0, -1.0, 0.5, 3.0",
                       "the last key is padding"):
            assert secret not in html, f"{page.parts[-3]}: {secret!r} in the feedback"
    untouched = next(p for p in pages if p.parts[-3] == "untouched").read_text(encoding="utf-8")
    assert "not attempted yet" in untouched, "the verdict of the visible check stays"


def test_students_can_be_spared_the_instructor_menus(tmp_path: Path) -> None:
    """N-M10: INSTALL.md's lines that hide nbgrader's instructor tools name real extensions and work (run here at
    the user level, in a scratch Jupyter config folder, instead of the environment's)."""
    text = (ROOT / "INSTALL.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("jupyter ") and " disable " in line]
    assert len(lines) == 5 and any("formgrader" in line for line in lines), lines
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path))
    bindir = PYTHON.parent
    # jupyter disables a server extension only in a config folder that lists it: copy nbgrader's own listing from the
    # environment (what `--sys-prefix` finds there) into the scratch folder.
    listing = PYTHON.parent.parent / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    (tmp_path / "jupyter_server_config.d").mkdir()
    (tmp_path / "jupyter_server_config.d" / "nbgrader.json").write_text(listing.read_text())
    for line in lines:
        args = line.replace("--level=sys_prefix", "--level=user").replace("--sys-prefix", "--user").split()
        done = subprocess.run([str(bindir / args[0]), *args[1:]], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
    listed = subprocess.run([str(bindir / "jupyter"), "labextension", "list"], env=env, capture_output=True,
                            text=True, timeout=120)
    disabled = (listed.stdout + listed.stderr).split("Disabled extensions:")[-1]
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled, listed.stdout + listed.stderr
    server = subprocess.run([str(bindir / "jupyter"), "server", "extension", "list"], env=env,
                            capture_output=True, text=True, timeout=120)
    out = (server.stdout + server.stderr).split(f"Config dir: {tmp_path}\n")[1].split("Config dir:")[0]
    assert re.search(r"nbgrader\.server_extensions\.formgrader\s+\S*disabled", out), out
    assert re.search(r"nbgrader\.server_extensions\.assignment_list\s+\S*enabled", out), out


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

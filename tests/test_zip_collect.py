"""`nbgrader zip_collect` with the patterns teaching/nbgrader_config.py gives for Moodle and Canvas (issue 26, G7).

A fake platform download (a zip with the platform's file names, a late and a resubmitted file among them, and copies
a browser renamed, "NN_name (1).ipynb", issue 37 N-M2) goes into ``downloaded/<assignment>/archive/`` of a course
folder; real ``nbgrader zip_collect --strict`` must file every notebook under ``submitted/<student id>/<assignment>/``
with the released notebook's name, and skip the files that are not notebooks. A student with two copies in one
download stops zip_collect loudly (nbgrader cannot tell which is newer).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "teaching" / "nbgrader_config.py"
NOTEBOOK = sorted((ROOT / "student").glob("[0-9][0-9]_*.ipynb"))[0]
ASSIGNMENT = NOTEBOOK.stem


def _patterns() -> dict[str, str]:
    """The module-level string constants of the shipped config (MOODLE, CANVAS)."""
    tree = ast.parse(CONFIG.read_text())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


DOWNLOADS = {  # platform -> (file name in the zip, the student id it must be filed under); None: skipped
    "MOODLE": [
        (f"Ada Lovelace_12345_assignsubmission_file_/{ASSIGNMENT}.ipynb", "12345"),
        (f"Alan Turing_23456_assignsubmission_file_{ASSIGNMENT}.ipynb", "23456"),
        ("Grace Hopper_34567_assignsubmission_onlinetext_/onlinetext.html", None),
        (f"Mary Somerville_45678_assignsubmission_file_/{ASSIGNMENT} (1).ipynb", "45678"),
        (f"Emmy Noether_56789_assignsubmission_file_{ASSIGNMENT}_2.ipynb", "56789"),
    ],
    "CANVAS": [
        (f"lovelaceada_12345_67890_{ASSIGNMENT}.ipynb", "12345"),
        (f"turingalan_late_23456_67891_{ASSIGNMENT}-1.ipynb", "23456"),
        ("hoppergrace_34567_67892_notes.txt", None),
        (f"somervillemary_45678_67893_{ASSIGNMENT} (1).ipynb", "45678"),
        (f"noetheremmy_LATE_56789_67894_{ASSIGNMENT}_1.ipynb", "56789"),
    ],
}


def _zip_collect(tmp_path: Path, platform: str, names: list[str]) -> tuple[Path, subprocess.CompletedProcess]:
    course = tmp_path / "course"
    (course / "release" / ASSIGNMENT).mkdir(parents=True)  # what generate_assignment releases: the student copy
    (course / "release" / ASSIGNMENT / NOTEBOOK.name).write_bytes(NOTEBOOK.read_bytes())
    archive = course / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / f"{platform.lower()}-download.zip", "w") as zf:
        for name in names:
            zf.writestr(name, NOTEBOOK.read_text() if name.endswith(".ipynb") else "not a notebook")
    regexp = _patterns()[platform]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", "zip_collect", ASSIGNMENT, "--strict",
         f"--FileNameCollectorPlugin.named_regexp={regexp}", f"--CourseDirectory.root={course}"],
        cwd=course, env=env, capture_output=True, text=True, timeout=300)
    return course, result


@pytest.mark.parametrize("platform", sorted(DOWNLOADS))
def test_zip_collect_files_a_platform_download(tmp_path: Path, platform: str) -> None:
    course, result = _zip_collect(tmp_path, platform, [name for name, _ in DOWNLOADS[platform]])
    assert result.returncode == 0, result.stderr[-2000:]
    submitted = sorted(p.relative_to(course / "submitted").as_posix()
                       for p in (course / "submitted").rglob("*.ipynb"))
    expected = sorted(f"{student}/{ASSIGNMENT}/{NOTEBOOK.name}" for _, student in DOWNLOADS[platform] if student)
    assert submitted == expected, result.stderr[-2000:]


def test_two_copies_of_one_student_stop_zip_collect_loudly(tmp_path: Path) -> None:
    """A student who uploaded the notebook and a browser's "(1)" copy: nbgrader refuses to guess which is newer."""
    folder = "Ada Lovelace_12345_assignsubmission_file_/"
    _, result = _zip_collect(tmp_path, "MOODLE", [f"{folder}{ASSIGNMENT}.ipynb", f"{folder}{ASSIGNMENT} (1).ipynb"])
    assert result.returncode != 0 and "Duplicate submission file" in result.stdout + result.stderr


def test_the_patterns_name_the_groups_zip_collect_needs() -> None:
    patterns = _patterns()
    assert {"MOODLE", "CANVAS"} <= set(patterns)
    for regexp in (patterns["MOODLE"], patterns["CANVAS"]):
        assert "(?P<student_id>" in regexp and "(?P<file_id>" in regexp
    assert "# c.FileNameCollectorPlugin.named_regexp = MOODLE" in CONFIG.read_text()

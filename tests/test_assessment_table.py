"""The 6-week plan's assessment table in teaching/README.md is the notebooks' own nbgrader points (issue 26, G8)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import assessment  # noqa: E402


def test_the_table_is_up_to_date() -> None:
    guide = assessment.GUIDE.read_text(encoding="utf-8")
    assert assessment.render(guide) == guide, "run: .venv/bin/python tools/assessment.py"


def test_the_counting_rule(tmp_path: Path) -> None:
    def cell(**nbgrader) -> nbformat.NotebookNode:
        made = nbformat.v4.new_code_cell("x = 1")
        made.metadata["nbgrader"] = {"schema_version": 3, "grade_id": str(len(nbgrader)), **nbgrader}
        return made

    nb = nbformat.v4.new_notebook(cells=[
        cell(grade=True, solution=False, locked=True, points=2),  # a check cell: autograded
        cell(grade=True, solution=True, locked=False, points=1),  # a written answer: hand-marked
        cell(grade=False, solution=True, locked=False),  # an implement-it solution: no points of its own
    ])
    path = tmp_path / "04_x.ipynb"
    nbformat.write(nb, path)
    assert assessment.points(path) == (2, 1)


def test_every_notebook_is_in_the_plan() -> None:
    planned = sorted(sum((numbers for numbers, _ in assessment.WEEKS.values()), []) + assessment.OPTIONAL)
    assert planned == [p.name[:2] for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]

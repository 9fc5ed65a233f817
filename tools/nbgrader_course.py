"""Set up an nbgrader course folder for the series: the shipped config and one assignment per notebook.

Usage: ``python tools/nbgrader_course.py COURSE_DIR [NN ...]`` (every notebook with a graded exercise when no number
is given). It writes ``COURSE_DIR/nbgrader_config.py`` (a copy of ``teaching/nbgrader_config.py``, left alone if
it exists) and ``COURSE_DIR/source/NN_name/NN_name.ipynb`` (the teacher's edition), then prints the next commands.
Run nbgrader from inside ``COURSE_DIR``: ``nbgrader generate_assignment NN_name`` releases the student version.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "teaching" / "nbgrader_config.py"


def graded(path: Path) -> bool:
    """Whether the notebook has an autograded cell (nbgrader ``grade: true`` with points)."""
    cells = nbformat.read(path, as_version=4).cells
    return any(c.metadata.get("nbgrader", {}).get("grade") and c.metadata["nbgrader"].get("points", 0) > 0
               for c in cells)


def notebooks(numbers: list[str]) -> list[Path]:
    """The teacher's editions named by number (``04``), or every graded one."""
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not numbers:
        return [p for p in paths if graded(p)]
    found = {p.name[:2]: p for p in paths}
    missing = [n for n in numbers if n.zfill(2) not in found]
    if missing:
        raise SystemExit(f"no notebook numbered {', '.join(missing)} in notebooks/")
    return [found[n.zfill(2)] for n in numbers]


def create(course: Path, paths: list[Path]) -> list[str]:
    """Write the config and one assignment per notebook into ``course``; the assignment ids."""
    course.mkdir(parents=True, exist_ok=True)
    if not (course / "nbgrader_config.py").exists():
        shutil.copyfile(CONFIG, course / "nbgrader_config.py")
    ids = []
    for path in paths:
        folder = course / "source" / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / path.name)
        ids.append(path.stem)
    return ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("course", type=Path, help="the course folder (created if missing)")
    parser.add_argument("numbers", nargs="*", help="notebook numbers, e.g. 04 05 (default: every graded notebook)")
    args = parser.parse_args(argv)
    ids = create(args.course, notebooks(args.numbers))
    print(f"{args.course}: nbgrader_config.py and {len(ids)} assignment(s) in source/: {', '.join(ids)}")
    print(f"next: cd {args.course} && nbgrader generate_assignment {ids[0] if ids else 'NN_name'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The 6-week plan's assessment table in ``teaching/README.md``, counted from the notebooks' nbgrader metadata.

Usage: ``python tools/assessment.py`` rewrites the table between its two markers; ``--check`` writes nothing and
exits 1 if the table is stale (``tests/test_assessment_table.py`` runs it). Counting rule: a cell with
``nbgrader.grade`` true is graded; one that is also a ``solution`` is **hand-marked** (a written answer read in
formgrader), the others are **autograded** (the locked check cells); its ``points`` count in full.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "teaching" / "README.md"
BEGIN = "<!-- assessment table: written by tools/assessment.py from the notebooks' nbgrader points -->"
END = "<!-- /assessment table -->"
# Week of the module -> (notebooks taught and graded that week, when the work is due).
WEEKS = {
    1: (["00", "01", "02"], "before the week 2 lecture"),
    2: (["03", "04"], "before the week 3 lecture"),
    3: (["05"], "before the week 4 lecture"),
    4: (["06", "07"], "before the week 5 lecture"),
    5: (["08", "09"], "before the week 6 lecture"),
    6: (["10", "11"], "one week after the last session"),
}
OPTIONAL = ["12"]  # the optional project, graded only if set


def points(path: Path) -> tuple[int, int]:
    """``(autograded, hand-marked)`` points of one notebook, by the counting rule in this module's docstring."""
    auto = hand = 0
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            if meta.get("solution"):
                hand += int(meta.get("points", 0))
            else:
                auto += int(meta.get("points", 0))
    return auto, hand


def table(notebooks: Path = ROOT / "notebooks") -> str:
    """The assessment table, in markdown."""
    by_number = {p.name[:2]: points(p) for p in sorted(notebooks.glob("[0-9][0-9]_*.ipynb"))}
    rows = ["| week | graded notebooks | due | autograded points | hand-marked points | total |",
            "|---|---|---|---|---|---|"]
    totals = [0, 0]
    for week, (numbers, due) in WEEKS.items():
        auto = sum(by_number[n][0] for n in numbers)
        hand = sum(by_number[n][1] for n in numbers)
        totals = [totals[0] + auto, totals[1] + hand]
        rows.append(f"| {week} | {', '.join(numbers)} | {due} | {auto} | {hand} | {auto + hand} |")
    rows.append(f"| **1-6** | **{len(sum((w[0] for w in WEEKS.values()), []))} notebooks** | | **{totals[0]}** | "
                f"**{totals[1]}** | **{sum(totals)}** |")
    for n in OPTIONAL:
        auto, hand = by_number[n]
        rows.append(f"| optional | {n} (project) | end of term | {auto} | {hand} | {auto + hand} |")
    return "\n".join(rows)


def render(guide: str, notebooks: Path = ROOT / "notebooks") -> str:
    """``guide`` with the table between the markers replaced by the current one."""
    pattern = re.compile(re.escape(BEGIN) + r"\n(?:.*?\n)?" + re.escape(END), re.S)
    if not pattern.search(guide):
        raise ValueError(f"teaching/README.md: expected the markers {BEGIN!r} ... {END!r}, found none")
    return pattern.sub(lambda _: f"{BEGIN}\n{table(notebooks)}\n{END}", guide)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the table is stale")
    args = parser.parse_args(argv)
    guide = GUIDE.read_text(encoding="utf-8")
    wanted = render(guide)
    if args.check:
        if wanted != guide:
            print("teaching/README.md: the assessment table is stale (run tools/assessment.py)", file=sys.stderr)
            return 1
        return 0
    if wanted != guide:
        GUIDE.write_text(wanted, encoding="utf-8")
        print("teaching/README.md: assessment table written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

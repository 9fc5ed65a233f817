"""What an executed notebook says about its failing cells, one line each: where the cell is, which line raised, and
the error (``tools/seeds.py`` and ``tools/colab_sim.py`` report with it).

A cell is named by its index, its id and the heading it sits under (indexes move when cells are added; the heading
tells a reader where to look). Its failing line comes from the traceback: the line of the cell that was running,
and, where the error was raised deeper (a function, the library), that place and line too.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ARROW = re.compile(r"^\s*-+>\s*(\d+)\s?(.*)$")  # IPython's "----> 12 assert ..." (7.x: "---> 12")
# A frame in the cell itself: IPython 8+ "Cell In[3], line 2"; 7.x "<ipython-input-3-...>", or under ipykernel 6
# (Colab) "/tmp/ipykernel_123/456.py in <cell line: 0>()".
CELL_FRAME = re.compile(r"^(Cell In\[\d+\], line \d+|<ipython-input-[^>]*>|\S*/ipykernel_\d+/\d+\.py\b)")


def heading_before(cells: Sequence[Any], index: int) -> str:
    """The last markdown heading at or before cell ``index`` (``"## Exercises"``), or ``""``."""
    for cell in reversed(cells[: index + 1]):
        if cell.get("cell_type") == "markdown":
            headings = [line.strip() for line in cell["source"].splitlines() if line.startswith("#")]
            if headings:
                return headings[-1]
    return ""


def where(cells: Sequence[Any], index: int) -> str:
    """``cell 27 (id ex3-check, under '## Exercises')``."""
    cell = cells[index]
    details = [f"id {cell['id']}"] if cell.get("id") else []
    heading = heading_before(cells, index)
    if heading:
        details.append(f"under '{heading[:80]}'")
    return f"cell {index}" + (f" ({', '.join(details)})" if details else "")


def frames(traceback: Sequence[str]) -> list[tuple[str, int | None, str]]:
    """Each frame of an IPython traceback: its header (``Cell In[3], line 2``), the line number and text it ran."""
    found = []
    for entry in traceback:
        lines = ANSI.sub("", entry).splitlines()
        if not lines:
            continue
        arrows = [ARROW.match(line) for line in lines]
        arrow = next((a for a in arrows if a), None)
        if arrow is None:
            continue
        found.append((lines[0].strip(), int(arrow.group(1)), arrow.group(2).strip()))
    return found


def error_output(cell: Any) -> Any | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def describe_error(cells: Sequence[Any], index: int, limit: int = 300) -> str:
    """One line about cell ``index``'s error: where, the cell's line that raised, where it was raised, the error."""
    cell = cells[index]
    error = error_output(cell)
    if error is None:
        return f"{where(cells, index)}: no error"
    text = f"{error.get('ename', 'Error')}: {ANSI.sub('', error.get('evalue', ''))}".strip().rstrip(":")
    found = frames(error.get("traceback", []))
    in_cell = [f for f in found if CELL_FRAME.match(f[0])]
    parts = [where(cells, index)]
    if in_cell:
        _, number, line = in_cell[0]
        source = cell["source"].splitlines()
        if number is not None and 0 < number <= len(source):
            line = source[number - 1].strip()
        parts.append(f"line {number}: `{line[:160]}`")
    if found and (not in_cell or found[-1] is not in_cell[0]):
        header, number, line = found[-1]
        parts.append(f"raised in {header[:120]}: `{line[:120]}`")
    return ", ".join(parts) + f" -> {text[:limit]}"


def stderr_of(cell: Any) -> str:
    """What the cell's run wrote to stderr."""
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stderr")


@cache
def _conftest() -> Any:
    spec = importlib.util.spec_from_file_location("mha_root_conftest", ROOT / "conftest.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def allows_stderr(cell: Any) -> bool:
    """The test suite's own rule (``conftest.py``): a cell marked ``# NBVAL_ALLOW_STDERR`` may write stderr."""
    return _conftest().allows_stderr(cell)


def problems(cells: Sequence[Any], *, allow_stderr_in: Sequence[int] = ()) -> list[str]:
    """Every failing cell of an executed notebook: errors (but where a cell is tagged ``raises-exception``) and
    stderr (but where the suite allows it, or in the cells ``allow_stderr_in``), in order."""
    found = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        if error_output(cell) is not None and "raises-exception" not in tags:
            found.append(describe_error(cells, index))
        written = stderr_of(cell).strip()
        if written and index not in allow_stderr_in and not allows_stderr(cell):
            found.append(f"{where(cells, index)} wrote stderr: {written.splitlines()[0][:200]}")
    return found

"""Every notebook follows the series' template, and its committed outputs are clean and deterministic."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import nbformat
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REPO = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"].removeprefix(
    "https://github.com/"
)
IGNORE = "# NBVAL_IGNORE_OUTPUT"
setup_source = runpy.run_path(str(ROOT / "tools" / "setup_cell.py"))["setup_source"]
# A time measured on a busy machine proves nothing: asserts may not read timings (print them instead).
TIMING = re.compile(r"perf_counter|timeit|time\.time\(|time_calls|elapsed|speedup|\bseconds\b|\w*_ms\b|\bms\b")


def _load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_series_is_numbered_without_gaps() -> None:
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(numbers))), numbers


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_opening(path: Path) -> None:
    nb = _load(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {path.name[:2]} · "), "title first"
    head = "\n".join(c.source for c in nb.cells[:3] if c.cell_type == "markdown")
    colab = f"https://colab.research.google.com/github/{REPO}/blob/main/notebooks/{path.name}"
    binder = f"https://mybinder.org/v2/gh/{REPO}/main?labpath=notebooks%2F{path.name}"
    assert colab in head, "Open in Colab badge"
    assert binder in head, "Launch Binder badge"
    assert re.search(r"\*\*In this notebook you will\*\*", head), "objectives"
    objectives = re.findall(r"^- ", head.split("**In this notebook you will**")[1].split("**Prerequisites")[0], re.M)
    assert 3 <= len(objectives) <= 5, f"3-5 objectives, got {len(objectives)}"
    assert "**Prerequisites:**" in head
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert setup.source.startswith(IGNORE), "the setup cell comes first and ignores its output"
    assert '"google.colab" in sys.modules' in setup.source and "--no-deps d2l==1.0.3" in setup.source
    assert "setup(seed=" in setup.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_closing(path: Path) -> None:
    nb = _load(path)
    text = _markdown(nb)
    assert "## Summary" in text and "## Exercises" in text
    code = [c for c in nb.cells if c.cell_type == "code"]
    solutions = [i for i, c in enumerate(code) if "solution" in c.metadata.get("tags", [])]
    assert solutions, "exercise solutions are code cells tagged 'solution'"
    for i in solutions:
        cell = code[i]
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, "solutions are collapsed"
        # An implement-it solution is checked by the graded cell after it (mha_lib.checks); the others assert.
        graded = i + 1 < len(code) and code[i + 1].metadata.get("nbgrader", {}).get("grade") is True
        assert "assert" in cell.source or (graded and "checks." in code[i + 1].source), (
            f"a solution checks itself, or a graded checks cell follows it: {cell.source[:80]}"
        )
    last = nb.cells[-1]
    assert last.cell_type == "markdown" and ("**Next:**" in last.source or "**End of the series" in last.source)
    following = sorted(ROOT.glob(f"notebooks/{int(path.name[:2]) + 1:02d}_*.ipynb"))
    if following:
        assert f"]({following[0].name})" in last.source, f"link to {following[0].name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_committed_and_clean(path: Path) -> None:
    nb = _load(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "committed with outputs (run `make notebooks`)"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run top to bottom, once"
    assert "widgets" not in nb.metadata, "no widget state"
    for cell in code:
        assert "execution" not in cell.metadata, "no timing metadata"
        for out in cell.outputs:
            assert out.output_type != "error", f"a cell raised: {cell.source[:60]}"
            text = str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", ""))
            assert not re.search(r"at 0x[0-9a-f]{6,}", text), f"a memory address in: {cell.source[:60]}"
            assert "/work/" not in text and "/home/" not in text, "no local paths"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ignored_outputs_are_setup_or_timing(path: Path) -> None:
    nb = _load(path)
    ignored = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(IGNORE)]
    setup, rest = ignored[0], ignored[1:]
    assert "setup(seed=" in setup.source
    for cell in rest:
        assert "assert" in cell.source, f"an ignored-output cell must keep its claim as an assert: {cell.source[:80]}"
        reasons = r"time|perf_counter|benchmark|Timer|train|\bdevice\b|torch\.cuda|PyTorch versions"
        assert re.search(reasons, cell.source), (
            f"only timing, training, device- or version-dependent cells may ignore their output: {cell.source[:80]}"
        )
    assert "--nbval-lax" not in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_nbval_markers_are_ones_nbval_reads(path: Path) -> None:
    """nbval reads a marker only alone on its comment line: '# NBVAL_IGNORE_OUTPUT: why' is silently checked."""
    markers = {"NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}
    for cell in _load(path).cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            comment = line.strip().lstrip("#").strip() if line.strip().startswith("#") else ""
            if "NBVAL_" in comment and "ALLOW_STDERR" not in comment:
                assert comment in markers, f"nbval ignores this marker line, put the reason on the next: {line!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_setup_cell_is_the_template(path: Path) -> None:
    setup = next(c for c in _load(path).cells if c.cell_type == "code")
    assert setup.source == setup_source(path.name), "run `make notebooks` (tools/sync_notebooks.py writes it)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_language_info_is_the_kernels(path: Path) -> None:
    """JupyterLab writes the kernel's language_info on connecting: stored the same, a notebook opens unmodified."""
    info = _load(path).metadata.get("language_info", {})
    assert info.get("name") == "python" and re.fullmatch(r"3\.\d+\.\d+", info.get("version", "")), (
        "execute with tools/execute_notebooks.py, which keeps the kernel's language_info"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_assert_reads_a_timing(path: Path) -> None:
    for cell in _load(path).cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            if line.strip().startswith("assert"):
                assert not TIMING.search(line), f"a timing assert (fails on a busy machine): {line.strip()[:100]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_section_heading_starts_its_own_cell(path: Path) -> None:
    """A ``##``/``###`` heading below the first line of a markdown cell would start no slide (and no page section)."""
    buried = [
        f"cell {i}: {line!r}"
        for i, cell in enumerate(_load(path).cells)
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()[1:]
        if re.match(r"#{2,3} ", line)
    ]
    assert not buried, f"headings below the first line of a markdown cell (split the cell): {buried}"


def _raw_html_shown(source: str) -> list[str]:
    """Text that Markdown would show raw: a line starting with ``<!--`` opens an HTML block (CommonMark type 2) up to
    the first line holding ``-->``, and whatever those lines hold outside comments is shown unformatted."""
    lines, shown, i = source.splitlines(), [], 0
    while i < len(lines):
        if re.match(r" {0,3}<!--", lines[i]):
            end = next((j for j in range(i, len(lines)) if "-->" in lines[j]), len(lines) - 1)
            rest = re.sub(r"<!--.*?-->", "", "\n".join(lines[i : end + 1]), flags=re.S).strip()
            if rest:
                shown.append(rest[:80])
            i = end
        i += 1
    return shown


def test_raw_html_check_sees_a_marker_that_opens_a_line() -> None:
    assert _raw_html_shown("<!-- teacher -->**Bold** text<!-- /teacher -->") == ["**Bold** text"]
    assert _raw_html_shown("<!-- teacher -->\n\n**Bold** text\n\n<!-- /teacher -->") == []
    assert _raw_html_shown("Some text <!-- teacher -->inline<!-- /teacher --> ends.") == []
    assert _raw_html_shown("<!-- student: a note\non two lines -->\n\nNext paragraph.") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_teacher_and_student_markers_leave_the_markdown_intact(path: Path) -> None:
    """A ``<!-- teacher -->`` region that opens a line must stand alone on it, with a blank line after: otherwise its
    paragraph is shown as raw HTML (bold, links and code unformatted) in JupyterLab and on GitHub."""
    shown = [
        f"cell {cell.id}: {text!r}"
        for cell in _load(path).cells
        if cell.cell_type == "markdown"
        for text in _raw_html_shown(cell.source)
    ]
    assert not shown, f"markdown shown as raw HTML (put the marker on its own line, then a blank line): {shown}"

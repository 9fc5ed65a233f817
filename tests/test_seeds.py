"""tools/seeds.py (`make test-seeds`) and tools/cell_report.py: which notebooks retrain, which runs, what each run's
kernel sees, and how a failing cell is reported (which cell, which line, which assert)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cell_report  # noqa: E402
import seeds  # noqa: E402
from seeds import Result, calls_training_seed, parse_runs, run_environment, summary, training_notebooks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _notebook(path: Path, *cells: nbformat.NotebookNode) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nbformat.write(nb, path)
    return path


code, markdown = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell


@pytest.mark.parametrize(("text", "runs"), [
    ("1-5", [1, 2, 3, 4, 5]), ("3", [3]), ("2,4", [2, 4]), ("1-3,5", [1, 2, 3, 5]), ("2, 1-2", [2, 1]),
])
def test_runs_are_ranges_and_lists(text: str, runs: list[int]) -> None:
    assert parse_runs(text) == runs


@pytest.mark.parametrize("text", ["0", "0-2", "5-1", "a", "1-", "", "1,,2"])
def test_a_run_is_a_whole_number_from_1(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_runs(text)


def test_a_training_notebook_is_one_whose_code_calls_training_seed(tmp_path: Path) -> None:
    calls = _notebook(tmp_path / "06_a.ipynb", code("from mha_lib.notebook import training_seed\n"
                                                     "SEED = training_seed(2)  # every model's seed"))
    nested = _notebook(tmp_path / "08_b.ipynb", code("model = train(seed=training_seed (3))"))
    imports = _notebook(tmp_path / "07_c.ipynb", code("from mha_lib.notebook import training_seed"))
    prose = _notebook(tmp_path / "05_d.ipynb", markdown("`SEED = training_seed(2)` would retrain"),
                      code("x = 1  # not training_seed(2) here"))
    assert [calls_training_seed(p) for p in (calls, nested, imports, prose)] == [True, True, False, False]
    _notebook(tmp_path / "scratch.ipynb", code("training_seed(1)"))  # not a notebook of the series
    assert training_notebooks(tmp_path) == [calls, nested]


def test_the_series_training_notebooks_are_found() -> None:
    found = training_notebooks()
    assert all(p.name[:2].isdigit() and p.parent == ROOT / "notebooks" for p in found)
    assert found == sorted(found)


def test_a_run_sets_its_seed_its_kernels_and_one_thread() -> None:
    env = run_environment(3, "default")
    assert env["MHA_TRAINING_SEED"] == "3"
    assert env["ATEN_CPU_CAPABILITY"] == "default" and env["ONEDNN_MAX_CPU_ISA"] == "SSE41"
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    from mha_lib.notebook import TRAINING_SEED_VARIABLE
    assert seeds.RUN_VARIABLE == TRAINING_SEED_VARIABLE


def test_a_run_reports_every_failing_cell_with_its_line_and_assert(tmp_path: Path) -> None:
    """One real run in a kernel: the seed and the kernel set reach the notebook; every cell runs; each failure is
    named by cell, heading, line and message."""
    path = _notebook(
        tmp_path / "99_demo.ipynb",
        markdown("# 99 · Demo"),
        code("import os\nfrom mha_lib.notebook import training_seed\nSEED = training_seed(2)"),
        markdown("## Claims\nThe first claim holds for every run."),
        code("assert os.environ['ATEN_CPU_CAPABILITY'] == 'default'\nassert os.environ['OMP_NUM_THREADS'] == '1'"),
        code("x = SEED % 1000\nassert SEED == 2, f'trained with seed {SEED}'\ny = 1"),
        code("import sys\nprint('a warning', file=sys.stderr)"),
        code("# NBVAL_ALLOW_STDERR\nimport sys\nprint('allowed', file=sys.stderr)"),
        code("def helper():\n    assert x == 3, 'x is not 3'\nhelper()"),
    )
    result = seeds.check(path, 2, "default", timeout=120)
    assert result.label == "99_demo run 2 default"
    assert len(result.problems) == 3, result.problems
    seed, stderr, nested = result.problems
    assert seed.startswith("cell 4 (id ") and "under '## Claims'), line 2: `assert SEED == 2, f'trained with seed"
    assert seed.endswith("-> AssertionError: trained with seed 2002")
    assert stderr.endswith("under '## Claims') wrote stderr: a warning")
    assert "line 3: `helper()`, raised in Cell In[" in nested and "`assert x == 3, 'x is not 3'`" in nested
    assert nested.endswith("-> AssertionError: x is not 3")


def test_a_checked_output_that_changes_with_the_seed_is_a_failure(tmp_path: Path) -> None:
    """A printed number of the trained (or untrained) model must sit in an ignored cell: another CPU can draw another
    random start. Addresses are sanitised as under nbval; ignored cells and figures are not compared."""
    cells = [
        markdown("## Numbers"),
        code("from mha_lib.notebook import training_seed\nSEED = training_seed(0)"),
        code("print('untrained score', SEED // 1000)"),
        code("# NBVAL_IGNORE_OUTPUT\n# the run's own number\nprint('trained loss', SEED)"),
        code("print('the same for every run')\nprint(object.__repr__(object()))"),
    ]
    path = _notebook(tmp_path / "98_demo.ipynb", *cells)
    committed = nbformat.read(path, as_version=4)
    committed.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="untrained score 0\n")]
    committed.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="trained loss 0\n")]
    committed.cells[4].outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text="the same for every run\n<object object at 0x7f00deadbeef>\n")]
    nbformat.write(committed, path)
    result = seeds.check(path, 1, "default", timeout=120)
    assert result.problems == [
        "cell 2 (id " + committed.cells[2].id + ", under '## Numbers'): a checked output changes with the seed: "
        "'untrained score 0' became 'untrained score 1'"], result.problems


def test_the_summary_is_a_table_of_notebooks_kernel_sets_and_runs() -> None:
    results = [Result("08_heads", 1, "avx2"), Result("08_heads", 2, "avx2", problems=["a", "b"]),
               Result("08_heads", 1, "default"), Result("06_inspect", 2, "default", problems=["c"])]
    assert summary(results) == [
        "notebook                     kernels  run 1   run 2  ",
        "06_inspect                   default  -       1 bad  ",
        "08_heads                     default  ok      -      ",
        "08_heads                     avx2     ok      2 bad  ",
    ]


def test_no_training_notebook_is_nothing_to_do(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(seeds, "training_notebooks", lambda: [])
    assert seeds.main([]) == 0
    assert "nothing to retrain" in capsys.readouterr().out


def test_failing_runs_fail_the_command_and_are_listed_at_the_end(monkeypatch: pytest.MonkeyPatch, capsys,
                                                                 tmp_path: Path) -> None:
    monkeypatch.setattr(seeds, "offered", lambda: ["default", "avx2"])
    monkeypatch.setattr(seeds, "verify", lambda name: [])

    class Inline:  # runs each job here, in order, instead of in worker processes
        def __init__(self, max_workers: int) -> None:
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, *args):
            from concurrent.futures import Future
            future: Future = Future()
            future.set_result(fn(*args))
            return future

    def check(path: Path, run: int, kernels: str, timeout: int) -> Result:
        return Result(path.stem, run, kernels, problems=["cell 9: AssertionError"] if run == 2 else [])

    monkeypatch.setattr(seeds, "ProcessPoolExecutor", Inline)
    monkeypatch.setattr(seeds, "check", check)
    path = _notebook(tmp_path / "09_x.ipynb", code("training_seed(1)"))
    assert seeds.main([str(path), "--runs", "1-2"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("4 runs")
    tail = out.split("failing cells:")[1]
    assert "09_x run 2 default: cell 9: AssertionError" in tail and "09_x run 2 avx2: cell 9" in tail
    assert out.rstrip().endswith("2 of 4 runs failed (0 s)")


# ------------------------------------------------------------------------------------- tools/cell_report.py

IPYTHON_9 = [
    "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
    "\x1b[31mAssertionError\x1b[39m                            Traceback (most recent call last)",
    "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[3]\x1b[39m\x1b[32m, line 3\x1b[39m\n"
    "\x1b[32m      1\x1b[39m def f():\n\x1b[32m      2\x1b[39m     assert False\n"
    "\x1b[32m----> \x1b[39m\x1b[32m3\x1b[39m f()\n",
    "\x1b[36mFile \x1b[39m\x1b[32m/x/mha_lib/toy.py:120\x1b[39m, in \x1b[36mf\x1b[39m\x1b[34m()\x1b[39m\n"
    "\x1b[32m    119\x1b[39m     x = 1\n\x1b[32m--> 120\x1b[39m     raise ValueError('bad')\n",
    "\x1b[31mValueError\x1b[39m: bad",
]
IPYTHON_7 = [  # Colab's IPython 7.34
    "---------------------------------------------------------------------------",
    "AssertionError                            Traceback (most recent call last)",
    "<ipython-input-4-1a2b3c4d5e6f> in <module>\n      1 x = 1\n----> 2 assert x > 2, 'x is 1'\n",
    "AssertionError: x is 1",
]
COLAB_IPYKERNEL_6 = [
    "AssertionError                            Traceback (most recent call last)",
    "/tmp/ipykernel_21345/2644940786.py in <cell line: 0>()\n----> 1 assert 1 + 1 == 3, 'arithmetic'\n",
    "AssertionError: arithmetic",
]


def test_frames_are_read_from_ipython_9_and_7_tracebacks() -> None:
    assert cell_report.frames(IPYTHON_9) == [("Cell In[3], line 3", 3, "f()"),
                                             ("File /x/mha_lib/toy.py:120, in f()", 120, "raise ValueError('bad')")]
    assert cell_report.frames(IPYTHON_7) == [("<ipython-input-4-1a2b3c4d5e6f> in <module>", 2,
                                              "assert x > 2, 'x is 1'")]


def test_colab_s_kernel_names_the_cell_by_a_temporary_file() -> None:
    cell = code("assert 1 + 1 == 3, 'arithmetic'")
    cell.id = "sum"
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="arithmetic",
                                           traceback=COLAB_IPYKERNEL_6)]
    assert cell_report.describe_error([cell], 0) == (
        "cell 0 (id sum), line 1: `assert 1 + 1 == 3, 'arithmetic'` -> AssertionError: arithmetic")


def test_an_error_raised_in_the_library_names_the_cell_line_and_the_library_line() -> None:
    cells = [markdown("# T\n## Part 2"), code("import x\ny = 2\nf()")]
    cells[1].outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="bad", traceback=IPYTHON_9)]
    cells[1].id = "f-call"
    assert cell_report.describe_error(cells, 1) == (
        "cell 1 (id f-call, under '## Part 2'), line 3: `f()`, raised in File /x/mha_lib/toy.py:120, in f(): "
        "`raise ValueError('bad')` -> ValueError: bad")


def test_a_cell_without_a_heading_or_an_id_is_named_by_its_index() -> None:
    cell = code("x = 1\nassert x > 2, 'x is 1'")
    del cell["id"]
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="x is 1", traceback=IPYTHON_7)]
    assert cell_report.describe_error([cell], 0) == "cell 0, line 2: `assert x > 2, 'x is 1'` -> AssertionError: x is 1"


def test_stderr_is_allowed_as_the_test_suite_allows_it() -> None:
    """cell_report asks conftest.py's own rule: the marker line or the tag."""
    for source, tags, allowed in [("# NBVAL_ALLOW_STDERR\nx", [], True), ("x", ["allow-stderr"], True),
                                  ("x", [], False), ("# NBVAL_IGNORE_OUTPUT\nx", ["other"], False)]:
        cell = code(source)
        cell.metadata["tags"] = tags
        assert cell_report.allows_stderr(cell) is allowed, (source, tags)


def test_a_cell_tagged_raises_exception_is_not_a_failure() -> None:
    cell = code("raise ValueError('shown on purpose')")
    cell.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="shown", traceback=[])]
    assert len(cell_report.problems([cell])) == 1
    cell.metadata["tags"] = ["raises-exception"]
    assert cell_report.problems([cell]) == []


def test_rotate_runs_each_seed_once_with_the_kernel_sets_in_turn() -> None:
    assert seeds.pairs([1, 2, 3, 4, 5], ["default", "avx2", "avx512"], "rotate") == [
        (1, "default"), (2, "avx2"), (3, "avx512"), (4, "default"), (5, "avx2")]
    every = seeds.pairs([1, 2], ["default", "avx2"], "all")
    assert every == [(1, "default"), (1, "avx2"), (2, "default"), (2, "avx2")]
    with pytest.raises(ValueError, match="pairing must be"):
        seeds.pairs([1], ["default"], "some")

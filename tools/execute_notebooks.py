"""Re-execute notebooks in place, in a fresh kernel each, and leave a diff that shows only real changes.

Usage: ``python tools/execute_notebooks.py notebooks/*.ipynb`` (what ``make notebooks`` runs).

What is removed or normalised, because it changes on every run without meaning anything:
timing metadata, widget state and widget model ids, and the way consecutive prints happened to be split into
stream messages. Stderr is dropped too, and each cell that wrote any is reported: a normal run writes none (the
notebook tests fail on it, see conftest.py). The kernel's ``language_info`` is stored as the kernel sends it
(its ``version`` included: JupyterLab writes the same on connecting, so a notebook opens unmodified under the
Python that ``make notebooks`` ran, .venv's).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def clean(nb: nbformat.NotebookNode, stem: str) -> nbformat.NotebookNode:
    """Strip run-specific noise from an executed notebook."""
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    widget_count = 0
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.outputs:
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                continue
            if out.get("output_type") == "stream" and kept and kept[-1].get("output_type") == "stream" \
                    and kept[-1].get("name") == out.get("name"):
                # How prints are split into messages depends on flush timing: join them.
                kept[-1]["text"] += out["text"]
                continue
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                data[WIDGET_VIEW]["model_id"] = f"{stem}-widget-{widget_count}"
                widget_count += 1
            kept.append(out)
        cell.outputs = kept
    return nb


def stderr_cells(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """``(cell index, first stderr line)`` for each code cell that wrote to stderr."""
    found = []
    for index, cell in enumerate(nb.cells):
        text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream" and o.get("name") == "stderr")
        if text.strip():
            found.append((index, text.strip().splitlines()[0][:160]))
    return found


# Run in the kernel before the notebook (an IPython startup file): every figure drawn into an output records its
# visible text (titles, axis labels, tick labels, legends, annotations), read from the figure objects, with the
# number of the cell that drew it. No cell is added, so the notebook's execution counts are its own.
FIGURE_TEXT_STARTUP = """\
import json as _json, os as _os

def _mha_record_figure_text():
    import matplotlib.backend_bases as backend_bases
    import matplotlib.text
    from IPython import get_ipython

    draw = backend_bases.FigureCanvasBase.print_figure

    def print_figure(self, *args, **kwargs):
        texts = [t.get_text() for t in self.figure.findobj(matplotlib.text.Text)
                 if t.get_visible() and t.get_text().strip()]
        with open(_os.environ["MHA_FIGURE_TEXT"], "a", encoding="utf-8") as out:
            out.write(_json.dumps({"count": get_ipython().execution_count, "texts": texts}) + "\\n")
        return draw(self, *args, **kwargs)

    backend_bases.FigureCanvasBase.print_figure = print_figure

if _os.environ.get("MHA_FIGURE_TEXT"):
    _mha_record_figure_text()
"""


def figure_texts(nb: nbformat.NotebookNode, records: list[dict]) -> dict[str, list[str]]:
    """``cell id -> texts of the figures it drew`` from the records of a run (cells by their execution count)."""
    by_count = {c.execution_count: c.id for c in nb.cells if c.cell_type == "code" and c.execution_count}
    found: dict[str, list[str]] = {}
    for record in records:
        cell = by_count.get(record["count"])
        if cell is not None:
            found.setdefault(cell, []).extend(record["texts"])
    return found


def execute(path: Path, timeout: int, figure_text: dict | None = None) -> float:
    """Run ``path`` top to bottom in a fresh kernel (cwd = its folder), clean it and write it back.

    With ``figure_text`` (a dict), the text of every figure the run draws goes into it: ``cell id -> texts``.
    """
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        store_widget_state=False,
    )
    if figure_text is None:
        client.execute()
    else:
        with tempfile.TemporaryDirectory() as scratch:
            startup = Path(scratch) / "profile_default" / "startup"
            startup.mkdir(parents=True)
            (startup / "00-figure-text.py").write_text(FIGURE_TEXT_STARTUP, encoding="utf-8")
            records = Path(scratch) / "figures.jsonl"
            before = {k: os.environ.get(k) for k in ("IPYTHONDIR", "MHA_FIGURE_TEXT")}
            os.environ.update(IPYTHONDIR=scratch, MHA_FIGURE_TEXT=str(records))
            try:
                client.execute()
            finally:
                for key, value in before.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
            lines = records.read_text(encoding="utf-8").splitlines() if records.exists() else []
            figure_text.update(figure_texts(nb, [json.loads(line) for line in lines]))
    elapsed = time.perf_counter() - start
    for index, line in stderr_cells(nb):
        print(f"WARNING {path.name} cell {index} wrote to stderr: {line}", file=sys.stderr)
    nbformat.write(clean(nb, path.stem), path)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        elapsed = execute(path, args.timeout)
        print(f"{path}: executed in {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

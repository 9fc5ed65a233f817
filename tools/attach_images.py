"""Embed the figures of images/ in the notebooks as markdown cell attachments, so a notebook shows them alone.

Usage: ``python tools/attach_images.py [notebooks/*.ipynb]`` (run by ``make images`` and ``make notebooks``).

A markdown link ``![alt](../images/NAME.png)`` becomes ``![alt](attachment:NAME.png)`` with the PNG stored in the
cell's ``attachments``; attachments already there are refreshed from ``images/NAME.png``, and attachments that no
link uses are dropped. ``images/`` and its scripts stay the source. Idempotent: a second run changes nothing.
"""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebook_files import ROOT, run_over_notebooks  # noqa: E402

IMAGES = ROOT / "images"
RELATIVE = re.compile(r"(!\[[^\]]*\]\()\.\./images/([^)\s]+)(\))")
ATTACHED = re.compile(r"!\[[^\]]*\]\(attachment:([^)\s]+)\)")
MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".svg": "image/svg+xml"}


def encoded(name: str) -> dict[str, str]:
    """The attachment bundle of ``images/NAME``: ``{mime type: base64 text}`` (SVG stays text)."""
    path = IMAGES / name
    if not path.is_file():
        raise FileNotFoundError(f"images/{name} does not exist: make it with a script in images/ first")
    mime = MIME.get(path.suffix.lower())
    if mime is None:
        raise ValueError(f"images/{name}: expected one of {sorted(MIME)}, got {path.suffix!r}")
    if mime == "image/svg+xml":
        return {mime: path.read_text()}
    return {mime: base64.b64encode(path.read_bytes()).decode("ascii")}


def attach_cell(cell: nbformat.NotebookNode) -> bool:
    """Turn one markdown cell's ``../images/`` links into attachments and refresh them; True if it changed."""
    if cell.cell_type != "markdown":
        return False
    before = (cell.source, cell.get("attachments"))
    source = RELATIVE.sub(r"\1attachment:\2\3", cell.source)
    names = list(dict.fromkeys(ATTACHED.findall(source)))
    attachments = {name: encoded(name) for name in names if (IMAGES / name).is_file()}
    # An attachment with no file in images/ (pasted into the notebook by hand) is kept as it is.
    for name in names:
        if name not in attachments and name in (cell.get("attachments") or {}):
            attachments[name] = cell.attachments[name]
    cell.source = source
    if attachments:
        cell["attachments"] = attachments
    else:
        cell.pop("attachments", None)
    return (cell.source, cell.get("attachments")) != before


def attach(path: Path) -> bool:
    """Attach the figures of one notebook in place; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    changed = [attach_cell(cell) for cell in nb.cells]
    if any(changed):
        nbformat.write(nb, path)
    return any(changed)


def main(argv: list[str] | None = None) -> int:
    return run_over_notebooks(attach, "attachments updated", __doc__.splitlines()[0], argv)

if __name__ == "__main__":
    raise SystemExit(main())

"""Write the slide decks: ``slides/NN_*.slides.html`` from ``notebooks/NN_*.ipynb``, for a projector, offline.

Usage: ``python tools/slides.py [notebooks/NN_*.ipynb ...] [--out slides]`` (``make slides``: every notebook).

nbconvert's reveal.js slides (``jupyter nbconvert --to slides``) load reveal.js, MathJax, require.js and jQuery
from CDNs, and the template also imports mermaid from one. Here every script comes from ``slides/lib/``, copied
from the npm packages pinned in ``package.json`` (``npm ci`` runs when ``node_modules`` is missing or older than
``package-lock.json``), and the template ``tools/slides_template/mha_slides`` leaves out mermaid and the widget
renderer. So ``slides/`` works with no network, and copied as a whole (a USB stick) it works anywhere.

Each deck is made from a copy of the notebook cut for the projector (``deck_notebook``, in ``tools/deck_cut.py``):

- a *figure cell* (a code cell whose output is a picture) shows its figure without its code;
- a markdown cell's prose past ``SLIDE_WORDS`` words (whole paragraphs, lists and tables; a long first paragraph
  at a sentence) goes to the slide's **speaker notes**, and so does each row of the walkthrough table in
  ``teaching/NN_*.md`` (minutes, what to run live or show, the question to pause on), on the slide of the section
  it names;
- the ``## Setup`` heading is left out with the setup cell, and ``# NBVAL_IGNORE_OUTPUT`` (a note to the tests)
  from the code;
- slide breaks then follow ``sync_notebooks.slide_types(..., deck=True)``: the notebook's own rule, with the
  heights as the deck draws them (code, printouts and figures capped, see ``sync_notebooks.CODE_MAX``; a taller
  code cell or printout scrolls inside its box).

The canvas is ``SLIDE_WIDTH`` x ``SLIDE_HEIGHT`` (reveal.js scales it to the screen; ``make test-browser`` checks
that no (sub)slide is taller), and the slide number shows as current/total. Keys: arrows or space move, ``s``
opens the speaker view (notes and the next slide), ``f`` full screen, ``o`` the overview. For a PDF (to post on a
learning platform), open a deck with ``?print-pdf`` after its name in Chromium or Chrome and print to PDF.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbconvert.exporters import SlidesExporter
from nbconvert.preprocessors import Preprocessor
from traitlets.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deck_cut import deck_notebook, teachers_note, walkthrough  # noqa: E402
from sync_notebooks import (  # noqa: E402
    CODE_MAX,
    IMAGE_MAX,
    OUTPUTS_MAX,
    SLIDE_HEIGHT,
    SLIDE_WIDTH,
    TEXT_MAX,
)

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "node_modules"
TEMPLATES = ROOT / "tools" / "slides_template"
# What the decks load, relative to the deck: package -> files and folders copied into lib/<package>/.
ASSETS = {
    "reveal.js": ["dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "dist/theme/fonts/source-sans-pro",
                  "plugin/notes/notes.js", "LICENSE"],
    "mathjax": ["MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js", "extensions", "jax/input/TeX",
                "jax/element", "jax/output/CommonHTML", "fonts/HTML-CSS/TeX/woff", "localization/en", "LICENSE"],
    "requirejs": ["require.js"],
    "jquery": ["dist/jquery.min.js", "LICENSE.txt"],
}
INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Multi-Head Attention, from tokens to heads: slides</title>
<style>body {{ font: 22px/1.5 sans-serif; margin: 2em auto; max-width: 40em; }}</style></head>
<body><h1>Multi-Head Attention, from tokens to heads: slides</h1>
<p>Keys: arrows or space to move, <b>f</b> full screen, <b>s</b> speaker view, <b>o</b> overview,
<b>Esc</b> leave. No network needed: everything is in this folder.</p>
<ol start="0">
{items}
</ol></body></html>
"""
URLS = {
    "reveal_url_prefix": "lib/reveal.js",
    "mathjax_url": "lib/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    "require_js_url": "lib/requirejs/require.js",
    "jquery_url": "lib/jquery/dist/jquery.min.js",
}

MIN_SCALE = 0.8  # a (sub)slide still taller than the canvas is drawn smaller, down to this scale
# Styles that keep every cell inside the canvas (the caps are the ones sync_notebooks.height assumes for a deck).
CAPS_CSS = f"""
.reveal .jp-CodeCell .jp-InputArea-editor {{ display: block; max-height: {CODE_MAX}px; overflow-y: auto; }}
.reveal .jp-OutputArea-output {{ display: block; max-height: {TEXT_MAX}px; overflow-y: auto; }}
.reveal .jp-OutputArea-output.jp-RenderedImage {{ max-height: none; }}
.reveal .jp-Cell-outputWrapper {{ max-height: {OUTPUTS_MAX}px; overflow-y: auto; }}
.reveal .jp-OutputArea-output img {{ max-height: {IMAGE_MAX}px; width: auto; }}
.reveal .jp-RenderedMarkdown table {{ display: block; max-height: {IMAGE_MAX}px; overflow-y: auto; }}
"""


BADGE = re.compile(r"\[!\[[^\]]*\]\(https?://[^)]*\)\]\([^)]*\)[ \t]*")
NOTEBOOK_LINK = re.compile(r"\]\((\d\d_\w+)\.ipynb([#)])")


class ForTheProjector(Preprocessor):
    """Drop the Colab and Binder badges (pictures from the internet, useless on a slide) and point the links to
    other notebooks (prerequisites, **Next**) at their decks."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = NOTEBOOK_LINK.sub(r"](\1.slides.html\2", BADGE.sub("", cell.source))
            cell.source = re.sub(r"\n{3,}", "\n\n", cell.source)
        return cell, resources


def node_modules() -> Path:
    """``node_modules`` with the pinned packages (``npm ci`` first if it is missing or out of date)."""
    lock = ROOT / "package-lock.json"
    installed = NODE_MODULES / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        if shutil.which("npm") is None:
            raise SystemExit("make slides needs npm (Node.js) once, to fetch reveal.js and MathJax: "
                             "install Node.js (e.g. `apt-get install npm`), then run it again")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ROOT, check=True)
    return NODE_MODULES


def copy_assets(out: Path) -> None:
    """Copy the scripts, styles and fonts the decks load into ``out/lib``."""
    source = node_modules()
    for package, paths in ASSETS.items():
        for relative in paths:
            src, dst = source / package / relative, out / "lib" / package / relative
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def exporter() -> SlidesExporter:
    """nbconvert's slides exporter, set up for a projector with local scripts."""
    config = Config()
    config.SlidesExporter.update({
        **URLS,
        "reveal_width": str(SLIDE_WIDTH),
        "reveal_height": str(SLIDE_HEIGHT),
        "reveal_theme": "white",  # nbconvert's default, "simple", imports Google Fonts
        "reveal_scroll": True,
        "reveal_number": "c/t",
        "exclude_input_prompt": True,
        "exclude_output_prompt": True,
    })
    config.TemplateExporter.extra_template_basedirs = [str(TEMPLATES)]
    slides = SlidesExporter(config=config, template_name="mha_slides")
    slides.register_preprocessor(ForTheProjector(), enabled=True)
    return slides


def write_index(decks: list[Path], out: Path) -> Path:
    """``out/index.html``: a list of every deck in ``out`` with its notebook's title."""
    items = []
    for deck in sorted(out.glob("[0-9][0-9]_*.slides.html")):
        match = re.search(r"<title>(.*?) slides</title>", deck.read_text(encoding="utf-8"))
        notebook = ROOT / "notebooks" / deck.name.replace(".slides.html", ".ipynb")
        title = deck.name
        if notebook.exists():
            title = html.escape(nbformat.read(notebook, as_version=4).cells[0].source.split("\n")[0].lstrip("# "))
        elif match:
            title = match.group(1)
        items.append(f'<li><a href="{deck.name}">{title}</a></li>')
    index = out / "index.html"
    index.write_text(INDEX.format(items="\n".join(items)), encoding="utf-8")
    return index


def write_decks(paths: list[Path], out: Path) -> list[Path]:
    """Write one deck per notebook into ``out`` (with ``out/lib``); the decks written."""
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    slides = exporter()
    written = []
    for path in paths:
        note = teachers_note(path)
        deck = deck_notebook(nbformat.read(path, as_version=4), walkthrough(note) if note else [])
        html, _ = slides.from_notebook_node(deck, resources={
            "metadata": {"name": path.stem, "path": str(path.parent)}, "mha_css": CAPS_CSS,
            "mha_min_scale": MIN_SCALE})
        target = out / f"{path.stem}.slides.html"
        target.write_text(html, encoding="utf-8")
        written.append(target)
    write_index(written, out)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "slides", help="the folder of the decks (slides/)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for deck in write_decks(paths, args.out):
        print(f"{deck}: written", file=sys.stderr)
    print(f"open {args.out / 'index.html'} in a browser (no network needed)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

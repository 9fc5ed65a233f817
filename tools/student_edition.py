"""Write the student edition: ``student/NN_*.ipynb`` from the teacher's edition ``notebooks/NN_*.ipynb``.

Usage: ``python tools/student_edition.py [notebooks/NN_*.ipynb ...]`` (``make student``: every notebook);
``--check`` writes nothing and exits 1 if a student copy is missing or out of date. ``--ref vYYYY.N`` writes copies
whose badges open, and whose setup cell installs, that tag (the commit a release tag points at; teaching/README.md,
"Pin your term"); a copy's ref is read back from its setup cell, so ``--check`` and ``make student`` keep it.

A student copy is what ``nbgrader generate_assignment`` releases with the course config
``teaching/nbgrader_config.py``: the same preprocessors, from that config, in the same order (cells locked,
solution regions replaced by the stub ``# YOUR CODE HERE`` and ``pass``, outputs cleared, checksums, hidden tests
and mark schemes removed, then the config's ``StudentEdition``: stubs expanded, Colab and Binder badges opening the
student copy, a note under them linking the teacher's edition, and the teacher's words that are not true of a
student's install reworded, such as "`make lab` already did": students install with INSTALL.md, not ``make``).
Left out are the steps that need a course folder:
the gradebook (``SaveCells``), a course header (``IncludeHeaderFooter``), and ``### AUTOTEST`` templates
(``InstantiateTests``, unused by the series). The **Next** link is relative, so it leads to the next student copy.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbgrader.preprocessors import IncludeHeaderFooter, InstantiateTests, SaveCells
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "student"
CONFIG = ROOT / "teaching" / "nbgrader_config.py"
COURSE_BOUND = (IncludeHeaderFooter, InstantiateTests, SaveCells)


def course_config(config: Path = CONFIG) -> Config:
    """The nbgrader configuration of ``config`` (``teaching/nbgrader_config.py``, or a course's copy)."""
    return PyFileConfigLoader(config.name, path=str(config.parent)).load_config()


def for_students(markdown: str) -> str:
    """The config's ``for_students``: teacher-only passages of ``markdown`` replaced by their student wording."""
    edition = next(p for p in course_config().GenerateAssignment.preprocessors if p.__name__ == "StudentEdition")
    return edition.for_students(markdown)


def ref_of(copy: Path) -> str:
    """The git ref a student copy's setup cell installs (``main`` when it names none, or the copy is missing)."""
    if not copy.exists():
        return "main"
    found = re.search(r'git\+https://github\.com/[\w.-]+/[\w.-]+@([\w./-]+)\\"', copy.read_text(encoding="utf-8"))
    return found.group(1) if found else "main"


def student_notebook(path: Path, config_file: Path = CONFIG, ref: str | None = None, edition: str = "",
                     words: dict[str, str] | None = None, name: str | None = None, code_stub: str | None = None,
                     text_stub: str | None = None) -> nbformat.NotebookNode:
    """The student edition of the notebook at ``path``, in memory (as ``config_file`` releases it, at ``ref``).

    ``edition``, ``words`` and the stubs make a translated edition's copy (``tools/translations.py``): its folder,
    such as ``"pt-BR/"``, the note's sentences in its language, and nbgrader's stubs in its language
    (``locale/editions.toml``'s ``code_stub`` and ``text_stub``).
    """
    nb = nbformat.read(path, as_version=4)
    config = course_config(config_file)
    if ref is not None:
        config.StudentEdition.ref = ref
    if edition:
        config.StudentEdition.edition = edition
        config.StudentEdition.words = words or {}
    if code_stub is not None:
        config.ClearSolutions.code_stub = {"python": code_stub}
    if text_stub is not None:
        config.ClearSolutions.text_stub = text_stub
    stem = name or path.stem
    resources: dict = {"unique_key": stem, "metadata": {"name": stem}}
    for preprocessor in config.GenerateAssignment.preprocessors:
        if not issubclass(preprocessor, COURSE_BOUND):
            nb, resources = preprocessor(config=config).preprocess(nb, resources)
    return nb


def render(path: Path, ref: str | None = None) -> str:
    """The file text of the student copy of ``path`` (what ``student/<name>`` must hold; its ref kept)."""
    return nbformat.writes(student_notebook(path, ref=ref or ref_of(STUDENT / path.name))) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a copy is out of date")
    parser.add_argument("--out", type=Path, default=STUDENT, help="the folder of the student copies (student/)")
    parser.add_argument("--ref", help="the tag the copies open and install (default: the one they have, or main)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    stale = []
    for path in paths:
        target = args.out / path.name
        text = render(path, args.ref or ref_of(args.out / path.name))
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(target)
        if not args.check:
            args.out.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"{target}: written", file=sys.stderr)
    if args.check and stale:
        print("out of date (run `make student`): " + ", ".join(p.name for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

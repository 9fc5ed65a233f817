"""Set up an nbgrader course folder for the series: the shipped config and one assignment per notebook.

Usage: ``python tools/nbgrader_course.py COURSE_DIR [NN ...] [--ref REF] [--edition pt-BR]`` (every notebook with a
graded exercise when no number is given). It writes ``COURSE_DIR/nbgrader_config.py`` (a copy of
``teaching/nbgrader_config.py``, left alone if it exists, but for the block this tool manages at its end) and
``COURSE_DIR/source/NN_name/NN_name.ipynb`` (the teacher's edition), then prints the next commands. Run nbgrader
from inside ``COURSE_DIR``, with the venv active: ``nbgrader generate_assignment NN_name`` releases the student
version.

The managed block sets ``StudentEdition.teacher_link = False`` (a graded release does not link the answers) and,
with ``--ref``, ``StudentEdition.ref``: a tag such as ``v2027.1`` (or a commit) that the released copies' badges
open and their setup cell installs (``git+...@v2027.1``), so a term keeps the version it started with. With
``--edition pt-BR`` (any translated edition of ``locale/editions.toml``) the assignments are that edition's
(``pt-BR/notebooks/``) and the block also sets ``StudentEdition.edition``, ``StudentEdition.words`` and nbgrader's
``ClearSolutions.code_stub`` and ``text_stub``: the released copies' badges open ``pt-BR/student/``, their note is in
Portuguese (``locale/pt_BR/kit.po``, copied into the block) and so are their stubs (``# SEU CÓDIGO AQUI``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "teaching" / "nbgrader_config.py"
BEGIN, END = "# --- set by tools/nbgrader_course.py ---", "# --- end of tools/nbgrader_course.py ---"
REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
sys.path.insert(0, str(ROOT / "tools"))
from editions import EDITIONS as TABLE  # noqa: E402

EDITIONS = {e.code: e.notebooks for e in TABLE}  # --edition -> its teacher's notebooks (locale/editions.toml)


def course_settings(ref: str | None, edition: str = "en") -> str:
    """The block ``create`` writes at the end of the course's config."""
    lines = [BEGIN, "# A graded release does not link the teacher's edition, which holds the answers.",
             "c.StudentEdition.teacher_link = False"]
    if ref:
        lines += ["# The term's version: the badges open it and the setup cell installs mha_lib at it.",
                  f"c.StudentEdition.ref = {ref!r}"]
    row = next(e for e in TABLE if e.code == edition)
    if not row.is_source:
        from translations import kit_words

        lines += [f"# The {edition} edition: badges open {edition}/student/, the note and nbgrader's stubs are in its"
                  " language (locale/editions.toml).",
                  f"c.StudentEdition.edition = {edition + '/'!r}", f"c.StudentEdition.words = {kit_words(row)!r}",
                  f"c.ClearSolutions.code_stub = {{'python': {row.code_stub!r}}}",
                  f"c.ClearSolutions.text_stub = {row.text_stub!r}"]
    return "\n".join([*lines, END]) + "\n"


def graded(path: Path) -> bool:
    """Whether the notebook has an autograded cell (nbgrader ``grade: true`` with points)."""
    cells = nbformat.read(path, as_version=4).cells
    return any(c.metadata.get("nbgrader", {}).get("grade") and c.metadata["nbgrader"].get("points", 0) > 0
               for c in cells)


def notebooks(numbers: list[str], edition: str = "en") -> list[Path]:
    """The teacher's editions named by number (``04``), or every graded one."""
    paths = sorted(EDITIONS[edition].glob("[0-9][0-9]_*.ipynb"))
    if not numbers:
        return [p for p in paths if graded(p)]
    found = {p.name[:2]: p for p in paths}
    missing = [n for n in numbers if n.zfill(2) not in found]
    if missing:
        raise SystemExit(f"no notebook numbered {', '.join(missing)} in notebooks/")
    return [found[n.zfill(2)] for n in numbers]


def create(course: Path, paths: list[Path], ref: str | None = None, edition: str = "en") -> list[str]:
    """Write the config and one assignment per notebook into ``course``; the assignment ids."""
    if ref is not None and not REF.fullmatch(ref):
        raise ValueError(f"ref must be a git tag or commit such as v2027.1, got {ref!r}")
    course.mkdir(parents=True, exist_ok=True)
    config = course / "nbgrader_config.py"
    if not config.exists():
        shutil.copyfile(CONFIG, config)
    text = config.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + text[text.index(END) + len(END):].lstrip("\n")
    config.write_text(text.rstrip("\n") + "\n\n" + course_settings(ref, edition), encoding="utf-8")
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
    parser.add_argument("--ref", help="the git tag or commit the term uses, e.g. v2027.1 (default: main)")
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="en",
                        help="the notebooks' language, an edition of locale/editions.toml: en (notebooks/), pt-BR"
                             " (pt-BR/notebooks/)...")
    args = parser.parse_args(argv)
    try:
        ids = create(args.course, notebooks(args.numbers, args.edition), args.ref, args.edition)
    except ValueError as err:
        parser.error(str(err))
    print(f"{args.course}: nbgrader_config.py and {len(ids)} assignment(s) in source/: {', '.join(ids)}"
          + (f"; releases pinned to {args.ref}" if args.ref else ""))
    # nbgrader runs `alembic` (its gradebook's schema) from PATH: the venv must be active.
    active = shutil.which("alembic") is not None
    print(("next" if active else "next, with the venv active (source .venv/bin/activate; on Windows"
           " .venv\\Scripts\\activate)") + f": cd {args.course} && nbgrader generate_assignment "
          f"{ids[0] if ids else 'NN_name'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

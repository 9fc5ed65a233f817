"""Set up an nbgrader course folder for the series: the shipped config and one assignment per notebook.

Usage: ``python tools/nbgrader_course.py COURSE_DIR [NN ...] [--ref REF] [--edition pt-BR] [--roster EXPORT.csv]
[--due NN=DATE ...] [--no-badges]`` (every notebook with a graded exercise when no number is given). It writes
``COURSE_DIR/nbgrader_config.py`` (a copy of ``teaching/nbgrader_config.py``, left alone if it exists, but for the
block this tool manages at its end) and
``COURSE_DIR/source/NN_name/NN_name.ipynb`` (the teacher's edition), then prints the next commands. Run nbgrader
from inside ``COURSE_DIR``, with the venv active: ``nbgrader generate_assignment NN_name`` releases the student
version.

The managed block sets ``StudentEdition.teacher_link = False`` (a graded release does not link the answers) and,
with ``--ref``, ``StudentEdition.ref``: a tag such as ``v2027.1`` (or a commit) that the released copies' badges
open and their setup cell installs (``git+...@v2027.1``), so a term keeps the version it started with. The ref must
be a tag or commit of this repository (``git rev-parse --verify REF^{commit}``; with ``--edition pt-BR`` it must hold
``pt-BR/student/``); outside a git checkout (a downloaded zip) it cannot be checked, so only a release tag
``vYYYY.N`` or a commit hash is accepted, with a warning. ``--no-badges`` drops the Colab and Binder badges from the
releases (``StudentEdition.badges = False``): they open the public student copy, which links the answers. With
``--edition pt-BR`` (any translated edition of ``locale/editions.toml``) the assignments are that edition's
(``pt-BR/notebooks/``) and the block also sets ``StudentEdition.edition``, ``StudentEdition.words`` and nbgrader's
``ClearSolutions.code_stub`` and ``text_stub``: the released copies' badges open ``pt-BR/student/``, their note is in
Portuguese (``locale/pt_BR/kit.po``, copied into the block) and so are their stubs (``# SEU CÓDIGO AQUI``).

``--roster`` imports the students from a learning platform's export into the course's gradebook
(``nbgrader db student import``): Moodle's grading worksheet (Assignment > "Download grading worksheet": the
``Identifier`` "Participant 12345" gives the id 12345, the number in its submission downloads' file names), Canvas's
gradebook export (Grades > Export: the ``ID`` column, the number in its downloads' file names), or nbgrader's own
columns (``id,first_name,last_name,email,lms_user_id``). It writes ``COURSE_DIR/roster.csv`` in nbgrader's columns
(``lms_user_id`` keeps the platform's own identifier). ``--due 03=2027-02-08T09:00+00:00`` sets an assignment's due
date (``nbgrader db assignment add NN_name --duedate``); the time needs its UTC offset, since nbgrader reads a time
without one as UTC.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "teaching" / "nbgrader_config.py"
BEGIN, END = "# --- set by tools/nbgrader_course.py ---", "# --- end of tools/nbgrader_course.py ---"
REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
sys.path.insert(0, str(ROOT / "tools"))
from editions import EDITIONS as TABLE  # noqa: E402

EDITIONS = {e.code: e.notebooks for e in TABLE}  # --edition -> its teacher's notebooks (locale/editions.toml)
RELEASE_OR_COMMIT = re.compile(r"v20\d\d\.[1-9]\d*|[0-9a-f]{7,40}")


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def check_ref(ref: str, edition: str = "en") -> str | None:
    """Refuse a ``--ref`` that is not a tag or commit of this repository; a warning to print, or None.

    In a git checkout: ``git rev-parse --verify REF^{commit}`` must succeed (a tag, a commit, or a branch, which is
    accepted with a warning: it moves). Outside one (a downloaded zip), only the forms ``vYYYY.N`` and a commit hash
    are accepted, unchecked.
    """
    if not REF.fullmatch(ref):
        raise ValueError(f"--ref: ref must be a git tag or commit such as v2027.1, got {ref!r}")
    inside = (ROOT / ".git").exists() and shutil.which("git") and _git("rev-parse", "--git-dir").returncode == 0
    if not inside:
        if not RELEASE_OR_COMMIT.fullmatch(ref):
            raise ValueError(f"--ref {ref!r}: not a git checkout, so the ref cannot be checked; give a release tag "
                             "(vYYYY.N) or a commit hash, or run the tool in a clone of the repository")
        return f"--ref {ref}: not a git checkout, so not checked; make sure GitHub has it (CHANGELOG.md lists releases)"
    if _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        known = " ".join(_git("tag", "--list", "v*").stdout.split()) or "none in this clone (git fetch --tags)"
        raise ValueError(f"--ref {ref!r} is not a tag or commit of this repository (git rev-parse --verify "
                         f"{ref}^{{commit}} failed); release tags: {known}")
    if edition != "en" and _git("cat-file", "-e", f"{ref}:{edition}/student").returncode != 0:
        raise ValueError(f"--ref {ref!r} has no {edition}/student/: that edition came later; pick a later release")
    if _git("show-ref", "--verify", "--quiet", f"refs/heads/{ref}").returncode == 0:
        return f"--ref {ref} is a branch, which moves during a term; a tag (vYYYY.N) or a commit pins it"
    folders = [f"{edition}/notebooks" if edition != "en" else "notebooks", "mha_lib"]
    if _git("diff", "--quiet", f"{ref}^{{commit}}", "--", *folders).returncode != 0:
        return (f"the notebooks or mha_lib of this checkout differ from {ref}'s, and the assignments are copied from "
                f"this checkout: `git checkout {ref}` first, so that they match what the releases install")
    return None


def course_settings(ref: str | None, edition: str = "en", badges: bool = True) -> str:
    """The block ``create`` writes at the end of the course's config."""
    lines = [BEGIN, "# A graded release does not link the teacher's edition, which holds the answers.",
             "c.StudentEdition.teacher_link = False"]
    if not badges:
        lines += ["# No Colab or Binder badges: they would open the public student copy, which links the answers.",
                  "c.StudentEdition.badges = False"]
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


def create(course: Path, paths: list[Path], ref: str | None = None, edition: str = "en",
           badges: bool = True) -> list[str]:
    """Write the config and one assignment per notebook into ``course``; the assignment ids.

    The ref is checked first (``check_ref``), so a refused ref leaves nothing behind.
    """
    if ref is not None:
        warning = check_ref(ref, edition)
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    settings = course_settings(ref, edition, badges)  # before anything is written: it may fail (a missing module)
    course.mkdir(parents=True, exist_ok=True)
    config = course / "nbgrader_config.py"
    if not config.exists():
        shutil.copyfile(CONFIG, config)
    text = config.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + text[text.index(END) + len(END):].lstrip("\n")
    config.write_text(text.rstrip("\n") + "\n\n" + settings, encoding="utf-8")
    ids = []
    for path in paths:
        folder = course / "source" / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / path.name
        if target.exists() and target.read_bytes() != path.read_bytes():
            # Run again (more due dates, a later roster): the lecturer's own hidden cases in source/ stay.
            print(f"kept {target} (it differs from {path.name}: your changes?); delete it to copy the notebook again",
                  file=sys.stderr)
        else:
            shutil.copyfile(path, target)
        ids.append(path.stem)
    return ids


def _nbgrader(course: Path, *args: str) -> None:
    """Run ``nbgrader ARGS`` in ``course`` with this Python (its ``alembic`` on PATH); raise on failure."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode:
        raise ValueError(f"nbgrader {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def roster_rows(export: Path) -> list[dict[str, str]]:
    """The students of a learning platform's export, in nbgrader's columns (id, names, email, lms_user_id)."""
    with open(export, newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    keys = {k.strip() for k in (rows[0].keys() if rows else [])}
    out = []
    for raw in rows:
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
        if "id" in keys:  # nbgrader's own columns
            student = {k: row.get(k, "") for k in ("id", "first_name", "last_name", "email", "lms_user_id")}
        elif {"Identifier", "Full name"} <= keys:  # Moodle's grading worksheet
            number = re.search(r"(\d+)\s*$", row["Identifier"])
            if not number:
                continue
            first, _, last = row["Full name"].rpartition(" ")
            student = {"id": number.group(1), "first_name": first or last, "last_name": last if first else "",
                       "email": row.get("Email address", ""), "lms_user_id": row["Identifier"]}
        elif {"Student", "ID"} <= keys:  # Canvas's gradebook export
            if not row["ID"] or "Points Possible" in row["Student"] or row["Student"] == "Student, Test":
                continue
            last, _, first = row["Student"].partition(",")
            student = {"id": row["ID"], "first_name": first.strip(), "last_name": last.strip(),
                       "email": row.get("Email", ""), "lms_user_id": row.get("SIS User ID") or row["ID"]}
        else:
            raise ValueError(f"{export}: not a roster this tool reads: Moodle's grading worksheet (Identifier, "
                             "Full name, Email address), Canvas's gradebook export (Student, ID, SIS User ID) or "
                             f"nbgrader's columns (id, first_name, last_name, email); its columns: {sorted(keys)}")
        if student["id"]:
            out.append(student)
    if not out:
        raise ValueError(f"{export}: no student in it")
    return out


def import_roster(course: Path, export: Path) -> int:
    """Write ``course/roster.csv`` from ``export`` and import it into the gradebook; the number of students."""
    students = roster_rows(export)
    roster = course / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "first_name", "last_name", "email", "lms_user_id"])
        writer.writeheader()
        writer.writerows(students)
    _nbgrader(course, "db", "student", "import", roster.name)
    return len(students)


def parse_dues(dues: list[str]) -> list[tuple[str, str]]:
    """``NN=DATE`` items as ``(NN, ISO date with offset)``; raises on a date without its UTC offset."""
    parsed = []
    for item in dues:
        key, _, when = item.partition("=")
        try:
            text = when.strip().replace(" ", "T", 1)
            # Python 3.10's fromisoformat does not read the "Z" suffix that 3.11 does
            date = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
        except ValueError:
            raise ValueError(f"--due {item!r}: write NN=DATE, the date as 2027-02-08T09:00+01:00") from None
        if date.tzinfo is None:
            raise ValueError(f"--due {item!r}: give the UTC offset (2027-02-08T09:00+01:00): nbgrader reads a "
                             "time without one as UTC")
        parsed.append((key.strip(), date.isoformat()))
    return parsed


def due_dates(course: Path, dues: list[str]) -> dict[str, str]:
    """Set ``NN=DATE`` due dates of the course's assignments (``nbgrader db assignment add``); ``{id: date}``."""
    known = {}
    for folder in (course / "source").glob("[0-9][0-9]_*"):
        known[folder.name] = known[folder.name[:2]] = folder.name
    done = {}
    for key, date in parse_dues(dues):
        name = known.get(key.zfill(2) if key.isdigit() else key)
        if name is None:
            raise ValueError(f"--due {key}: no assignment {key!r} in {course / 'source'}")
        _nbgrader(course, "db", "assignment", "add", name, f"--duedate={date}")
        done[name] = date
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("course", type=Path, help="the course folder (created if missing)")
    parser.add_argument("numbers", nargs="*", help="notebook numbers, e.g. 04 05 (default: every graded notebook)")
    parser.add_argument("--ref", help="the git tag or commit the term uses, e.g. v2027.1 (default: main)")
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="en",
                        help="the notebooks' language, an edition of locale/editions.toml: en (notebooks/), pt-BR"
                             " (pt-BR/notebooks/)...")
    parser.add_argument("--roster", type=Path, help="a learning platform's export of the students (Moodle's grading "
                                                    "worksheet, Canvas's gradebook export, or nbgrader's columns)")
    parser.add_argument("--due", action="append", default=[], metavar="NN=DATE",
                        help="a due date with its UTC offset, e.g. 03=2027-02-08T09:00+00:00 (repeatable)")
    parser.add_argument("--no-badges", action="store_true", help="releases without the Colab and Binder badges")
    args = parser.parse_args(argv)
    try:
        if args.roster:
            roster_rows(args.roster)  # refuse an unreadable roster or date before anything is written
        parse_dues(args.due)
        ids = create(args.course, notebooks(args.numbers, args.edition), args.ref, args.edition,
                     badges=not args.no_badges)
        students = import_roster(args.course, args.roster) if args.roster else 0
        dates = due_dates(args.course, args.due)
    except ValueError as err:
        parser.error(str(err))
    print(f"{args.course}: nbgrader_config.py and {len(ids)} assignment(s) in source/: {', '.join(ids)}"
          + (f"; releases pinned to {args.ref}" if args.ref else "")
          + (f"; {students} students imported (roster.csv)" if students else "")
          + "".join(f"; {name} due {when}" for name, when in dates.items()))
    # nbgrader runs `alembic` (its gradebook's schema) from PATH: the venv must be active.
    active = shutil.which("alembic") is not None
    print(("next" if active else "next, with the venv active (source .venv/bin/activate; on Windows"
           " .venv\\Scripts\\activate)") + f": cd {args.course} && nbgrader generate_assignment "
          f"{ids[0] if ids else 'NN_name'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

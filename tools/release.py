"""Cut a release of the series: the version, the changelog and the tag ``vYYYY.N`` agree.

Usage (a maintainer, in a clone of the repository, CONTRIBUTING.md "Cutting a release"):

- ``python tools/release.py check``: ``mha_lib.__version__`` is ``YYYY.N``, the newest entry of ``CHANGELOG.md`` is
  that version, every ``v*`` tag of the clone has its changelog entry, and, when the tag ``vYYYY.N`` exists, it
  points at a commit whose ``mha_lib/__init__.py`` and ``CHANGELOG.md`` say the same version. A clone without the
  tag (CI's shallow clones carry none) passes: the tag is checked where it is present. ``tests/test_release.py``
  runs it.
- ``python tools/release.py prepare``: on a clean work tree whose version has no tag yet, writes the student
  copies (``student/``, then the translated editions' through ``tools/translations.py``) at the tag, so that the
  copies GitHub serves at the tag open and install the tag. Commit them ("Release vYYYY.N").
- ``python tools/release.py tag``: on a clean work tree whose student copies are at the tag, makes the annotated
  tag ``vYYYY.N`` with the changelog entry as its message. Then ``git push origin vYYYY.N``. ``main`` goes on
  opening and installing ``main``: reset the copies there with ``python tools/student_edition.py --ref main``
  and ``python tools/translations.py`` after merging the release branch back (or cut the release on a branch).

Each command prints what it did or why it refused, and exits 1 on a refusal.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = re.compile(r'^__version__ = "(?P<version>[^"]+)"$', re.M)
SCHEME = re.compile(r"20\d\d\.[1-9]\d*")  # YYYY.N: the N-th release of year YYYY
ENTRY = re.compile(r"^## (?P<version>\S+) \((?P<date>\d{4}-\d\d-\d\d|unreleased)\)$", re.M)


class ReleaseError(Exception):
    """The version, the changelog or the tag disagree, or the work tree is not ready."""


def version(root: Path = ROOT, text: str | None = None) -> str:
    """``mha_lib.__version__`` as ``mha_lib/__init__.py`` writes it (or as ``text`` does)."""
    text = (root / "mha_lib" / "__init__.py").read_text(encoding="utf-8") if text is None else text
    found = VERSION.search(text)
    if not found:
        raise ReleaseError("mha_lib/__init__.py: no line __version__ = \"YYYY.N\"")
    if not SCHEME.fullmatch(found["version"]):
        raise ReleaseError(f"mha_lib/__init__.py: __version__ {found['version']!r} is not YYYY.N (e.g. 2027.1)")
    return found["version"]


def entries(root: Path = ROOT, text: str | None = None) -> list[tuple[str, str]]:
    """The changelog's ``(version, date)`` entries, newest first (``## 2026.1 (2026-11-28)`` headings)."""
    text = (root / "CHANGELOG.md").read_text(encoding="utf-8") if text is None else text
    return [(m["version"], m["date"]) for m in ENTRY.finditer(text)]


def entry_text(version_: str, root: Path = ROOT) -> str:
    """The body of the changelog entry of ``version_`` (the tag's message)."""
    text = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)
    body = next((p for p in parts[1:] if p.startswith(f"{version_} ")), "")
    return "## " + body.strip() if body else ""


def git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)


def in_git(root: Path) -> bool:
    return (root / ".git").exists() and git(root, "rev-parse", "--git-dir").returncode == 0


def tags(root: Path = ROOT) -> list[str]:
    """The clone's release tags (``v*``); none outside a git checkout."""
    if not in_git(root):
        return []
    return [t for t in git(root, "tag", "--list", "v*").stdout.split() if t]


def check(root: Path = ROOT) -> list[str]:
    """What the version, the changelog and the tags agree on: the lines ``check`` prints. Raises on a mismatch."""
    current = version(root)
    listed = entries(root)
    if not listed:
        raise ReleaseError("CHANGELOG.md: no entry '## YYYY.N (YYYY-MM-DD)'")
    newest, date = listed[0]
    if newest != current:
        raise ReleaseError(f"CHANGELOG.md's newest entry is {newest}, mha_lib.__version__ is {current}: "
                           f"add '## {current} (date)' at the top of the changelog")
    said = [f"mha_lib.__version__ {current} = CHANGELOG.md's newest entry ({date})"]
    versions = {v for v, _ in listed}
    for tag in tags(root):
        if tag.removeprefix("v") not in versions:
            raise ReleaseError(f"tag {tag} has no entry in CHANGELOG.md")
    tag = f"v{current}"
    if tag in tags(root):
        at = git(root, "show", f"{tag}:mha_lib/__init__.py")
        log = git(root, "show", f"{tag}:CHANGELOG.md")
        if at.returncode or log.returncode:
            raise ReleaseError(f"tag {tag}: its commit has no mha_lib/__init__.py or CHANGELOG.md")
        if version(root, at.stdout) != current or not entries(root, log.stdout) or (
                entries(root, log.stdout)[0][0] != current):
            raise ReleaseError(f"tag {tag} points at a commit whose version or changelog is not {current}")
        said.append(f"tag {tag} exists and its commit says {current} in mha_lib/__init__.py and CHANGELOG.md")
    else:
        said.append(f"tag {tag} not in this clone (not made yet, or a clone without tags): not checked")
    return said


def _clean(root: Path) -> None:
    if not in_git(root):
        raise ReleaseError(f"{root} is not a git checkout: a release is cut in a clone of the repository")
    dirty = git(root, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    if dirty:
        raise ReleaseError("the work tree has uncommitted changes; commit or stash them first:\n" + dirty)


def _copies_at(root: Path, ref: str) -> list[str]:
    """The student copies (every edition) whose setup cell does not install ``ref``."""
    sys.path.insert(0, str(root / "tools"))
    from student_edition import ref_of

    copies = sorted(root.glob("student/[0-9][0-9]_*.ipynb")) + sorted(root.glob("*/student/[0-9][0-9]_*.ipynb"))
    return [str(p.relative_to(root)) for p in copies if ref_of(p) != ref]


def prepare(root: Path = ROOT) -> str:
    """Write every edition's student copies at the tag of the current version."""
    check(root)
    _clean(root)
    tag = f"v{version(root)}"
    if tag in tags(root):
        raise ReleaseError(f"tag {tag} exists already: raise __version__ (and the changelog) for a new release")
    for tool in (["student_edition.py", "--ref", tag], ["translations.py"]):
        result = subprocess.run([sys.executable, str(root / "tools" / tool[0]), *tool[1:]], cwd=root, timeout=1800)
        if result.returncode:
            raise ReleaseError(f"tools/{tool[0]} failed")
    return (f"student copies written at {tag}; next: git commit -am 'Release {tag}' && "
            f"python tools/release.py tag && git push origin {tag}")


def tag(root: Path = ROOT) -> str:
    """Make the annotated tag of the current version on HEAD."""
    check(root)
    _clean(root)
    name = f"v{version(root)}"
    if name in tags(root):
        raise ReleaseError(f"tag {name} exists already")
    if entries(root)[0][1] == "unreleased":
        raise ReleaseError(f"CHANGELOG.md: give {version(root)} its release date instead of 'unreleased'")
    stale = _copies_at(root, name)
    if stale:
        raise ReleaseError(f"{len(stale)} student copies do not install {name} (run `python tools/release.py "
                           f"prepare` and commit): {', '.join(stale[:3])}...")
    made = git(root, "tag", "-a", name, "-m", f"Release {name}\n\n{entry_text(version(root), root)}")
    if made.returncode:
        raise ReleaseError(f"git tag failed: {made.stderr.strip()}")
    return f"tagged {name} at {git(root, 'rev-parse', '--short', 'HEAD').stdout.strip()}; next: git push origin {name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=("check", "prepare", "tag"), default="check")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            print("\n".join(check(args.root)))
        else:
            print(prepare(args.root) if args.command == "prepare" else tag(args.root))
    except ReleaseError as err:
        print(f"release {args.command}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

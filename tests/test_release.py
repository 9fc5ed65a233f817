"""A release's version, changelog and tag agree (issue 37, N-W1): tools/release.py.

The repository's own check runs on every `make test`. A CI clone may carry no tags: the check passes without the tag
``vYYYY.N`` and checks it where the clone has it. The tagging steps run on a scratch git repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import release  # noqa: E402

import mha_lib  # noqa: E402


def test_version_changelog_and_tag_agree() -> None:
    """mha_lib.__version__ is CHANGELOG.md's newest entry; the tag v<version>, where present, says the same."""
    said = release.check()
    assert release.version() == mha_lib.__version__
    assert release.entries()[0][0] == mha_lib.__version__
    tag = f"v{mha_lib.__version__}"
    if tag in release.tags():
        assert any(line.startswith(f"tag {tag} exists") for line in said), said
        commit = subprocess.run(["git", "rev-parse", "--verify", f"{tag}^{{commit}}"], cwd=ROOT,
                                capture_output=True, text=True)
        assert commit.returncode == 0, commit.stderr
    else:
        assert any("not checked" in line for line in said), said


def test_the_guide_and_contributing_name_the_procedure() -> None:
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    guide = (ROOT / "teaching" / "README.md").read_text(encoding="utf-8")
    for command in ("tools/release.py prepare", "tools/release.py tag", "git push origin"):
        assert command in contributing, f"CONTRIBUTING.md, 'Cutting a release': {command}"
    assert f"v{mha_lib.__version__}" in guide and "CHANGELOG.md" in guide and "tools/release.py" in guide


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=root,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _repo(tmp_path: Path, version: str, changelog: str, ref: str) -> Path:
    """A scratch repository with a version, a changelog and one student copy installing ``ref``."""
    root = tmp_path / "repo"
    (root / "mha_lib").mkdir(parents=True)
    (root / "student").mkdir()
    (root / "tools").mkdir()
    for name in ("student_edition.py",):  # prepare/tag read the copies' refs with the real tool
        (root / "tools" / name).write_text((ROOT / "tools" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (root / "mha_lib" / "__init__.py").write_text(f'__version__ = "{version}"\n', encoding="utf-8")
    (root / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    setup = f'%pip install -q "mha_lib @ git+https://github.com/o/r@{ref}"' if ref != "main" else \
        '%pip install -q "mha_lib @ git+https://github.com/o/r"'
    nb = {"cells": [{"cell_type": "code", "source": setup, "metadata": {}, "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "student" / "00_start_here.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "start")
    return root


def test_a_mismatch_is_refused(tmp_path: Path) -> None:
    root = _repo(tmp_path, "2027.2", "# Changelog\n\n## 2027.1 (2027-01-10)\n\n- first\n", "main")
    with pytest.raises(release.ReleaseError, match="newest entry is 2027.1, mha_lib.__version__ is 2027.2"):
        release.check(root)
    (root / "mha_lib" / "__init__.py").write_text('__version__ = "2027.02b"\n', encoding="utf-8")
    with pytest.raises(release.ReleaseError, match="is not YYYY.N"):
        release.check(root)


def test_tag_refuses_until_ready_then_the_check_reads_the_tag(tmp_path: Path) -> None:
    log = "# Changelog\n\n## 2027.1 (2027-01-10)\n\n- the first release\n"
    root = _repo(tmp_path, "2027.1", log, "main")
    assert any("not checked" in line for line in release.check(root))
    with pytest.raises(release.ReleaseError, match="do not install v2027.1"):
        release.tag(root)  # the student copies still install main
    copy = root / "student" / "00_start_here.ipynb"
    copy.write_text(copy.read_text().replace("github.com/o/r", "github.com/o/r@v2027.1"), encoding="utf-8")
    with pytest.raises(release.ReleaseError, match="uncommitted changes"):
        release.tag(root)
    _git(root, "commit", "-q", "-am", "Release v2027.1")
    assert release.tag(root).startswith("tagged v2027.1")
    assert "the first release" in _git(root, "tag", "-n9", "v2027.1")
    assert any(line.startswith("tag v2027.1 exists") for line in release.check(root))
    with pytest.raises(release.ReleaseError, match="exists already"):
        release.tag(root)
    # Later, main moves on to 2027.2 without its changelog entry: refused.
    (root / "mha_lib" / "__init__.py").write_text('__version__ = "2027.2"\n', encoding="utf-8")
    with pytest.raises(release.ReleaseError, match="newest entry is 2027.1"):
        release.check(root)


def test_a_tag_whose_commit_says_another_version_is_refused(tmp_path: Path) -> None:
    root = _repo(tmp_path, "2027.1", "# Changelog\n\n## 2027.1 (2027-01-10)\n", "main")
    (root / "mha_lib" / "__init__.py").write_text('__version__ = "2026.9"\n', encoding="utf-8")
    (root / "CHANGELOG.md").write_text("# Changelog\n\n## 2026.9 (2026-12-01)\n\n## 2027.1 (2027-01-10)\n")
    _git(root, "commit", "-q", "-am", "wrong")
    _git(root, "tag", "v2027.1")  # made by hand on the wrong commit
    (root / "mha_lib" / "__init__.py").write_text('__version__ = "2027.1"\n', encoding="utf-8")
    (root / "CHANGELOG.md").write_text("# Changelog\n\n## 2027.1 (2027-01-10)\n\n## 2026.9 (2026-12-01)\n")
    with pytest.raises(release.ReleaseError, match="tag v2027.1 points at a commit whose version"):
        release.check(root)


def test_the_command_line_says_why_it_refuses(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = _repo(tmp_path, "2027.2", "# Changelog\n\n## 2027.1 (2027-01-10)\n", "main")
    assert release.main(["check", "--root", str(root)]) == 1
    assert "release check: CHANGELOG.md's newest entry is 2027.1" in capsys.readouterr().err
    assert release.main(["check"]) == 0

"""The built website's files (``make test-site``): links and anchors, the pages it must have, the API reference,
the publishing workflow, and the site's address written in one place."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
import yaml
from site_helpers import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(ROOT / "tools"))
import site_build  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
URLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


class _Page(HTMLParser):
    """The ids of a page and the targets of its links (a, link, img, script)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        target = a.get("href") if tag in ("a", "link") else a.get("src") if tag in ("img", "script") else None
        if target:
            self.links.append(target)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def pages(site: Path) -> dict[Path, _Page]:
    return {p: _parse(p) for p in sorted(site.rglob("*.html")) if "_static" not in p.relative_to(site).parts}


def test_every_internal_link_and_anchor_resolves(site: Path, pages: dict[Path, _Page]) -> None:
    broken = []
    checked = 0
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.is_file() or site.resolve() not in target.resolve().parents:
                broken.append(f"{path.relative_to(site)}: {link} (no such file in the site)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {link} (no #{parts.fragment} there)")
    assert checked > 1000, f"only {checked} internal links checked"
    assert not broken, "\n".join(broken)


def test_no_page_loads_anything_from_outside(pages: dict[Path, _Page], site: Path) -> None:
    """Scripts, style sheets, fonts and images come from the site itself (links to elsewhere are fine)."""
    outside = []
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|img|link|iframe|source)\b[^>]*>", text):
            is_link = tag.startswith("<link")
            if is_link and not re.search(r'rel="(?:stylesheet|preload|modulepreload|icon|shortcut icon)"', tag):
                continue
            if re.search(r'(?:src|href)="(?:https?:)?//', tag):
                outside.append(f"{path.relative_to(site)}: {tag}")
    assert not outside, "\n".join(outside[:20])
    css = [p for p in site.rglob("*.css") if re.search(r"url\((['\"]?)(https?:)?//", p.read_text(errors="ignore"))]
    assert not css, f"style sheets that load from outside: {css}"


def test_home_page_has_the_series_and_how_to_run_it(site: Path, pages: dict[Path, _Page]) -> None:
    home = pages[site / "index.html"]
    for nb in NOTEBOOKS:
        assert f"notebooks/{nb.stem}.html" in home.links, f"the home page does not link {nb.stem}"
    text = (site / "index.html").read_text()
    assert re.search(r"<h2[^>]*>Who it is for", text) and re.search(r"<h2[^>]*>How to run it", text)
    for guide in ["teaching/README.html", "benchmarks/README.html", "api/index.html", "notebooks/glossary.html"]:
        assert (site / guide).is_file(), guide
    for md in (ROOT / "teaching").glob("*.md"):
        assert (site / "teaching" / f"{md.stem}.html").is_file(), f"no page for teaching/{md.name}"


def test_glossary_page_is_notebook_00s(site: Path) -> None:
    text = re.sub(r"<[^>]+>", " ", (site / "notebooks" / "glossary.html").read_text())
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    sections = [c.source for c in nb.cells
                if c.cell_type == "markdown" and re.match(r"## .*(Notation|[Gg]lossary|[Ww]ords)", c.source)]
    assert sections, "notebook 00 has no notation or glossary section"
    for source in sections:
        bold = re.findall(r"\*\*([^*`$]+?)\*\*", source)[:5]
        for term in bold:
            assert term.strip() in text, f"the glossary page misses {term!r}"


def test_api_reference_has_every_public_name(site: Path) -> None:
    import mha_lib

    modules = site_build.public_modules()
    assert "mha_lib.mha" in modules or any(m.endswith(".mha") for m in modules), modules
    missing = []
    for module in modules:
        page = site / "api" / f"{module}.html"
        if not page.is_file():
            missing.append(f"{module}: no page")
            continue
        ids = _parse(page).ids
        for name in site_build.public_names(module):
            obj = getattr(importlib.import_module(module), name)
            home = getattr(obj, "__module__", module)
            if f"{module}.{name}" not in ids and f"{home}.{getattr(obj, '__qualname__', name)}" not in ids:
                missing.append(f"{module}.{name}")
    index = (site / "api" / "index.html").read_text()
    missing += [f"mha_lib.{n} (API index)" for n in mha_lib.__all__ if f">{n}<" not in index]
    assert not missing, "\n".join(missing)
    mha = (site / "api" / f"{mha_lib.MultiHeadAttention.__module__}.html").read_text()
    assert "num_heads" in mha and "trace" in mha, "MultiHeadAttention's signature or methods are missing"


def test_launch_urls_name_the_edition() -> None:
    urls = site_build.launch_urls("student", "03_x.ipynb")
    assert urls["colab"].endswith("/blob/main/student/03_x.ipynb")
    assert urls["binder"].endswith("/main?labpath=student%2F03_x.ipynb")
    with pytest.raises(ValueError, match="edition"):
        site_build.launch_urls("teachers", "03_x.ipynb")


def test_figure_alt_text() -> None:
    assert site_build.figure_alt('show_diagram("03_x", "One query scores five keys")', "h") == \
        "One query scores five keys"
    assert site_build.figure_alt('ax.set_title(f"head {h}")\nfig.suptitle("Weights")', "h") == "Figure: head …; Weights"
    assert site_build.figure_alt("plt.plot(x)", "3 · Softmax") == "Figure: 3 · Softmax"


def test_workflow_publishes_the_site_on_push_to_main() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    on = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads the key `on` as True
    assert on["push"]["branches"] == ["main"]
    assert workflow["permissions"]["pages"] == "write" and workflow["permissions"]["id-token"] == "write"
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    assert any("make site" in s.get("run", "") for s in steps)
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload and upload[0]["with"]["path"] == str(site_build.OUT.relative_to(ROOT))
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in steps)


def test_workflow_is_valid() -> None:
    """GitHub's workflow schema (check-jsonschema's vendored copy, offline); actionlint too, where installed."""
    checker = Path(sys.executable).parent / "check-jsonschema"
    result = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    if shutil.which("actionlint"):
        result = subprocess.run(["actionlint", str(WORKFLOW)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_site_address_is_written_in_one_place() -> None:
    """pyproject's [project.urls] Documentation; the README links it; nothing else spells it out."""
    address = URLS["Documentation"]
    assert re.fullmatch(r"https://[a-z0-9-]+\.github\.io/[^/]+/", address), address
    assert f"]({address})" in (ROOT / "README.md").read_text(), "README.md does not link the site"
    files = [WORKFLOW, ROOT / "Makefile", *(ROOT / "site").rglob("*.*"), *(ROOT / "tools").glob("site*.py")]
    spelled = [p for p in files if p.is_file() and address.rstrip("/") in p.read_text(errors="ignore")]
    assert not spelled, f"the site's address is also written in {spelled}: read it from pyproject.toml"


def test_ci_builds_and_reads_the_site() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert '"test-site:chromium-apt:make --no-print-directory test-site"' in ci, ".ci/run has no test-site job"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-site: site$", makefile, re.MULTILINE), "make test-site must build the site first"

"""Fixtures of the website's tests (``make test-site``): the built site served on 127.0.0.1, and Chromium.

Skipped unless MHA_SITE_TEST=1 (``make test-site`` builds the site first, then sets it). Playwright's Python client
drives Debian's /usr/bin/chromium; every request that leaves the local server is refused and recorded.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from site_helpers import FAILURES, SITE, Visit, new_visit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from chromium import launched  # noqa: E402

if os.environ.get("MHA_SITE_TEST") != "1":
    collect_ignore_glob = ["test_*.py"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE}/index.html is missing: run `make site` first (`make test-site` does)")
    return SITE


@pytest.fixture(scope="session")
def base_url(site: Path) -> Iterator[str]:
    """The site served over HTTP on a free port of 127.0.0.1, as GitHub Pages serves it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    with launched("test-site") as browser:
        yield browser


@pytest.fixture
def visit(browser, base_url: str, request: pytest.FixtureRequest) -> Iterator[Visit]:
    v = new_visit(browser, base_url)
    yield v
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        FAILURES.mkdir(exist_ok=True)
        v.page.screenshot(path=str(FAILURES / f"site-{request.node.name.replace('/', '_')}.png"))
    v.page.context.close()

"""Debian's Chromium, driven by Playwright's Python client, for the browser tests (tests/browser, tests/site).

Never ``playwright install``: the Makefile installs Debian's ``chromium`` with apt-get when it is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@contextmanager
def launched(make_target: str) -> Iterator[object]:
    """A headless Chromium browser (Playwright's ``Browser``); fails the test, naming ``make_target``, if missing."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make {make_target}` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()

"""What the website's tests share: paths, and a browser page that may load only from the local site."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
SHOTS = ROOT / "build" / "site-screenshots"
FAILURES = ROOT / "browser-failures"


@dataclass
class Visit:
    """A browser page on the local site, and what went wrong while it loaded."""

    page: object
    outside: list[str] = field(default_factory=list)  # requests refused: they left the site
    failed: list[str] = field(default_factory=list)  # requests that failed, or answered 4xx/5xx
    console: list[str] = field(default_factory=list)  # console errors and uncaught exceptions

    def problems(self) -> list[str]:
        return ([f"fetched from outside the site: {u}" for u in self.outside]
                + [f"failed request: {u}" for u in self.failed] + [f"console: {m}" for m in self.console])

    def clear(self) -> None:
        self.outside.clear()
        self.failed.clear()
        self.console.clear()


def new_visit(browser, base_url: str, *, width: int = 1280, height: int = 900, dark: bool = False) -> Visit:
    """A fresh browser context (its own storage) whose page may load only from ``base_url``."""
    # is_mobile stays off even on a phone-sized screen: Chromium would widen the layout viewport to the content and
    # hide a page that is wider than the screen. A touch screen all the same, so a tap is a tap.
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light",
                                  device_scale_factor=1, is_mobile=False, has_touch=width < 500)
    if dark:  # pydata-sphinx-theme reads the reader's choice from localStorage before it draws
        context.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
    page = context.new_page()
    page.set_default_timeout(30_000)
    visit = Visit(page)

    def route(r) -> None:
        if r.request.url.startswith(base_url):
            r.continue_()
        else:
            visit.outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: visit.console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: visit.console.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: None if r.url in visit.outside else visit.failed.append(
        f"{r.url} ({r.failure})"))
    page.on("response", lambda r: visit.failed.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None)
    return visit

"""A real browser for the report and viewer tests: Debian's chromium, driven by Playwright.

Nothing downloads a browser: Playwright is pointed at /usr/bin/chromium, which `scripts/install.sh --test`
installs. On a developer's machine without it the browser tests skip with what to do; in CI
($CI set, as .ci/run sets it) a missing browser is a failure, so they can never silently not run.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Iterator

import pytest

CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--allow-file-access-from-files"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def need_browser() -> str:
    """The chromium executable, or skip (fail in CI) with how to get it."""
    path = chromium_path()
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        why = "Debian's chromium and playwright are needed (as root: apt-get install chromium; make install-test)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return path


@contextmanager
def page(width: int = 1400, height: int = 900) -> Iterator:
    """A fresh headless page that records console errors, page errors and dialogs (``page.problems``)."""
    from playwright.sync_api import sync_playwright

    exe = need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": width, "height": height})
            pg.problems = []
            pg.on("pageerror", lambda e: pg.problems.append(f"page error: {e}"))
            pg.on("console", lambda m: m.type == "error" and pg.problems.append(f"console: {m.text}"))

            def dialog(d):
                pg.problems.append(f"dialog: {d.message}")
                d.dismiss()

            pg.on("dialog", dialog)
            yield pg
        finally:
            browser.close()

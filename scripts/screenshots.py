"""Refresh the screenshots in docs/img/ (`make screenshots`): the report's first screen and the viewer.

Taken in headless Chromium (Debian's, driven by Playwright) at 1400×900 from a run directory:
by default the recorded embedded-default run in tests/golden/asb-v1-run (copied, re-reported).

    .venv/bin/python scripts/screenshots.py [RUN_DIR]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

OUT = REPO / "docs" / "img"


def main() -> None:
    if chromium_path() is None:
        sys.exit("needs Debian's chromium (apt-get install chromium) and playwright (make install)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 1:
            run = Path(sys.argv[1])
        else:
            run = Path(tmp) / "asb-d9c285b0e4"
            shutil.copytree(REPO / "tests" / "golden" / "asb-v1-run", run)
        subprocess.run([sys.executable, "-m", "localbench.cli", "report", str(run)], check=True)
        OUT.mkdir(parents=True, exist_ok=True)
        view = (run / "view" / "index.html").resolve().as_uri()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto((run / "report.html").resolve().as_uri())
            page.screenshot(path=str(OUT / "report.png"))
            page.goto(view + "#list?leaked=yes")
            page.wait_for_selector("#list tbody tr")
            page.screenshot(path=str(OUT / "viewer-list.png"))
            for row in page.locator("#list tbody tr a").all()[::2]:  # a simulation with a message that carried a leak
                n = row.text_content()
                sim = browser.new_page(viewport={"width": 1400, "height": 900})
                sim.goto(view + f"#sim/{n}")
                sim.wait_for_selector("section.sim")
                carrier = sim.locator("li.msg.carried-full, li.msg.carried-partial")
                if carrier.count():
                    sim.locator("table.labels").scroll_into_view_if_needed()
                    sim.screenshot(path=str(OUT / "viewer-simulation.png"))
                    break
            page.goto(view + f"#sim/{n}")
            other = page.locator("#compare-with option").nth(1).get_attribute("value")
            page.goto(view + f"#compare/{n}/{other}")
            page.wait_for_selector(".side-by-side section.sim >> nth=1")
            page.screenshot(path=str(OUT / "viewer-compare.png"))
            browser.close()
    print(f"screenshots written to {OUT}")


if __name__ == "__main__":
    main()

"""Refresh the screenshots in docs/img/ (`make screenshots`): the report's first screen and the viewer.

Taken in headless Chromium (Debian's, driven by Playwright) at 1400×900 from a run directory:
by default a fresh run of the embedded default (`localbench run` with no arguments, in a
temporary folder: about 5 minutes on two CPU cores), else RUN_DIR (re-reported first).

    .venv/bin/python scripts/screenshots.py [RUN_DIR]

docs/img/screenshots.json records the hash of the report and viewer templates the pictures were
made with; tests/test_docs_site.py fails when the templates have changed since (rerun this).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

OUT = REPO / "docs" / "img"
MANIFEST = OUT / "screenshots.json"
# What the pictures show the look of: the report's templates and the viewer's static files.
TEMPLATES = ("localbench/report/templates", "localbench/viewer/static")


def templates_hash() -> str:
    """One hash over every file of TEMPLATES (path and content), in a stable order."""
    h = hashlib.sha256()
    for d in TEMPLATES:
        for f in sorted((REPO / d).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(f.relative_to(REPO).as_posix().encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def given_run(run: Path) -> str:
    """What a given RUN_DIR was: its name, and the benchmark, agent and time its spec.yaml records."""
    import yaml

    from localbench.runlog import RunDir

    doc = yaml.safe_load(RunDir(run).spec_file.read_text()) or {}
    spec = doc.get("spec", {})
    return (f"given: {run.name} ({spec.get('benchmark')}, scenarios {spec.get('scenarios')}, "
            f"agent {spec.get('models', {}).get('agent')}, created {doc.get('created')})")


def main() -> None:
    if chromium_path() is None:
        sys.exit("needs Debian's chromium (apt-get install chromium) and playwright (make install)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 1:
            run = Path(sys.argv[1])
            subprocess.run([sys.executable, "-m", "localbench.cli", "report", str(run)], check=True)
        else:  # the embedded default, fresh: what `make run` shows a newcomer
            out = subprocess.run([sys.executable, "-m", "localbench.cli", "run", "--out", tmp, "--no-progress"],
                                 check=True, capture_output=True, text=True).stdout
            run = Path(next(x for x in out.splitlines() if x.startswith("run directory:")).split(":", 1)[1].strip())
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
    MANIFEST.write_text(json.dumps({"templates_sha256": templates_hash(), "templates": list(TEMPLATES),
                                    "run": "a fresh embedded default" if len(sys.argv) == 1 else given_run(run)},
                                   indent=2) + "\n")
    print(f"screenshots written to {OUT}")


if __name__ == "__main__":
    main()

"""Viewer scale: does the run viewer stay responsive on a big run?

Not a test. It writes a planted AgentSocialBench run of N simulations (default 5,000: the dyadic
scenarios of asb-mini planted by construction for N / 6 synthetic "models", each simulation
labelled with its planted truth), writes its viewer, and measures in headless Chromium (Debian's,
driven by Playwright) the two waits a user feels:

- first paint of the list: from navigation to the first rows on screen (the index of every
  simulation is loaded at once; only the first page of rows is drawn);
- opening one simulation: from the click to its labels and conversation on screen (its data
  file is loaded on demand).

Target: under 2 s each on a 2-core CPU. Each is timed `--repeats` times on a fresh page; the
median is printed.

    .venv/bin/python bench/viewer_scale.py                 # 5,000 simulations
    .venv/bin/python bench/viewer_scale.py --n 500 --keep /tmp/big   # smaller, keep the run
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from browser import CHROMIUM_ARGS, chromium_path  # noqa: E402


def planted_run(path: Path, n: int) -> int:
    """A planted run of about ``n`` simulations; returns how many it holds."""
    from localbench.benchmarks.asb.planting import PLANTABLE, write_planted_run
    from localbench.benchmarks.asb.loaders import load_scenarios

    per_model = len(load_scenarios("builtin", list(PLANTABLE)).scenarios)
    models = {f"m{k:04d}": (k % 10) / 10 for k in range(max(1, n // per_model))}
    write_planted_run(path, "builtin", models)
    return len(models) * per_model


def measure(index: Path, repeats: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    first, open_one = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            t0 = time.perf_counter()
            page.goto(index.resolve().as_uri(), wait_until="commit")
            page.wait_for_selector("#list tbody tr")
            first.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.locator("#list tbody tr a").nth(5).click()
            page.wait_for_selector("section.sim table.labels tbody tr")
            page.wait_for_selector("section.sim ol.conversation li")
            open_one.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    return first, open_one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="simulations (rounded to whole planted models)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="write the run here and keep it (default: a temp dir)")
    args = ap.parse_args()
    if chromium_path() is None:
        sys.exit("needs Debian's chromium (apt-get install chromium) and playwright (make install)")
    from localbench.viewer.build import write_viewer

    with tempfile.TemporaryDirectory() as tmp:
        run = (args.keep or Path(tmp)) / "planted-big"
        t0 = time.perf_counter()
        n = planted_run(run, args.n)
        t_run = time.perf_counter() - t0
        summary = write_viewer([run])
        size = sum(f.stat().st_size for f in (run / "view" / "data").rglob("*.js"))
        index_size = (run / "view" / "data" / "index.js").stat().st_size
        first, open_one = measure(summary.index, args.repeats)
    print(f"planted run: {n} simulations written in {t_run:.1f} s")
    print(f"viewer: {summary.simulations} list rows written in {summary.wall_s:.1f} s, {size / 1e6:.1f} MB of data "
          f"({index_size / 1e6:.2f} MB of it the index)")
    print(f"first paint of the list: median {statistics.median(first):.2f} s "
          f"(min {min(first):.2f}, max {max(first):.2f}; target < 2 s)")
    print(f"open one simulation:     median {statistics.median(open_one):.2f} s "
          f"(min {min(open_one):.2f}, max {max(open_one):.2f}; target < 2 s)")


if __name__ == "__main__":
    main()

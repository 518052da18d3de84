"""Write the run viewer: a static page over one or more runs, with each simulation's data on demand.

Layout of the output folder:

    index.html, app.js, style.css   the viewer (no build step, no network)
    data/index.js                   every simulation's list row (facets), the runs and their axes
    data/sims/<n>.js                one simulation's SimulationView, loaded when it is opened

Data files are scripts that call ``LB_INDEX(...)`` / ``LB_SIM(n, ...)``, so the page works from
file:// (where a browser refuses fetch) as well as over HTTP. Every simulation appears once per
judge that labelled its run (the run's own judge, a planted run's truth, each `judges rejudge`),
so two judges can be compared side by side. Untrusted text (scenarios, model output, evidence) is
only ever inserted by the page as text, never as markup.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.runlog import RunFiles, RunPaths, by_simulation
from localbench.rejudge import LoadedRun, run_judgments
from localbench.viewdata import SimulationView

STATIC = Path(__file__).parent / "static"


@dataclass
class ViewerSummary:
    out: Path
    runs: int
    simulations: int  # list rows (a simulation under each of its judges)
    wall_s: float

    @property
    def index(self) -> Path:
        return self.out / RunFiles.VIEW_PAGE

    def line(self) -> str:
        return f"viewer: {self.simulations} simulations of {self.runs} run(s) → {self.index} ({self.wall_s:.1f} s)"


def _js(call: str, *args: Any) -> str:
    """A data script: ``call(args...)``, JSON that cannot close its <script> (no '</')."""
    body = ", ".join(json.dumps(a, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/") for a in args)
    return f"{call}({body});\n"


def views_of(run_dir: str | Path, run: LoadedRun | None = None) -> tuple[LoadedRun, list[SimulationView]]:
    """Every simulation of a run as the viewer shows it, once per judge that labelled the run;
    ``run``: the run as the command read it already."""
    run = run or LoadedRun.read(run_dir)
    bm = run.benchmark
    sources = run_judgments(run) or [None]
    out = []
    for src in sources:
        by_sim = by_simulation(src.records if src is not None else [])
        for t in sorted(run.transcripts, key=lambda t: t.key):
            scenario = run.scenarios.get(t.scenario)
            if scenario is None:
                continue  # the scenario is gone from the source: nothing to show it against
            v = bm.view_simulation(t, by_sim.get(t.key, []), scenario)
            v.run, v.judge = run.spec.resolved_run_id, (src.judge if src is not None else "")
            out.append(v)
    return run, out


def default_out(run_dirs: list[Path]) -> Path:
    """A single run's viewer lives in it (RUN/view); several runs need --out."""
    if len(run_dirs) == 1:
        return RunPaths(run_dirs[0]).view_dir
    raise UserError("several runs: say where their viewer goes with --out DIR")


def write_viewer(run_dirs: list[str | Path], out: str | Path | None = None,
                 read: dict[Path, LoadedRun] | None = None) -> ViewerSummary:
    """Write the viewer of these runs into ``out`` (default RUN/view for one run); ``read``: runs
    the command has read already, by directory."""
    t0 = time.monotonic()
    dirs = [Path(d) for d in run_dirs]
    for d in dirs:
        if not RunPaths(d).transcripts_path.is_file():
            raise UserError(f"{d}: no {RunFiles.TRANSCRIPTS} (is it a run directory? `localbench simulate` writes it)")
    dest = Path(out) if out is not None else default_out(dirs)
    sims = dest / "data" / "sims"
    if sims.exists():
        shutil.rmtree(sims)  # a rerun rewrites every simulation: no stale one survives
    sims.mkdir(parents=True)
    runs, rows, n = [], [], 0
    for d in dirs:
        run, views = views_of(d, (read or {}).get(d))
        design = run.benchmark.design
        report = RunPaths(d).report_html
        runs.append({"id": run.spec.resolved_run_id, "path": str(d), "benchmark": design.name, "title": design.title,
                     "report": os.path.relpath(report, dest) if report.exists() else None,
                     "condition_label": design.condition.label, "category_label": design.category.label,
                     "conditions": design.condition.values, "categories": list(design.categories),
                     "own_judge": views[0].judge if views else ""})
        cuts = {t.key: t.n_context_cuts > 0 or t.termination == "context_exhausted" for t in run.transcripts}
        for v in views:
            rows.append({"n": n, **v.facets(context_cut=cuts.get(v.key, False))})
            (sims / f"{n}.js").write_text(_js("LB_SIM", n, v.model_dump(mode="json")), encoding="utf-8")
            n += 1
    write_atomic(dest / "data" / "index.js", _js("LB_INDEX", {"runs": runs, "rows": rows}))
    for f in (RunFiles.VIEW_PAGE, "app.js", "style.css"):
        shutil.copyfile(STATIC / f, dest / f)
    return ViewerSummary(dest, len(dirs), n, time.monotonic() - t0)


def refresh_run_viewer(run_dir: str | Path, run: LoadedRun | None = None) -> str:
    """Rewrite RUN/view after a report (its table cells link there); one line saying what happened.
    A run whose scenarios cannot be loaded here (a report re-rendered on another machine) keeps its
    report: the line says why the viewer was not written. ``run``: as the command read it already."""
    try:
        return write_viewer([Path(run_dir)], read={Path(run_dir): run} if run is not None else None).line()
    except UserError as e:
        return f"viewer not written: {e}"


def open_in_browser(index: Path) -> bool:
    """Open the viewer where a browser is available; False when none is."""
    import webbrowser

    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    return bool(browser.open(index.resolve().as_uri()))

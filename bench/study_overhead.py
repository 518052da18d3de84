"""A study's per-model overhead on CPU: engine start and stop, and the judge's load, as a share of
the study's time (a benchmark, not a test; issue 44).

Runs a fresh copy of a study file (default: examples/study-cpu.yaml) in a temporary folder with
``localbench.study.run``, timing every engine the study opens (``serving.session.open_backend``) and
closes (each backend's ``aclose``). "Overhead" is the time in those calls: what running models one
after another costs beyond the simulations, judging and scoring themselves. On a shared machine
compare the shares, not the seconds.

    .venv/bin/python bench/study_overhead.py
    .venv/bin/python bench/study_overhead.py --study examples/study-cpu.yaml --json out.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "examples" / "study-cpu.yaml"))
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()

    from localbench.serving import session
    from localbench.study.run import run_study
    from localbench.study.spec import read_study

    opens: list[tuple[str, float]] = []
    closes: list[tuple[str, float]] = []
    real_open = session.open_backend

    def timed_open(preset, engine, **options):
        t0 = time.monotonic()
        backend = real_open(preset, engine, **options)
        opens.append((preset.name, time.monotonic() - t0))
        real_close = backend.aclose

        async def timed_close():
            t1 = time.monotonic()
            await real_close()
            closes.append((preset.name, time.monotonic() - t1))

        backend.aclose = timed_close
        return backend

    session.open_backend = timed_open
    with tempfile.TemporaryDirectory() as tmp:
        study_file = Path(tmp) / Path(args.study).name
        shutil.copy(args.study, study_file)
        t0 = time.monotonic()
        runs, times = run_study(read_study(study_file))
        wall = time.monotonic() - t0
    overhead = sum(s for _, s in opens) + sum(s for _, s in closes)
    out = {"study": Path(args.study).name, "runs": len(runs), "wall_s": round(wall, 1),
           "engine_opens": len(opens), "open_s": round(sum(s for _, s in opens), 1),
           "close_s": round(sum(s for _, s in closes), 1), "judge_loads": times.judge_loads,
           "judge_load_s": {k: round(v, 1) for k, v in times.judge_load_s.items()},
           "overhead_share": round(overhead / wall, 3),
           "per_open": [(name, round(s, 2)) for name, s in opens]}
    print(f"{out['study']}: {out['runs']} runs in {out['wall_s']} s; {out['engine_opens']} engines opened "
          f"({out['open_s']} s) and closed ({out['close_s']} s), of which {out['judge_loads']} judge load(s) "
          f"{out['judge_load_s']}: overhead {100 * out['overhead_share']:.1f}% of the study's time")
    print("per engine opened (preset, s):", out["per_open"])
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

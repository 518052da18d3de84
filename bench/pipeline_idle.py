"""`localbench run` staged vs pipelined judging: simulate and judge times and the engine's idle share
(a benchmark, not a test; issue #33 item 7).

Staged: every simulation, then every judge call. Pipelined (what `run` does when agent and judge
are one model on one engine): each simulation's judge calls enter the engine as it ends. The
engine's occupancy is sampled every 50 ms from the clients' in-flight counters: ``idle`` is the
share of the time between the first request and the last answer with no request in the engine,
``low`` the share with at most ``--low`` requests in it (a stage's tail). On a shared machine
compare the two arms' ratios and step counts, not wall times across machines.

    .venv/bin/python bench/pipeline_idle.py                      # the embedded default (SmolLM2-135M)
    .venv/bin/python bench/pipeline_idle.py --model tiny-random --limit 1 --max-rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class Occupancy:
    """Samples the summed in-flight requests of every client opened while it runs."""

    def __init__(self, every_s: float = 0.05):
        from localbench.serving import client as client_mod

        self.clients: list = []
        self.samples: list[tuple[float, int]] = []
        self.every_s = every_s
        self._stop = threading.Event()
        cls = client_mod.StructuredClient
        original = cls.__init__
        clients = self.clients

        def init(self_, *a, **kw):
            original(self_, *a, **kw)
            clients.append(self_)

        self._restore = lambda: setattr(cls, "__init__", original)
        cls.__init__ = init
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), sum(c.stats.in_flight for c in list(self.clients))))
            time.sleep(self.every_s)

    def __enter__(self) -> "Occupancy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._restore()

    def shares(self, low: int) -> dict[str, float]:
        busy = [i for i, (_, n) in enumerate(self.samples) if n > 0]
        if not busy:
            return {"idle": 1.0, "low": 1.0, "active_s": 0.0}
        window = [n for _, n in self.samples[busy[0]: busy[-1] + 1]]
        return {"idle": round(sum(n == 0 for n in window) / len(window), 3),
                "low": round(sum(n <= low for n in window) / len(window), 3),
                "active_s": round(self.samples[busy[-1]][0] - self.samples[busy[0]][0], 1)}


def one_arm(mode: str, args, out: Path) -> dict:
    import contextlib
    import io

    from localbench.commands.spec_flags import spec_from_flags
    from localbench.pipeline import run_all

    os.environ["LOCALBENCH_STAGED_JUDGING"] = "1" if mode == "staged" else "0"
    flags = {"agent": args.model, "out": str(out), "no_cache": True, "limit": args.limit}
    if args.max_rounds:
        flags["max_rounds"] = args.max_rounds
    spec = spec_from_flags(None, embedded=True, **flags)
    log = io.StringIO()
    t0 = time.monotonic()
    with Occupancy() as occ, contextlib.redirect_stderr(log):
        run_all(spec, progress=False)
    wall = time.monotonic() - t0
    text = log.getvalue()
    sim = re.search(r"simulations: .*\(([\d.]+) s\)", text)
    judge = re.search(r"judging done: (\d+) calls made.*\(([\d.]+) s\)", text)
    return {"mode": mode, "model": args.model, "wall_s": round(wall, 1),
            "simulate_s": float(sim.group(1)) if sim else None,
            "judge_s": float(judge.group(2)) if judge else None,
            "judge_calls": int(judge.group(1)) if judge else None, **occ.shares(args.low)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--limit", type=int, default=1)
    p.add_argument("--max-rounds", type=int, default=None)
    p.add_argument("--low", type=int, default=3, help="a request count at or below which the engine is in a tail")
    p.add_argument("--arms", default="staged,pipelined")
    p.add_argument("--keep", type=Path, default=None,
                   help="write each arm's run directory under this folder and keep it (default: a temporary one)")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d:
        for mode in args.arms.split(","):
            print(json.dumps(one_arm(mode, args, (args.keep or Path(d)) / mode)), flush=True)


if __name__ == "__main__":
    main()

"""The GPU rehearsal (scripts/gpu-rehearsal.sh): run the benchmarks' real pipeline on a preset and
write one table: output tokens/s, requests in flight, GPU memory, simulation and judge wall time,
and efficiency against vLLM's own throughput benchmark on prompts of the same lengths.

On a GPU it runs the weightless presets (serving/rehearsal-*.yaml: real shapes, random weights);
on CPU the tests run it at tiny scale (tiny-random, one scenario, no vLLM baseline) so that it is
known to work before a GPU is there. Settings come from the environment (see gpu-rehearsal.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

DEFAULTS = {"asb": {"conditions": "L0,L1,L2"}, "agentleak": {}, "sopri": {}}


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


class GpuMemory:
    """Peak memory used on the GPUs (nvidia-smi, once a second) while a stage runs; None on CPU."""

    def __init__(self) -> None:
        self.peak_mib: int | None = None
        self._stop = threading.Event()
        self._smi = shutil.which("nvidia-smi")

    def __enter__(self) -> "GpuMemory":
        if self._smi:
            threading.Thread(target=self._poll, daemon=True).start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            r = subprocess.run([self._smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                used = sum(int(x) for x in r.stdout.split() if x.strip().isdigit())
                self.peak_mib = max(self.peak_mib or 0, used)
            self._stop.wait(1.0)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


def _tokens(obj, acc: list[tuple[int, int]]) -> None:
    """Every call's (tokens in, tokens out) in a record, wherever it sits."""
    if isinstance(obj, dict):
        if "tokens_in" in obj and "tokens_out" in obj:
            acc.append((int(obj["tokens_in"] or 0), int(obj["tokens_out"] or 0)))
            return
        for v in obj.values():
            _tokens(v, acc)
    elif isinstance(obj, list):
        for v in obj:
            _tokens(v, acc)


def calls_of(path: Path) -> list[tuple[int, int]]:
    acc: list[tuple[int, int]] = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                _tokens(json.loads(line), acc)
    return acc


def timed(cmd: list[str], log: Path) -> tuple[float, int | None]:
    with GpuMemory() as mem, log.open("a") as f:
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
        wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"rehearsal: `{' '.join(cmd)}` failed with exit status {r.returncode}; see {log}")
    return wall, mem.peak_mib


def vllm_baseline(preset: str, calls: list[tuple[int, int]], log: Path) -> float | None:
    """Output tokens/s of `vllm bench throughput` on random prompts with this run's mean prompt and
    reply lengths and call count (vLLM's own offline benchmark: the ceiling for these shapes)."""
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import materialize

    p = load_preset(preset)
    n_in = max(1, int(statistics.mean(c[0] for c in calls)))
    n_out = max(1, int(statistics.mean(c[1] for c in calls)))
    out = log.with_suffix(".baseline.json")
    cmd = ["vllm", "bench", "throughput", "--model", materialize(p), "--dataset-name", "random",
           "--random-input-len", str(n_in), "--random-output-len", str(n_out), "--num-prompts", str(len(calls)),
           "--max-model-len", str(p.max_model_len), "--tensor-parallel-size", str(p.tensor_parallel_size),
           "--output-json", str(out), *(["--load-format", "dummy"] if p.engine_args.get("load_format") == "dummy" else [])]
    with log.open("a") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0 or not out.exists():
        return None
    res = json.loads(out.read_text())
    total_s = res.get("elapsed_time") or 0
    return n_out * len(calls) / total_s if total_s else None


def main() -> int:
    preset = env("LB_REHEARSAL_PRESET", "rehearsal-llama-3.1-8b")
    engine = env("LB_REHEARSAL_ENGINE", "vllm")
    out = Path(env("LB_REHEARSAL_OUT", "runs/gpu-rehearsal")).resolve()
    benchmarks = env("LB_REHEARSAL_BENCHMARKS", "asb agentleak sopri").split()
    limit = env("LB_REHEARSAL_LIMIT")
    concurrency = env("LB_REHEARSAL_CONCURRENCY")
    baseline = env("LB_REHEARSAL_BASELINE", "1") == "1"
    out.mkdir(parents=True, exist_ok=True)
    lb = [sys.executable, "-m", "localbench.cli"]
    rows = []
    for bench in benchmarks:
        run_id = f"{bench}-{preset}"
        log = out / f"{run_id}.log"
        log.unlink(missing_ok=True)
        shutil.rmtree(out / run_id, ignore_errors=True)
        cmd = [*lb, "simulate", "--benchmark", bench, "--agent", preset, "--engine", engine, "--out", str(out),
               "--run-id", run_id, "--no-progress"]
        scenarios = env(f"LB_REHEARSAL_{bench.upper()}_SCENARIOS")
        conditions = env(f"LB_REHEARSAL_{bench.upper()}_CONDITIONS", DEFAULTS[bench].get("conditions", ""))
        cmd += ["--scenarios", scenarios] if scenarios else []
        cmd += ["--conditions", conditions] if conditions else []
        cmd += ["--limit", limit] if limit else []
        cmd += ["--concurrency", concurrency] if concurrency else []
        cmd += env("LB_REHEARSAL_SIMULATE_ARGS").split()  # the tests' tiny scale: --categories, --max-rounds
        sim_s, sim_mem = timed(cmd, log)
        judge_s, judge_mem = timed([*lb, "judge", str(out / run_id), "--engine", engine], log)
        sims = calls_of(out / run_id / "transcripts.jsonl")
        judged = calls_of(out / run_id / "judgments.jsonl")
        tok_s = sum(c[1] for c in sims) / sim_s if sim_s else 0.0
        ceiling = vllm_baseline(preset, sims, log) if baseline and sims else None
        spec = out / run_id / "spec.yaml"
        jf = out / run_id / "judgments.jsonl"
        n_judgments = sum(1 for x in jf.read_text().splitlines() if x.strip()) if jf.exists() else 0
        rows.append({"benchmark": bench, "preset": preset, "engine": engine, "calls": len(sims),
                     "judgments": n_judgments, "judge_calls": len(judged), "tokens_out_per_s": round(tok_s, 1),
                     "in_flight_limit": int(concurrency) if concurrency else 64,
                     "gpu_memory_mib": max([m for m in (sim_mem, judge_mem) if m is not None], default=None),
                     "simulate_s": round(sim_s, 1), "judge_s": round(judge_s, 1),
                     "vllm_bench_tokens_out_per_s": round(ceiling, 1) if ceiling else None,
                     "efficiency": round(tok_s / ceiling, 2) if ceiling else None, "spec": str(spec)})
    (out / "rehearsal.json").write_text(json.dumps(rows, indent=2))
    head = ["benchmark", "preset", "engine", "calls", "judgments", "judge_calls", "tokens_out_per_s", "in_flight_limit",
            "gpu_memory_mib", "simulate_s", "judge_s", "vllm_bench_tokens_out_per_s", "efficiency"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join("n/a" if r[k] is None else str(r[k]) for k in head) + " |" for r in rows]
    (out / "rehearsal.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

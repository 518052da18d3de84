"""The GPU rehearsal (scripts/gpu-rehearsal.sh): run the benchmarks' real pipeline on a preset and
write one table: output tokens/s, requests in flight, GPU memory, simulation and judge wall time,
and efficiency against vLLM's own throughput benchmark on prompts of the same lengths.

On a GPU it runs the weightless presets (serving/rehearsal-*.yaml: real shapes, random weights);
on CPU the tests run it at tiny scale (tiny-random, one scenario, no vLLM baseline) so that it is
known to work before a GPU is there. Settings come from the environment (see gpu-rehearsal.sh).

What it reports it reads from the run, not from its own settings: the in-flight limit the run
recorded (spec.yaml), tokens/s over the simulations alone (the stage's own timing, engine start-up
left out), the tokenizer's and the model's vocabulary sizes (grammar cost grows with the first).
Each row is written as its benchmark ends, so a later failure keeps what ran.
"""

from __future__ import annotations

import json
import os
import re
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


def vllm_executable() -> Path:
    """vLLM's command in this Python's environment (beside ``sys.executable``): the vLLM the run
    imports, not whichever one PATH finds first (or none, in a venv that was never activated)."""
    return Path(sys.executable).parent / "vllm"


SIM_SUMMARY = re.compile(r"\d+ simulations: .*endings: .*\((\d+(?:\.\d+)?) s\)")


def simulating_s(log_text: str) -> float | None:
    """Seconds the simulations themselves took, first start to last end, engine start-up excluded:
    the simulate stage's summary line (``SimulationSummary.line``); None if the log has none."""
    found = SIM_SUMMARY.findall(log_text)
    return float(found[-1]) if found else None


def in_flight_limits(run_dir: Path) -> tuple[int | None, int | None]:
    """The simulations and judge calls the run let run at once, as it recorded them in spec.yaml."""
    from localbench.runlog.rundir import RunDir

    doc = RunDir(run_dir).read_spec()
    sim = ((doc.get("simulation") or {}).get("concurrency") or {}).get("simulations")
    judge = (doc.get("judge") or {}).get("concurrency")
    return sim, judge


def vocabularies(preset: str) -> dict[str, object]:
    """The tokenizer the preset runs with and the model's vocabulary: xgrammar's mask costs grow with
    the tokenizer's size, so a rehearsal on a smaller tokenizer than the real model's says so."""
    from transformers import AutoConfig, AutoTokenizer

    from localbench.serving.presets import load_preset
    from localbench.serving.weights import materialize

    p = load_preset(preset)
    where = materialize(p)
    src = p.source
    return {"tokenizer": src.package or src.base or src.repo or src.path or src.kind,
            "tokenizer_vocab": len(AutoTokenizer.from_pretrained(where)),
            "model_vocab": AutoConfig.from_pretrained(where).vocab_size}


def vllm_baseline(preset: str, calls: list[tuple[int, int]], log: Path) -> float | None:
    """Output tokens/s of `vllm bench throughput` on random prompts with this run's mean prompt and
    reply lengths and call count (vLLM's own offline benchmark: the ceiling for these shapes)."""
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import materialize

    p = load_preset(preset)
    n_in = max(1, int(statistics.mean(c[0] for c in calls)))
    n_out = max(1, int(statistics.mean(c[1] for c in calls)))
    out = log.with_suffix(".baseline.json")
    vllm = vllm_executable()
    if not vllm.exists():
        with log.open("a") as f:
            f.write(f"rehearsal: no vLLM baseline: {vllm} does not exist (vLLM is not in this environment)\n")
        return None
    cmd = [str(vllm), "bench", "throughput", "--model", materialize(p), "--dataset-name", "random",
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


HEAD = ["benchmark", "preset", "engine", "calls", "judgments", "judge_calls", "tokens_out_per_s", "in_flight_limit",
        "judge_in_flight_limit", "gpu_memory_mib", "simulating_s", "simulate_s", "judge_s", "tokenizer_vocab",
        "model_vocab", "vllm_bench_tokens_out_per_s", "efficiency", "error"]


def write_tables(out: Path, rows: list[dict]) -> str:
    """rehearsal.json and rehearsal.md as they stand; called after every row."""
    from localbench.files import write_atomic

    write_atomic(out / "rehearsal.json", json.dumps(rows, indent=2))
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join("n/a" if r.get(k) is None else str(r[k]) for k in HEAD) + " |" for r in rows]
    table = "\n".join(lines) + "\n"
    write_atomic(out / "rehearsal.md", table)
    return table


def rehearse(bench: str, preset: str, engine: str, out: Path, baseline: bool) -> dict:
    """One benchmark's simulate and judge stages, and the row that says how they ran."""
    lb = [sys.executable, "-m", "localbench.cli"]
    limit = env("LB_REHEARSAL_LIMIT")
    concurrency = env("LB_REHEARSAL_CONCURRENCY")
    run_id = f"{bench}-{preset}"
    log = out / f"{run_id}.log"
    log.unlink(missing_ok=True)
    shutil.rmtree(out / run_id, ignore_errors=True)
    cmd = [*lb, "simulate", "--benchmark", bench, "--agent", preset, "--engine", engine, "--out", str(out),
           "--run-id", run_id, "--no-progress"]
    scenarios = env(f"LB_REHEARSAL_{bench.upper()}_SCENARIOS")
    conditions = env(f"LB_REHEARSAL_{bench.upper()}_CONDITIONS", DEFAULTS.get(bench, {}).get("conditions", ""))
    cmd += ["--scenarios", scenarios] if scenarios else []
    cmd += ["--conditions", conditions] if conditions else []
    cmd += ["--limit", limit] if limit else []
    cmd += ["--concurrency", concurrency] if concurrency else []
    cmd += env("LB_REHEARSAL_SIMULATE_ARGS").split()  # the tests' tiny scale: --categories, --max-rounds
    sim_s, sim_mem = timed(cmd, log)
    active_s = simulating_s(log.read_text(errors="replace"))
    judge_s, judge_mem = timed([*lb, "judge", str(out / run_id), "--engine", engine], log)
    sims = calls_of(out / run_id / "transcripts.jsonl")
    judged = calls_of(out / run_id / "judgments.jsonl")
    tokens_out = sum(c[1] for c in sims)
    tok_s = tokens_out / active_s if active_s else None
    ceiling = vllm_baseline(preset, sims, log) if baseline and sims else None
    jf = out / run_id / "judgments.jsonl"
    n_judgments = sum(1 for x in jf.read_text().splitlines() if x.strip()) if jf.exists() else 0
    sim_limit, judge_limit = in_flight_limits(out / run_id)
    return {"benchmark": bench, "preset": preset, "engine": engine, "calls": len(sims), "judgments": n_judgments,
            "judge_calls": len(judged), "tokens_out": tokens_out,
            "tokens_out_per_s": round(tok_s, 1) if tok_s is not None else None,
            "in_flight_limit": sim_limit, "judge_in_flight_limit": judge_limit,
            "gpu_memory_mib": max([m for m in (sim_mem, judge_mem) if m is not None], default=None),
            "simulating_s": active_s, "simulate_s": round(sim_s, 1), "judge_s": round(judge_s, 1),
            **vocabularies(preset),
            "vllm_bench_tokens_out_per_s": round(ceiling, 1) if ceiling else None,
            "efficiency": round(tok_s / ceiling, 2) if ceiling and tok_s else None,
            "spec": str(out / run_id / "spec.yaml"), "log": str(log), "error": None}


def main() -> int:
    preset = env("LB_REHEARSAL_PRESET", "rehearsal-llama-3.1-8b")
    engine = env("LB_REHEARSAL_ENGINE", "vllm")
    out = Path(env("LB_REHEARSAL_OUT", "runs/gpu-rehearsal")).resolve()
    benchmarks = env("LB_REHEARSAL_BENCHMARKS", "asb agentleak sopri").split()
    baseline = env("LB_REHEARSAL_BASELINE", "1") == "1"
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    table = write_tables(out, rows)
    for bench in benchmarks:
        try:
            row = rehearse(bench, preset, engine, out, baseline)
        except (SystemExit, Exception) as e:  # noqa: BLE001 - one benchmark's failure must not lose the others' rows
            row = {"benchmark": bench, "preset": preset, "engine": engine, "log": str(out / f"{bench}-{preset}.log"),
                   "error": str(e) or type(e).__name__}
        rows.append(row)
        table = write_tables(out, rows)
    print(table, end="")
    failed = [r["benchmark"] for r in rows if r.get("error")]
    if failed:
        print(f"rehearsal: {', '.join(failed)} failed; see the error column and each log", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

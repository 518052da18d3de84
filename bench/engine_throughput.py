"""Engine throughput: generated tokens/s at batch 1, 8 and 32, grammar-constrained vs free text.

Not a test. It answers two questions for each engine and model:

- structured-output overhead: how much slower JSON-schema decoding is than free text at the
  same batch size (target: at most 10%);
- batching gain: aggregate tokens/s at batch 32 over batch 1 (target: at least 8x for the hf
  engine with SmolLM2-135M on CPU).

"Batch B" means B requests in flight at all times (each of B slots sends its next request as soon
as the last returns), the way the simulation scheduler drives an engine. Every request asks for a
long answer and the JSON schema holds a free-text field with a ``minLength`` longer than
``max_tokens`` allows, so both modes run to the same ``max_tokens`` (the JSON replies are cut,
which does not matter for speed); the table still counts the tokens actually generated (and how
many replies hit the limit), so an early stop cannot flatter a mode.

Engines are opened through ``localbench.serving.engines.open_backend``; one that cannot be
imported or started (e.g. no vLLM here) is skipped with a message.

``--batch-invariant both`` also measures each engine the way ``serving.batch_invariant: true``
runs it (docs/simulation.md, "Batch invariance"): hf with one row per forward pass and no prefix
reuse; vLLM with VLLM_BATCH_INVARIANT=1 where its kernels run (not the CPU build: skipped with the
reason). Its rows are labelled ``hf+bi`` / ``vllm+bi``; the last table gives the cost.

    .venv/bin/python bench/engine_throughput.py                      # hf on tiny-random and smollm2-135m
    .venv/bin/python bench/engine_throughput.py --engines hf,vllm --json results.json
    .venv/bin/python bench/engine_throughput.py --presets smollm2-135m --batch-invariant both
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TOPICS = ["a lighthouse keeper", "a lost umbrella", "the first day of school", "a river in winter",
          "a chess tournament", "a bakery at dawn", "a broken telescope", "a long train journey"]

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "genre": {"enum": ["fable", "drama", "comedy", "mystery"]},
        "words": {"type": "integer", "minimum": 1, "maximum": 5000},
        # minLength keeps a reply going to max_tokens, as free text does: equal work in both modes
        "story": {"type": "string", "minLength": 1000, "maxLength": 4000},
    },
    "required": ["genre", "words", "story"],
    "additionalProperties": False,
}


@dataclass
class Measurement:
    engine: str
    preset: str
    mode: str  # "free" or "json"
    batch: int
    requests: int
    tokens: int
    seconds: float
    at_limit: int  # replies that stopped at max_tokens
    decode_tokens_per_s: float | None = None  # engines that time their own steps (hf): decoding alone
    prompt_share: float | None = None  # fraction of the engine's time spent processing prompts

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def _requests(n: int, mode: str, max_tokens: int, temperature: float, offset: int = 0) -> list[Any]:
    from localbench.serving.output import OutputSpec
    from localbench.serving.types import GenerationRequest

    spec = OutputSpec.from_schema(ANSWER_SCHEMA, name="story") if mode == "json" else None
    out = []
    for i in range(offset, offset + n):
        topic = TOPICS[i % len(TOPICS)]
        content = (f"Write a long, detailed story about {topic}, at least 300 words. "
                   "Answer as JSON with the fields genre, words and story.")
        out.append(GenerationRequest(messages=[{"role": "user", "content": content}], output=spec,
                                     max_tokens=max_tokens, temperature=temperature, seed=i, tag=f"bench-{i}"))
    return out


async def _measure(backend: Any, preset: str, mode: str, batch: int, per_slot: int, max_tokens: int,
                   temperature: float) -> Measurement:
    """``batch`` requests in flight at all times, ``batch * per_slot`` requests in all.

    Each slot sends its next request as soon as its last one returns, so an engine that lets new
    requests join a running batch keeps it full; one that cannot shows the cost of waiting.
    """
    reqs = _requests(batch * per_slot, mode, max_tokens, temperature)
    done: list[Any] = []

    async def slot(k: int) -> None:
        for q in reqs[k::batch]:
            done.append(await backend.complete(q))

    before = _engine_stats(backend)
    t0 = time.perf_counter()
    await asyncio.gather(*(slot(k) for k in range(batch)))
    seconds = time.perf_counter() - t0
    m = Measurement(backend.engine, preset, mode, batch, len(done), sum(c.tokens_out for c in done), seconds,
                    sum(c.finish_reason == "length" for c in done))
    after = _engine_stats(backend)
    if before and after:
        decode_s = after["decode_s"] - before["decode_s"]
        prefill_s = after["prefill_s"] - before["prefill_s"]
        generated = after["generated"] - before["generated"]
        m.decode_tokens_per_s = generated / decode_s if decode_s > 0 else None
        m.prompt_share = prefill_s / (prefill_s + decode_s) if prefill_s + decode_s > 0 else None
    return m


def _engine_stats(backend: Any) -> dict[str, float] | None:
    stats = getattr(backend, "stats", None)
    return stats.as_dict() if hasattr(stats, "as_dict") else None


async def bench_engine(
    engine: str, preset: str, batches: list[int], max_tokens: int, temperature: float, per_slot: int,
    repeats: int, options: dict[str, Any], label: str | None = None,
) -> tuple[list[Measurement], dict[str, Any]] | None:
    from localbench.serving.engines import open_backend

    t0 = time.perf_counter()
    try:
        backend = open_backend(preset, engine, **options)
    except Exception as e:  # noqa: BLE001 - a missing engine is reported and skipped, not fatal
        print(f"[skip] {label or engine} on {preset}: cannot open the engine: {type(e).__name__}: {e}", file=sys.stderr)
        return None
    load_s = time.perf_counter() - t0
    facts = {"load_s": round(load_s, 1), **backend.describe()}
    print(f"[open] {engine} on {preset} in {load_s:.1f} s: {json.dumps(facts, default=str)}", file=sys.stderr)
    results: list[Measurement] = []
    try:
        for mode in ("free", "json"):  # warm-up: kernels, grammar compile, allocator
            await _measure(backend, preset, mode, min(4, max(batches)), 1, 8, temperature)
        for batch in batches:
            for mode in ("free", "json"):
                tries = [await _measure(backend, preset, mode, batch, per_slot, max_tokens, temperature)
                         for _ in range(repeats)]
                m = max(tries, key=lambda t: t.tokens_per_s)  # best of N: other load only slows a run down
                m.engine = label or m.engine
                results.append(m)
                print(f"  {engine:5} {preset:14} {mode:4} batch {batch:3}: {m.tokens:6d} tok in {m.seconds:7.2f} s"
                      f" = {m.tokens_per_s:8.1f} tok/s ({m.at_limit}/{m.requests} at max_tokens)", file=sys.stderr)
        sizes = getattr(backend, "batch_sizes", None)
        if sizes:
            facts["largest_batch_run"] = max(sizes)
    finally:
        await backend.aclose()
    return results, facts


def table(results: list[Measurement]) -> str:
    """Markdown: one row per engine x preset x batch, free vs json side by side, with the ratios."""
    key = {(m.engine, m.preset, m.mode, m.batch): m for m in results}
    lines = ["| engine | model | batch | free text tok/s | JSON schema tok/s | structured overhead "
             "| decoding only: free / JSON tok/s | prompt share of engine time | tokens free / json (at max_tokens) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for (engine, preset, mode, batch), free in key.items():
        if mode != "free" or (engine, preset, "json", batch) not in key:
            continue
        js = key[(engine, preset, "json", batch)]
        overhead = 1 - js.tokens_per_s / free.tokens_per_s if free.tokens_per_s else float("nan")
        lines.append(f"| {engine} | {preset} | {batch} | {free.tokens_per_s:.1f} | {js.tokens_per_s:.1f} | "
                     f"{overhead:+.1%} | {_num(free.decode_tokens_per_s)} / {_num(js.decode_tokens_per_s)} | "
                     f"{_pct(free.prompt_share)} / {_pct(js.prompt_share)} | "
                     f"{free.tokens} ({free.at_limit}/{free.requests}) / {js.tokens} ({js.at_limit}/{js.requests}) |")
    bigger = sorted({m.batch for m in results if m.batch > 1}, reverse=True)
    lines += ["", "| engine | model | mode | " + " | ".join(f"batch {b} / batch 1" for b in bigger)
              + " | decoding only: " + " | ".join(f"batch {b} / batch 1" for b in bigger) + " |",
              "|---|---|---|" + "---:|" * (2 * len(bigger))]
    for (engine, preset, mode, batch), one in key.items():
        if batch != 1:
            continue
        gains, decode_gains = [], []
        for b in bigger:
            other = key.get((engine, preset, mode, b))
            gains.append(_ratio(other.tokens_per_s if other else None, one.tokens_per_s))
            decode_gains.append(_ratio(other.decode_tokens_per_s if other else None, one.decode_tokens_per_s))
        lines.append(f"| {engine} | {preset} | {mode} | " + " | ".join(gains + decode_gains) + " |")
    return "\n".join(lines)


def invariance_table(results: list[Measurement]) -> str:
    """Markdown: what serving.batch_invariant costs, engine by engine (X+bi over X, same batch)."""
    key = {(m.engine, m.preset, m.mode, m.batch): m for m in results}
    lines = ["| engine | model | mode | batch | default tok/s | batch-invariant tok/s | batch-invariant / default |",
             "|---|---|---|---:|---:|---:|---:|"]
    for (engine, preset, mode, batch), bi in key.items():
        if not engine.endswith("+bi") or (engine[:-3], preset, mode, batch) not in key:
            continue
        base = key[(engine[:-3], preset, mode, batch)]
        lines.append(f"| {engine[:-3]} | {preset} | {mode} | {batch} | {base.tokens_per_s:.1f} | {bi.tokens_per_s:.1f} | "
                     f"{_ratio(bi.tokens_per_s, base.tokens_per_s)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a and b else "n/a"


def _batch_invariant_arm(engine: str, options: dict[str, Any]) -> dict[str, Any] | str:
    """The options serving.batch_invariant gives ``engine``, or why it cannot run that way here."""
    if engine == "hf":
        return {**options, "max_batch_size": 1, "prefix_cache_gb": 0.0}
    if engine == "vllm":
        from localbench.serving.vllm_engine import batch_invariance_support

        ok, why = batch_invariance_support()
        return dict(options) if ok else why
    return "the openai engine's server decides (start it with VLLM_BATCH_INVARIANT=1)"


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{platform.system()} {cpu}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}, {gpu}"


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default="hf", help="comma-separated: hf, vllm, openai")
    ap.add_argument("--presets", default="tiny-random,smollm2-135m")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--per-slot", type=int, default=2,
                    help="requests per in-flight slot: a measurement at batch B runs B x this many requests")
    ap.add_argument("--repeats", type=int, default=2,
                    help="run each measurement this many times and keep the fastest (shared machines)")
    ap.add_argument("--grammar", default=None, help="hf grammar backend (xgrammar or outlines)")
    ap.add_argument("--dtype", default=None, help="hf weights dtype (default: the preset's), e.g. bfloat16")
    ap.add_argument("--batch-invariant", choices=("off", "on", "both"), default="off",
                    help="measure engines as serving.batch_invariant runs them: instead (on) or as well (both)")
    ap.add_argument("--json", dest="json_out", default=None, help="also write the raw measurements here")
    args = ap.parse_args(argv)

    batches = [int(b) for b in args.batches.split(",")]
    all_results: list[Measurement] = []
    facts: dict[str, Any] = {}
    for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
        options: dict[str, Any] = {}
        if engine == "hf":
            options["max_batch_size"] = max(batches)
            if args.grammar:
                options["grammar"] = args.grammar
            if args.dtype:
                options["dtype"] = args.dtype
        arms = [(engine, options)] if args.batch_invariant != "on" else []
        if args.batch_invariant != "off":
            bi = _batch_invariant_arm(engine, options)
            if isinstance(bi, str):
                print(f"[skip] {engine}+bi: {bi}", file=sys.stderr)
                facts[f"{engine}+bi"] = {"skipped": bi}
            else:
                arms.append((f"{engine}+bi", bi))
        for label, opts in arms:
            for preset in [p.strip() for p in args.presets.split(",") if p.strip()]:
                if label.endswith("+bi") and engine == "vllm":
                    os.environ["VLLM_BATCH_INVARIANT"] = "1"  # read as the engine starts
                got = await bench_engine(engine, preset, batches, args.max_tokens, args.temperature,
                                         args.per_slot, args.repeats, opts, label=label)
                os.environ.pop("VLLM_BATCH_INVARIANT", None)
                if got is not None:
                    all_results.extend(got[0])
                    facts[f"{label}/{preset}"] = got[1]

    print(f"\nMachine: {machine()}")
    print(f"Command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"max_tokens {args.max_tokens}, temperature {args.temperature}, {args.per_slot} requests per slot, "
          f"best of {args.repeats}\n")
    print(table(all_results))
    cost = invariance_table(all_results)
    if cost:
        print("\nWhat serving.batch_invariant costs:\n\n" + cost)
    for name, f in facts.items():
        if "skipped" in f:
            print(f"\n{name}: not measured: {f['skipped']}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"machine": machine(), "args": vars(args), "engines": facts,
                       "results": [asdict(m) | {"tokens_per_s": m.tokens_per_s} for m in all_results]},
                      f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

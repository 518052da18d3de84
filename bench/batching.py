"""How much does running simulations concurrently buy? Shared by every benchmark's batching bench.

One run on this machine with a real model on one engine (hf by default), no response cache:
  (a) sequential — the same N simulations one after another (concurrency 1);
  (b) concurrent — all N at once over one engine (concurrency N);
  (c) raw engine — every request (b) made, replayed straight to the engine all at once, with no
      simulation logic and no turn dependencies: the throughput ceiling for that request mix.
It prints generated tokens/s for each, speedup = (b)/(a) and efficiency = (b)/(c), and, for
the hf engine, where the time went (prompt vs decode, prompt tokens reused from the prefix
cache, rows per decode step). Each arm starts with an empty prefix cache.

The benchmark-specific scripts (asb_batching.py, agentleak_batching.py) only say which benchmark
and which spec; the arms go through the same shared simulate stage (``runtime.harness``) that
``localbench run`` uses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def parser(doc: str, *, conditions: str, max_rounds: str, max_tokens: int) -> argparse.ArgumentParser:
    """The options every batching bench takes (defaults per benchmark)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--n", type=int, default=16, help="simulations (scenario × condition)")
    p.add_argument("--conditions", default=conditions, help="comma list of the benchmark's conditions")
    p.add_argument("--limit", type=int, default=None, help="scenarios per category")
    p.add_argument("--max-rounds", default=max_rounds,
                   help="round limit for every category, or 'default' for the benchmark's own")
    p.add_argument("--max-tokens", type=int, default=max_tokens, help="per agent turn")
    p.add_argument("--engine", default="hf", help="hf or vllm (in-process; prefix caching on)")
    p.add_argument("--skip-sequential", action="store_true",
                   help="run only (b) and (c): efficiency without speedup (the sequential arm is the slow one)")
    return p


def make_spec(benchmark: str, args, concurrency: int, out: str, **extra):
    """The bench's RunSpec: builtin suite, no response cache, one round limit for every category."""
    from localbench.registry import design_of
    from localbench.spec import load_spec

    design = design_of(benchmark)
    rounds = {} if args.max_rounds == "default" else {c: int(args.max_rounds) for c in design.categories}
    return load_spec(None, benchmark=benchmark, scenarios="builtin", conditions=args.conditions.split(","),
                     limit=args.limit, out=out, run_id=f"c{concurrency}", no_cache=True,
                     max_tokens=args.max_tokens, max_rounds=rounds,
                     **{f"models.{design.primary_role}": args.model, "serving.engine": args.engine,
                        "serving.max_concurrency": concurrency}, **extra)


def _engine_stats(backend) -> dict:
    """The hf engine's own counters (prompt vs decode time, reused prompt tokens); {} elsewhere."""
    stats = getattr(backend, "stats", None)
    return stats.as_dict() if hasattr(stats, "as_dict") else {}


def _delta(after: dict, before: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after}


async def _simulate(spec, simulator, scenarios, clients, role: str):
    from localbench.runtime.harness import simulate_scenarios

    stats = clients.for_role(role).stats
    backend = clients.for_role(role).backend
    tok0, t0, e0 = stats.tokens_out, time.monotonic(), _engine_stats(backend)
    summary = await simulate_scenarios(spec, simulator, scenarios, clients, progress=False)
    wall = time.monotonic() - t0 - summary.prepare_s  # the simulations; their preparation was done in the warm-up
    return stats.tokens_out - tok0, wall, summary, _delta(_engine_stats(backend), e0)


async def run(benchmark: str, args, spec_for: Callable[[int, str], object]) -> dict:
    """The three arms; prints the table and returns {"speedup", "efficiency"}.

    ``spec_for(concurrency, out)`` builds the spec of one arm (see ``make_spec``)."""
    from localbench.registry import get_benchmark
    from localbench.runtime.harness import open_clients, prepare_units

    simulator = get_benchmark(benchmark).simulator()
    out = tempfile.mkdtemp(prefix=f"{benchmark}-bench-")
    spec_b = spec_for(args.n, out)
    role = spec_b.design.primary_role
    scenarios, _ = simulator.load(spec_b)
    keys = [u.key for u in simulator.plan(spec_b, scenarios)][: args.n]
    chosen = sorted({k.split("|")[0] for k in keys})
    scenarios = [s for s in scenarios if s.id in chosen]
    clients = open_clients(spec_b, simulator, out)
    backend = clients.for_role(role).backend
    recorded = []
    real = backend.complete

    async def recording(req):
        recorded.append(req)
        return await real(req)

    n_sims = len(simulator.plan(spec_b, scenarios))
    print(f"{benchmark}: {n_sims} simulations ({len(scenarios)} scenarios × conditions {args.conditions}), "
          f"model {args.model}, max_rounds {args.max_rounds}, max_tokens {args.max_tokens}")
    # warm-up: load kernels and grammars once so neither arm pays for it; and the simulator's
    # preparation (SopriBench: OCR of the images), which is no engine's work, done here once
    await _simulate(spec_for(n_sims, out + "/warm"), simulator, scenarios[:1], clients, role)
    prep_s = await prepare_units(simulator, spec_b, simulator.plan(spec_b, scenarios), clients)
    if prep_s >= 0.05:
        print(f"preparation before the arms (not in any arm's time): {prep_s:.1f} s")

    async def clear() -> None:  # each arm starts with an empty prefix cache (hf and vllm)
        reset = getattr(backend, "reset_prefix_cache", None)
        if reset is not None:
            await reset()

    await clear()
    backend.complete = recording
    tok_b, dt_b, sb, eb = await _simulate(spec_b, simulator, scenarios, clients, role)
    backend.complete = real
    if not args.skip_sequential:
        await clear()
        tok_a, dt_a, sa, ea = await _simulate(spec_for(1, out), simulator, scenarios, clients, role)

    # (c) the same requests, straight to the engine, all at once
    await clear()
    e0, t0 = _engine_stats(backend), time.monotonic()
    raws = await asyncio.gather(*(real(replace(r)) for r in recorded))
    dt_c, ec = time.monotonic() - t0, _delta(_engine_stats(backend), e0)
    tok_c = sum(r.tokens_out for r in raws)
    await clients.aclose()

    rows = [("(b) concurrent", tok_b, dt_b, eb), ("(c) raw engine", tok_c, dt_c, ec)]
    if not args.skip_sequential:
        rows.insert(0, ("(a) sequential", tok_a, dt_a, ea))
    print("\n| arm | generated tokens | wall s | tokens/s | prompt tokens | of which reused | prompt s | decode s "
          "| mean decode batch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, tok, dt, e in rows:
        extra = (f"{e['prefill_tokens']} | {e['prefix_reused']} | {e['prefill_s']:.1f} | {e['decode_s']:.1f} | "
                 f"{e['generated'] / max(1, e['decode_steps']):.1f}" if e else "– | – | – | – | –")
        print(f"| {name} | {tok} | {dt:.1f} | {tok / dt:.1f} | {extra} |")
    eff = (tok_b / dt_b) / (tok_c / dt_c)
    print(f"\nefficiency (b)/(c) = {eff:.2f}; requests replayed in (c): {len(recorded)}; concurrent run: {sb.line()}")
    if args.skip_sequential:
        return {"efficiency": eff}
    speedup = (tok_b / dt_b) / (tok_a / dt_a)
    print(f"speedup (b)/(a) = {speedup:.2f}x; sequential run: {sa.line()}")
    if ea and eb:
        _print_limits(tok_a / dt_a, tok_b, ea, eb)
    return {"speedup": speedup, "efficiency": eff}


def _print_limits(rate_a: float, tok_b: int, ea: dict, eb: dict) -> None:
    """What bounds the speedup, from the engine's own timers: decode steps compared alone, and the
    speedup (b) would reach if its decoding took no time at all (its prompts are timed as they ran)."""
    decode_a = ea["generated"] / max(ea["decode_s"], 1e-9)
    decode_b = eb["generated"] / max(eb["decode_s"], 1e-9)
    print(f"decode steps alone: (b)/(a) = {decode_b / decode_a:.2f}x; "
          f"with (b)'s decoding free, its prompts alone ({eb['prefill_s']:.1f} s) would cap the speedup "
          f"at {tok_b / max(eb['prefill_s'], 1e-9) / rate_a:.2f}x")

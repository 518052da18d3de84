"""AgentSocialBench: N simulations sequential vs concurrent vs the raw engine (a benchmark, not a test).

The arms and what they print are in bench/batching.py. Targets (issue #3): speedup >= 4x at 16
concurrent simulations, efficiency >= 0.8.

    .venv/bin/python bench/asb_batching.py --model smollm2-135m --n 16 --max-rounds 4
"""

from __future__ import annotations

import asyncio

from batching import make_spec, parser, run

if __name__ == "__main__":
    args = parser(__doc__, conditions="L0,L2", max_rounds="4", max_tokens=120).parse_args()
    asyncio.run(run("asb", args, lambda concurrency, out: make_spec("asb", args, concurrency, out)))

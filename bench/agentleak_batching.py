"""AgentLeak: all traces of a run at once vs one at a time vs the raw engine (a benchmark, not a test).

Same scenarios, same settings (single and multi-agent), same engine; the arms and what they print
are in bench/batching.py. Target (issue #19): efficiency (run ÷ raw engine on the same recorded
requests) >= 0.85.

    .venv/bin/python bench/agentleak_batching.py --model smollm2-135m --n 16 --max-rounds 4
"""

from __future__ import annotations

import asyncio

from batching import make_spec, parser, run

if __name__ == "__main__":
    args = parser(__doc__, conditions="single,multi", max_rounds="4", max_tokens=200).parse_args()
    asyncio.run(run("agentleak", args, lambda concurrency, out: make_spec("agentleak", args, concurrency, out)))

"""SopriBench: all users investigated at once vs one at a time vs the raw engine (a benchmark, not a test).

Same users, same attackers, same engine; the arms and what they print are in bench/batching.py.
Target (issue #20): efficiency (run ÷ raw engine on the same recorded requests) >= 0.85, for the text
path (a text model: images reach it as OCR text + alt text) and for the image path (a VLM sees the
pixels):

    .venv/bin/python bench/sopri_batching.py --n 12 --conditions text,post --max-rounds 3      # text path, SmolLM2
    .venv/bin/python bench/sopri_batching.py --n 8 --conditions post --model tests/presets/tiny-random-vlm.yaml --max-rounds 2  # image path

``--skip-sequential`` leaves out arm (a) (the slow one) when only the efficiency is wanted. The
images' OCR (the simulator's preparation) runs once before the arms and is in no arm's time.
"""

from __future__ import annotations

import asyncio

from batching import make_spec, parser, run

if __name__ == "__main__":
    args = parser(__doc__, conditions="text,post,single", max_rounds="3", max_tokens=200).parse_args()
    asyncio.run(run("sopri", args, lambda concurrency, out: make_spec("sopri", args, concurrency, out)))

"""xgrammar's per-token mask cost for an AgentSocialBench action, by how a schema's length-bounded
strings are expressed, for the vocabularies of the shipped presets' families whose tokenizers split the reply into tokens
the grammar takes (SentencePiece's leading-space marker keeps Mistral's out).

Not a test. It answers why the control-character fix (serving/xgrammar_quirks.py) closes the
character class in xgrammar's own grammar rather than rewriting ``maxLength`` as a ``pattern``,
the other way to keep raw control characters out (issue 43): all four forms below are timed on
the same reply, token by token, in one run, and reported as ratios to the schema as sent today.

- ``maxLength``: the schema as the benchmark builds it, compiled by xgrammar (the open class);
- ``closed``: ``json_grammar``, the grammar every engine now decodes with;
- ``pattern``: each bounded string as ``pattern: ^[^"\\\\\\x00-\\x1f]{lo,hi}$`` instead;
- ``unbounded``: the strings without any length (what no engine sends: a reply would be unbounded).

    .venv/bin/python bench/grammar_masks.py             # writes a Markdown table to stdout
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

REPLY = '{"action":"send","to":["bob"],"message":"' + "Hello there, I wanted to check our plans for Saturday " * 6


def as_pattern(schema: Any) -> Any:
    """The schema with every length-bounded string as a ``pattern`` of the same bounds."""
    if isinstance(schema, list):
        return [as_pattern(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: as_pattern(v) for k, v in schema.items()}
    if out.get("type") == "string" and ("maxLength" in out or "minLength" in out):
        lo, hi = out.pop("minLength", 0), out.pop("maxLength", "")
        out["pattern"] = '^[^"\\\\\\x00-\\x1f]{%s,%s}$' % (lo, hi)
    return out


def unbounded(schema: Any) -> Any:
    if isinstance(schema, list):
        return [unbounded(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: unbounded(v) for k, v in schema.items() if k not in ("maxLength", "minLength")}


def per_token_us(compiler: Any, compile_grammar: Any, ids: list[int], vocab_size: int) -> tuple[float, float]:
    """(compile ms, mask µs per token) over ``ids``, after one warm pass."""
    import xgrammar as xgr

    t = time.perf_counter()
    compiled = compile_grammar(compiler)
    compile_ms = (time.perf_counter() - t) * 1000
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    best = float("inf")
    for _ in range(2):
        matcher = xgr.GrammarMatcher(compiled)
        t = time.perf_counter()
        for i in ids:
            matcher.fill_next_token_bitmask(bitmask)
            if not matcher.accept_token(i):
                raise RuntimeError("the reply left the grammar")
        best = min(best, (time.perf_counter() - t) / len(ids) * 1e6)
    return compile_ms, best


def main() -> None:
    import xgrammar as xgr
    from transformers import AutoTokenizer

    import vocabularies
    from localbench.benchmarks.asb.actions import action_spec
    from localbench.serving.weights import materialize
    from localbench.serving.presets import load_preset
    from localbench.serving.xgrammar_quirks import SEPARATORS, json_grammar

    schema = action_spec(("alice", "bob", "carol"), ("send", "broadcast", "pass", "done"), 384).schema
    forms = {
        "maxLength": lambda c: c.compile_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS),
        "closed": lambda c: c.compile_grammar(json_grammar(schema)),
        "pattern": lambda c: c.compile_json_schema(json.dumps(as_pattern(schema)), any_whitespace=False, separators=SEPARATORS),
        "unbounded": lambda c: c.compile_json_schema(json.dumps(unbounded(schema)), any_whitespace=False, separators=SEPARATORS),
    }
    tokenizers = {"SmolLM2 (49,152)": AutoTokenizer.from_pretrained(materialize(load_preset("smollm2-135m"))),
                  "Llama 3 (128,256)": vocabularies.llama3(),
                  "Qwen (151,643 + 3)": vocabularies.qwen()}
    print(f"xgrammar {xgr.__version__ if hasattr(xgr, '__version__') else '?'}, {platform.processor() or platform.machine()}, "
          f"one thread; {len(REPLY)} characters of reply\n")
    print("| vocabulary | form | compile ms | mask µs/token | × maxLength |")
    print("|---|---|--:|--:|--:|")
    for name, tok in tokenizers.items():
        info = xgr.TokenizerInfo.from_huggingface(tok)
        ids = tok.encode(REPLY, add_special_tokens=False)
        base = None
        for form, build in forms.items():
            compile_ms, us = per_token_us(xgr.GrammarCompiler(info, cache_enabled=False), build, ids, info.vocab_size)
            base = base or us
            print(f"| {name} | {form} | {compile_ms:.0f} | {us:.0f} | {us / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()

"""The grammar every xgrammar path decodes a JSON schema with, closed to raw control characters.

xgrammar 0.2.8 (the version vLLM 0.32 pins) lowers a string with ``minLength``/``maxLength`` to a
bounded repetition of ``[^"\\\\\\r\\n]``, a class that lets raw U+0000-U+001F other than CR and LF
(a tab, say) into the string (mlc-ai/xgrammar#800). Every engine here asks for compact JSON, where
such a byte is legal nowhere (JSON strings must escape it), so a reply holding one is invalid and
costs a retry.

The fix is in the grammar itself, not in a token ban: ``json_grammar`` is the grammar xgrammar
builds for the schema (compact: no whitespace, separators ``,`` and ``:``, strict), with that one
class closed to control characters. The in-process vLLM engine and a vLLM server started by
``localbench serve`` get it as a ``grammar`` request, the hf engine compiles it; all decode the
same language, so they reject replies at the same rate. Earlier versions sent a logit bias of
-100 on every token holding a control byte: 159 tokens of SmolLM2's vocabulary but about 3,600 of
Llama 3's or Qwen's, past the 1,024 that vLLM's Model Runner V2 (its default on CUDA) accepts per
request, so the first constrained request of an 8B model killed the engine. No bias, no logits
processor: nothing a GPU engine can refuse.

A grammar that xgrammar builds without the open class (a release that fixed #800) is returned as
built.
"""

from __future__ import annotations

import functools
import json
from typing import Any

SEPARATORS = (",", ":")  # vLLM's compact form with disable_any_whitespace (its xgrammar backend)
OPEN_CLASS = '[^\\"\\\\\\r\\n]'  # the length-bounded string's character class, as xgrammar 0.2.8 prints it
CLOSED_CLASS = '[^\\"\\\\\\0-\\x1f]'  # the same without U+0000-U+001F, as JSON's own strings have it
GRAMMAR_FORM = "xgrammar EBNF of the JSON schema, length-bounded strings closed to U+0000-U+001F"
"""What every xgrammar path constrains with (recorded in each engine's describe())."""


def close_bounded_strings(ebnf: str) -> str:
    """``ebnf`` with every length-bounded string's character class closed to control characters."""
    return ebnf.replace(OPEN_CLASS, CLOSED_CLASS)


def json_grammar(schema: dict[str, Any]) -> str:
    """The EBNF grammar for a JSON schema that every xgrammar path decodes with: xgrammar's own
    translation, compact and strict, closed to raw control characters. The schema's properties
    keep their order (the grammar asks for them in that order: a judge's evidence before its
    verdict), so it is serialised as given, never with sorted keys."""
    return _grammar_of(json.dumps(schema, ensure_ascii=False))


@functools.lru_cache(maxsize=4096)
def _grammar_of(schema_text: str) -> str:
    """Cached by the schema's text: a run asks for a few hundred distinct schemas, each many times."""
    import xgrammar as xgr

    grammar = xgr.Grammar.from_json_schema(schema_text, any_whitespace=False, separators=SEPARATORS, strict_mode=True)
    return close_bounded_strings(str(grammar))

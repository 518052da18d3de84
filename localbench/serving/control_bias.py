"""The control-character ban as a vLLM logits processor, for ``localbench serve``'s server.

The in-process engine sends xgrammar_quirks' ban as each constrained request's ``logit_bias``;
a server started by ``localbench serve`` gets the same ban from this processor
(``--logits-processors localbench.serving.control_bias:ControlCharacterBias``), so the two paths
of one preset reject replies at the same rate. It acts only on requests with structured outputs
(what the in-process engine biases), lowering the same tokens by the same BANNED_BIAS.
"""

from __future__ import annotations

from typing import Any

from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

from localbench.serving.xgrammar_quirks import BANNED_BIAS, control_token_bias

PROCESSOR = "localbench.serving.control_bias:ControlCharacterBias"


class ControlCharacterBias(LogitsProcessor):
    """Lower control-character tokens by BANNED_BIAS in the rows of constrained requests."""

    def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
        import torch
        from vllm.tokenizers import cached_tokenizer_from_config

        model_config = vllm_config.model_config
        tokenizer = cached_tokenizer_from_config(model_config)
        ids = sorted(control_token_bias(tokenizer, int(model_config.get_vocab_size())))
        self.token_ids = torch.tensor(ids, dtype=torch.long, device=device)
        self.rows: dict[int, bool] = {}

    @classmethod
    def for_tokens(cls, token_ids: list[int]) -> "ControlCharacterBias":
        """An instance over given token ids (tests; no model config needed)."""
        import torch

        self = cls.__new__(cls)
        self.token_ids = torch.tensor(sorted(token_ids), dtype=torch.long)
        self.rows = {}
        return self

    def is_argmax_invariant(self) -> bool:
        return False  # a banned token may be the argmax

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self.rows, batch_update,
                             lambda params, _prompt, _out: True if params.structured_outputs is not None else None)

    def apply(self, logits: Any) -> Any:
        if not self.rows or self.token_ids.numel() == 0:
            return logits
        import torch

        rows = torch.tensor(sorted(self.rows), dtype=torch.long, device=logits.device)
        ids = self.token_ids.to(logits.device)
        logits[rows.unsqueeze(1), ids.unsqueeze(0)] += BANNED_BIAS
        return logits

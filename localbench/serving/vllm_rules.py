"""What vLLM's Model Runner V2 refuses in a request, checked before the request is sent.

On CUDA, vLLM 0.32 runs Model Runner V2 whenever Triton is present (``VllmConfig.use_v2_model_runner``).
V2 keeps each request's token lists in fixed-size GPU buffers and raises inside the engine when
a request's list is longer (``vllm/v1/worker/gpu/sample/logit_bias.py``, ``bad_words.py``): the
EngineCore dies and every request in flight fails with it. The CPU build has no Triton and runs
V1, which has no such limits, so nothing run on CPU meets them. ``refusals`` reads a request's
SamplingParams against V2's limits, so the in-process engine refuses such a request itself, on
every platform, with one line that names the limit, and a CPU test sees what a GPU would do.
The limits are vLLM's own constants where its V2 sampler is importable, else the values of the
pinned vLLM (0.32).
"""

from __future__ import annotations

from typing import Any

# vLLM 0.32, vllm/v1/worker/gpu/sample/logit_bias.py and vllm/envs.py (VLLM_MAX_NUM_BAD_WORDS...)
PINNED_LIMITS = {"allowed_token_ids": 1024, "logit_bias": 1024, "stop_token_ids": 128,
                 "bad_words": 128, "bad_words_tokens": 1024}


def v2_limits() -> dict[str, int]:
    """V2's per-request limits: the installed vLLM's, else those of the pinned version."""
    limits = dict(PINNED_LIMITS)
    try:
        import vllm.envs as envs
        from vllm.v1.worker.gpu.sample import logit_bias as lb
    except Exception:  # noqa: BLE001 - no vLLM here, or one without Model Runner V2
        return limits
    limits.update(allowed_token_ids=lb.MAX_NUM_ALLOWED_TOKEN_IDS, logit_bias=lb.MAX_NUM_LOGIT_BIAS_TOKENS,
                  stop_token_ids=lb.MAX_NUM_STOP_TOKEN_IDS)
    limits["bad_words"] = int(getattr(envs, "VLLM_MAX_NUM_BAD_WORDS", limits["bad_words"]))
    limits["bad_words_tokens"] = int(getattr(envs, "VLLM_MAX_BAD_WORDS_TOTAL_TOKENS", limits["bad_words_tokens"]))
    return limits


def refusals(params: Any, limits: dict[str, int] | None = None) -> list[str]:
    """Why Model Runner V2 would refuse a request with these SamplingParams (empty: it would not)."""
    lim = limits or v2_limits()
    out: list[str] = []

    def over(name: str, n: int, limit: int) -> None:
        if n > limit:
            out.append(f"{n} {name} (Model Runner V2 takes at most {limit} per request)")

    over("allowed token ids", len(params.allowed_token_ids or ()), lim["allowed_token_ids"])
    over("logit-bias tokens", len(params.logit_bias or {}), lim["logit_bias"])
    if (params.min_tokens or 0) > 0:  # V2 keeps the stop ids only to hold them back until min_tokens
        over("stop token ids with min_tokens", len(params.all_stop_token_ids or ()), lim["stop_token_ids"])
    words = list(getattr(params, "bad_words_token_ids", None) or [])
    over("bad words", len(words), lim["bad_words"])
    over("bad-word tokens", sum(len(w) for w in words), lim["bad_words_tokens"])
    return out

"""Serving: one Backend protocol, three engines (hf, vllm, openai), structured output, response cache.

Heavy imports (torch, transformers, vllm) happen only inside the engine modules that need them.
"""

from localbench.serving.types import (
    Backend,
    GenerationRequest,
    GenerationResult,
    ModelIdentity,
    RawCompletion,
)
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed

__all__ = [
    "Backend",
    "GenerationRequest",
    "GenerationResult",
    "ModelIdentity",
    "OutputSpec",
    "RawCompletion",
    "derive_seed",
]

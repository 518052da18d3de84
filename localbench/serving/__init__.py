"""Serving: one Backend protocol, three engines (hf, vllm, openai), structured output, response cache.

Heavy imports (torch, transformers, vllm) happen only inside the engine modules that need them.
"""

from localbench.serving.messages import (
    ContentPart,
    ImagePart,
    Message,
    TextPart,
    has_images,
    image_part,
    text_of,
    text_part,
)
from localbench.serving.types import (
    Backend,
    GenerationRequest,
    GenerationResult,
    ImageInputError,
    ModelIdentity,
    RawCompletion,
)
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed

__all__ = [
    "Backend",
    "ContentPart",
    "GenerationRequest",
    "GenerationResult",
    "ImageInputError",
    "ImagePart",
    "Message",
    "ModelIdentity",
    "OutputSpec",
    "RawCompletion",
    "TextPart",
    "derive_seed",
    "has_images",
    "image_part",
    "text_of",
    "text_part",
]

"""The serving vocabulary: what a request carries, what an engine returns, and the Backend protocol.

Engines (hf, vllm, openai) implement ``Backend.complete``: one attempt, one raw completion.
Validation, retries with derived seeds, caching and failure records live once, in
``localbench.serving.client.StructuredClient``, so every engine behaves the same way.
A chat message (``Message``: content a string or a list of text and image parts) is defined in
``localbench.serving.messages``. An engine takes image parts only for a vision preset
(``Preset.vision``), and says so in its ``accepts_images`` attribute; for any other model it
refuses them through ``text_messages`` (see ``localbench.serving.vision`` and docs/multimodal.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from localbench.errors import UserError
from localbench.serving.messages import Message, first_image, plain_text
from localbench.serving.output import OutputSpec

FinishReason = Literal["stop", "length", "error"]


@dataclass(frozen=True)
class ModelIdentity:
    """Everything that makes two models produce different outputs: what the cache is keyed on."""

    preset: str
    source: str  # hub repo id, local path, or a builder name ("tiny-random")
    revision: str  # hub revision, or a content hash of local weights
    dtype: str = "auto"
    settings: str = ""  # settings_hash of the preset's chat_template_kwargs and engine_args; "" when both are empty
    grammar: str = ""  # the structured-output backend where a run chooses it (hf: xgrammar | outlines); "" when pinned

    def key(self) -> str:
        # settings and grammar are appended only when set: an identity without them keeps the key
        # it always had (such cache entries were keyed correctly), any other gets a new one.
        key = f"{self.preset}|{self.source}|{self.revision}|{self.dtype}"
        if self.settings:
            key += f"|settings={self.settings}"
        if self.grammar:
            key += f"|grammar={self.grammar}"
        return key


def identity_changes(recorded: dict[str, Any], current: ModelIdentity) -> str:
    """What differs between an identity recorded earlier (a dict, perhaps written before some field
    existed, which then reads as its default) and ``current``; "" when they are the same model,
    as the cache key says."""
    names = [f.name for f in dataclasses.fields(current)]
    was = ModelIdentity(**{k: v for k, v in recorded.items() if k in names})
    if was.key() == current.key():
        return ""
    return "; ".join(f"{k} {getattr(was, k)!r} → {getattr(current, k)!r}" for k in names
                     if getattr(was, k) != getattr(current, k))


def settings_hash(settings: dict[str, Any]) -> str:
    """A short stable hash of the settings that change a model's outputs; "" when none is set.

    Empty entries (``chat_template_kwargs: {}``) count as unset, so adding an empty field to a
    preset does not invalidate its cache.
    """
    live = {k: v for k, v in settings.items() if v not in (None, {}, [], "")}
    if not live:
        return ""
    blob = json.dumps(live, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass
class GenerationRequest:
    """One call to a model.

    ``role`` says who is speaking (a role of the benchmark's, or a judge); it is recorded and may
    select a model, but never changes decoding. ``output`` is None for free text.
    """

    messages: list[Message]
    output: OutputSpec | None = None
    role: str = "agent"
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    tag: str = ""  # free label for logs and progress (e.g. scenario id / turn)

    def sampling_key(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": round(float(self.temperature), 6), "seed": self.seed}


@dataclass
class RawCompletion:
    """What an engine returns for one attempt, before validation."""

    text: str
    finish_reason: FinishReason
    tokens_in: int
    tokens_out: int


@dataclass
class Attempt:
    """One try at a request: its seed and why it was rejected, if it was."""

    seed: int
    finish_reason: FinishReason
    error: str | None = None
    cached: bool = False


@dataclass
class GenerationResult:
    """The outcome of a request after validation and retries.

    ``failure`` is None on success. On failure ``parsed`` is None and ``failure`` says why; the
    result is still returned so the caller records it (never dropped, never read as "no leak").
    """

    text: str
    parsed: Any
    finish_reason: FinishReason
    tokens_in: int
    tokens_out: int
    latency_s: float
    cached: bool
    seed: int
    attempts: list[Attempt] = field(default_factory=list)
    failure: str | None = None
    engine: str = ""
    model: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None

    def summary(self) -> dict[str, Any]:
        """A JSON-ready record of the call, for transcripts and judgments."""
        return {
            "finish_reason": self.finish_reason,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "latency_s": round(self.latency_s, 4),
            "cached": self.cached,
            "seed": self.seed,
            "n_attempts": len(self.attempts),
            "failure": self.failure,
            "engine": self.engine,
            "model": self.model,
        }


class EngineError(UserError, RuntimeError):
    """An engine that cannot serve at all (dead server, missing weights): not a bad reply.

    The command exits with status 1 (``errors.EXIT_INCOMPLETE``): what finished is kept, and a
    rerun resumes once the engine serves again."""

    exit_code = 1


class PromptTooLongError(ValueError):
    """A prompt that leaves no room for the reply: prompt tokens + max_tokens > max_model_len.

    Callers budget prompts beforehand (``count_tokens``); an engine that can count answers an
    overflow with this error, the same in every engine, and never by cutting the reply short.
    """


def check_prompt_fits(prompt_tokens: int, request: GenerationRequest, max_model_len: int, preset: str) -> None:
    """Raise PromptTooLongError naming the request, the sizes and the preset when it does not fit."""
    if prompt_tokens + request.max_tokens > max_model_len:
        raise PromptTooLongError(
            f"request '{request.tag or request.role}': prompt of {prompt_tokens} tokens + max_tokens "
            f"{request.max_tokens} exceeds max_model_len {max_model_len} of preset '{preset}'"
        )


class ImageInputError(EngineError):
    """A request with an image part for an engine (or model) that cannot take images."""


def text_messages(messages: list[Message], engine: str, preset: str) -> list[Message]:
    """The messages as an engine without image input sees them: every content one string (text
    parts joined by newlines; string contents untouched). A message with an image part is refused
    with one ImageInputError line naming the engine, the preset and the message (counted from 1),
    before anything is counted, sent or generated."""
    i = first_image(messages)
    if i is not None:
        raise ImageInputError(f"engine '{engine}' (preset '{preset}') cannot take images: "
                              f"message {i + 1} ({messages[i].get('role', '?')}) has an image part")
    return plain_text(messages)


@runtime_checkable
class Backend(Protocol):
    """An engine that turns chat requests into raw completions.

    Implementations must accept many concurrent ``complete`` calls (the scheduler keeps one
    request of every live simulation in flight) and batch them as well as the engine allows.
    """

    engine: str  # "hf" | "vllm" | "openai"
    # Every engine also has ``accepts_images: bool`` (True only for a vision preset). It is not a
    # protocol member, so test doubles without it still pass isinstance(); read it with
    # ``getattr(backend, "accepts_images", False)``.
    identity: ModelIdentity
    grammar_backend: str  # which structured-output backend actually constrained decoding
    max_model_len: int

    async def complete(self, request: GenerationRequest) -> RawCompletion: ...

    def count_tokens(self, messages: list[Message]) -> int:
        """Prompt tokens after the chat template: used to keep prompts inside the context window.

        Text parts count as their text; an image counts as the tokens the model reads it as (engines
        with ``accepts_images``); an engine that cannot take images raises ImageInputError
        (``text_messages``) for a message with an image part instead of counting it."""
        ...

    async def acount_tokens(self, messages: list[Message]) -> int:
        """``count_tokens`` for callers on the event loop (every turn's prompt fitting): an engine
        whose count can wait on I/O (a server's /tokenize) overrides it so other simulations go on
        meanwhile; the others count in place. Engines subclass Backend to inherit this default."""
        return self.count_tokens(messages)

    async def aclose(self) -> None: ...

    def describe(self) -> dict[str, Any]:
        """Engine facts recorded in a run's spec.yaml (versions, grammar backend, flags)."""
        ...

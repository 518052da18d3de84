"""What the accelerator here is, asked without initialising CUDA, and what it implies for vLLM.

Why without initialising CUDA: vLLM starts its EngineCore (and, with tensor parallelism, its
workers) with ``fork`` unless CUDA is already initialised in the parent; a plain
``torch.cuda.is_available()`` initialises the driver in the parent, after which a forked child
dies with "Cannot re-initialize CUDA in forked subprocess". torch documents
``PYTORCH_NVML_BASED_CUDA_CHECK=1`` as the way to ask NVML instead, which leaves fork safe; the
in-process engine sets ``VLLM_WORKER_MULTIPROC_METHOD=spawn`` as well (``engine_environment``),
so a worker never inherits a CUDA context whatever ran before it.

Everything that depends on the card (dtype, batch limits, memory shares, concurrency) is computed
from a ``Device`` value, so tests pass a simulated H100, V100 or T4 and check the arithmetic on CPU.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import asdict, dataclass
from typing import Any

GIB = 2**30
NVML_CHECK_ENV = "PYTORCH_NVML_BASED_CUDA_CHECK"
SPAWN_ENV = "VLLM_WORKER_MULTIPROC_METHOD"


@dataclass(frozen=True)
class Device:
    """The accelerator one process sees: a CPU, or ``count`` CUDA GPUs of one kind."""

    kind: str  # "cpu" | "cuda"
    name: str = "cpu"
    memory_gib: float = 0.0  # per GPU
    capability: tuple[int, int] | None = None  # CUDA compute capability (8, 0) for an A100
    count: int = 0
    driver: str | None = None
    cuda: str | None = None  # the CUDA version torch was built with
    driver_cuda: str | None = None  # the newest CUDA the driver runs (NVML), e.g. "12.4"

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda" and self.count > 0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["capability"] = ".".join(map(str, self.capability)) if self.capability else None
        return d


CPU = Device("cpu")


def nvml_safe_cuda_check() -> None:
    """Make torch answer ``cuda.is_available()`` from NVML (no CUDA context: fork stays safe)."""
    os.environ.setdefault(NVML_CHECK_ENV, "1")


def _driver() -> str | None:
    card = nvml_card()
    return card["driver"] if card else None


def nvml_card() -> dict[str, Any] | None:
    """The GPUs as NVML reports them (count, first card's name, memory and compute capability, the
    driver and the newest CUDA it runs), without a CUDA context; None where NVML is not there (no
    ``nvidia-ml-py``, no driver)."""
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML library, no driver
        return None
    try:
        count = int(pynvml.nvmlDeviceGetCount())
        if count < 1:
            return None
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(handle)
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = int(pynvml.nvmlSystemGetCudaDriverVersion())  # 12040 for CUDA 12.4
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        return {"count": count, "name": name.decode() if isinstance(name, bytes) else str(name),
                "memory_gib": round(pynvml.nvmlDeviceGetMemoryInfo(handle).total / GIB, 1),
                "capability": (int(major), int(minor)),
                "driver": driver.decode() if isinstance(driver, bytes) else str(driver),
                "driver_cuda": f"{cuda // 1000}.{cuda % 1000 // 10}"}
    except Exception:  # noqa: BLE001 - an NVML too old for one of these calls: ask torch instead
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def detect() -> Device:
    """The device here: from NVML where it is there (no CUDA context, so vLLM may still fork),
    else from torch's device properties (which initialise CUDA in this process)."""
    if importlib.util.find_spec("torch") is None:
        return CPU
    nvml_safe_cuda_check()
    import torch

    if not torch.cuda.is_available():
        return CPU
    torch_cuda = getattr(torch.version, "cuda", None)
    card = nvml_card()
    if card is not None:
        return Device("cuda", name=card["name"], memory_gib=card["memory_gib"], capability=card["capability"],
                      count=card["count"], driver=card["driver"], cuda=torch_cuda, driver_cuda=card["driver_cuda"])
    # get_device_properties initialises CUDA in this process; callers that start vLLM after it
    # rely on engine_environment()'s spawn method, which is why that is set unconditionally.
    props = torch.cuda.get_device_properties(0)
    return Device("cuda", name=str(props.name), memory_gib=round(props.total_memory / GIB, 1),
                  capability=(int(props.major), int(props.minor)), count=int(torch.cuda.device_count()),
                  driver=_driver(), cuda=torch_cuda)


def driver_problem(device: Device) -> str | None:
    """One line when the driver is too old for torch's CUDA (its newest CUDA has a lower major
    version than the one torch was built with: CUDA's minor-version compatibility stops at a major
    version), else None. Unknown either way: None."""
    if not device.is_cuda or not device.cuda or not device.driver_cuda:
        return None
    try:
        need = int(device.cuda.split(".")[0])
        have = int(device.driver_cuda.split(".")[0])
    except ValueError:
        return None
    if have >= need:
        return None
    return (f"NVIDIA driver {device.driver} runs CUDA up to {device.driver_cuda}, but torch was built for CUDA "
            f"{device.cuda}: nothing will start on the GPU; update the driver (CUDA {need}.x needs driver "
            f"{MIN_DRIVER.get(need, 'a newer one')} or newer) or install a torch built for CUDA {have}")


MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
"""The oldest Linux driver of each CUDA major version (NVIDIA's CUDA release notes, minor-version
compatibility): a driver older than this cannot run any CUDA of that major version."""


def engine_environment(device: Device) -> dict[str, str]:
    """Environment the in-process vLLM engine needs on ``device`` (set before AsyncLLM starts)."""
    if device.is_cuda:
        return {SPAWN_ENV: "spawn", NVML_CHECK_ENV: "1"}
    return {}


def dtype_for(preset_dtype: str, device: Device) -> str:
    """The dtype to load on ``device``: bfloat16 needs compute capability 8.0 (Ampere) or newer;
    on a V100 (7.0) or T4 (7.5) a bfloat16 preset runs in float16 instead (vLLM refuses bf16 there)."""
    if device.is_cuda and preset_dtype == "bfloat16" and device.capability is not None and device.capability < (8, 0):
        return "float16"
    return preset_dtype


def batch_limits(device: Device, world_size: int = 1) -> dict[str, int]:
    """``max_num_seqs`` and ``max_num_batched_tokens`` for a GPU, as ``vllm serve`` picks them
    (vLLM 0.32, EngineArgs._set_default_max_num_seqs_and_batched_tokens_args, OpenAI-server
    column): the in-process engine would otherwise get the offline-library values. Empty on CPU."""
    if not device.is_cuda:
        return {}
    name = device.name.lower()
    if device.memory_gib >= 160:
        return {"max_num_seqs": 1024, "max_num_batched_tokens": 16384}
    if device.memory_gib >= 70 and "a100" not in name:
        return {"max_num_seqs": 1024, "max_num_batched_tokens": 8192}
    return {"max_num_seqs": 256, "max_num_batched_tokens": 2048}


class MemorySplitError(ValueError):
    """Two engines on one GPU whose memory shares add up to more than the card."""


def memory_shares(requested: dict[str, float], device: Device, ceiling: float = 0.9) -> dict[str, float]:
    """``gpu_memory_utilization`` for each of several engines sharing one GPU in one process.

    vLLM checks at start that the *free* memory covers its share of the total, so two engines
    asking 0.85 each cannot both start. Each gets a share of ``ceiling`` in proportion to what its
    preset asked (one engine keeps its own value); a share under 0.2 is refused (MemorySplitError)
    rather than started into an out-of-memory error."""
    if not device.is_cuda or len(requested) <= 1:
        return dict(requested)
    total = sum(requested.values())
    if total <= ceiling:
        return dict(requested)
    shares = {k: round(ceiling * v / total, 3) for k, v in requested.items()}
    small = {k: v for k, v in shares.items() if v < 0.2}
    if small:
        raise MemorySplitError(
            f"{len(requested)} models on one {device.name} would get {', '.join(f'{k}: {v:.2f}' for k, v in shares.items())} "
            "of its memory; serve one of them elsewhere (--base-url) or use one model for both roles")
    return shares


# requests in flight per engine: enough to fill max_num_seqs with room for turns that are
# being counted and validated; on CPU the batch is small and more requests only queue
CPU_CONCURRENCY = 64


def concurrency_for(device: Device, engines: int = 1) -> int:
    """Requests to keep in flight (live simulations, judge calls) for ``engines`` engines here."""
    if not device.is_cuda:
        return CPU_CONCURRENCY
    per = batch_limits(device)["max_num_seqs"]
    return max(CPU_CONCURRENCY, per // max(1, engines))


@dataclass(frozen=True)
class Concurrency:
    """How much a run keeps going at once; one number (``serving.max_concurrency``) used to bound all
    three, which on a GPU left an engine batching 1,024 sequences with 64 of them."""

    simulations: int  # simulations live at once (each waits on one model call at a time)
    requests: int  # requests in flight to one served engine (the openai client's limit)
    judge: int  # judge calls in flight
    source: str  # where the numbers came from: "spec", "cpu default" or the device's name

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def concurrency_limits(device: Device, explicit: int | None = None, engines: int = 1) -> Concurrency:
    """The spec's ``max_concurrency`` for all three when it sets one; else, on a GPU, enough to fill
    each engine's batch (``max_num_seqs``): simulations shared among ``engines`` engines, the
    judge's calls on one; on CPU the value the project has always used (64), so CPU runs do not change."""
    if explicit:
        return Concurrency(explicit, explicit, explicit, "spec")
    if not device.is_cuda:
        return Concurrency(CPU_CONCURRENCY, CPU_CONCURRENCY, CPU_CONCURRENCY, "cpu default")
    per_engine = max(CPU_CONCURRENCY, batch_limits(device)["max_num_seqs"])
    return Concurrency(concurrency_for(device, engines), per_engine, concurrency_for(device, 1),
                       f"device: {device.name}")


def throughput_defaults(device: Device, presets: list[Any], spec_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Concurrency, batch limits and memory shares for the presets in use on ``device``; the spec's
    own values (``spec_overrides``: max_concurrency, max_num_seqs, max_num_batched_tokens) win.
    What a run records in spec.yaml (through the engine's describe())."""
    over = dict(spec_overrides or {})
    limits = batch_limits(device)
    distinct = {p.name: p.gpu_memory_utilization for p in presets if getattr(p, "needs_gpu", True)}
    out: dict[str, Any] = {
        "device": device.name,
        "max_concurrency": over.get("max_concurrency") or concurrency_for(device, max(1, len(distinct))),
        **{k: over.get(k) or v for k, v in limits.items()},
        "gpu_memory_utilization": memory_shares(distinct, device) if distinct else {},
        "source": "spec" if over else ("device" if device.is_cuda else "cpu defaults"),
    }
    return out

"""Shared fixtures: the real tokenizer-backed tiny random model and the packaged SmolLM2.

Both are built once into the localbench cache (LOCALBENCH_CACHE, default ~/.cache/localbench) and
reused across tests and runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _one_core_per_xdist_worker() -> None:
    """Under `pytest -n N`, each worker (and every engine or CLI process it starts) computes on one
    thread, pinned to its own core for vLLM. torch's default is a thread per core in every process;
    two workers each spinning two OpenMP threads on two cores ran a SmolLM2 simulation 2.9x slower
    than one thread each (117 s against 41 s, measured in bench/ci_times.md). Set before torch is
    imported, so the env reaches torch here and in every subprocess."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker or count < 2:
        return
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    index = int(worker.removeprefix("gw") or 0)
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = str(index % (os.cpu_count() or 1))


_one_core_per_xdist_worker()

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import materialize

    return Path(materialize(load_preset("smollm2-135m")))


@pytest.fixture(scope="session")
def tiny_dir(smollm2_dir) -> Path:
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import materialize

    return Path(materialize(load_preset("tiny-random")))


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    d = SHARED / "datasets"
    if not d.is_dir():
        pytest.skip(f"upstream datasets folder {d} is absent (it sits beside the repo as ../shared)")
    return d

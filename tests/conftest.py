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

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


XDIST_GROUPS = {"slurm": "slurm-cluster", "vllm": "vllm-cpu"}
"""Under pytest-xdist (`make test` runs ``-n auto --dist loadgroup``), tests with these marks run on
one worker, one after another: they share one Slurm cluster, or each starts a vLLM engine whose
memory and cores two at once would not have. Every other test is grouped with its file, so a
module-scoped fixture (an engine, a finished run) is built once, on one worker, as without xdist."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = next((g for mark, g in XDIST_GROUPS.items() if item.get_closest_marker(mark) is not None),
                     item.nodeid.split("::")[0])
        item.add_marker(pytest.mark.xdist_group(group))


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

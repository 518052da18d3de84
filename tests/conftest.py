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

SLURM_CLUSTER_FILES = ("tests/test_slurm_cluster.py", "tests/test_slurm_cluster_hardening.py",
                       "tests/test_slurm_up_script.py", "tests/test_study_submit_cluster.py",
                       "tests/test_judges_eval_slurm.py")
"""The test files that use the one single-node Slurm cluster (mark ``slurm``): under xdist they run
as one unit, one test after another on one worker, first (tests/test_xdist_schedule.py keeps this
list equal to the files carrying the mark)."""


def _unit(nodeid: str) -> str:
    """The unit of xdist scheduling a test belongs to: its file, or the one Slurm-cluster unit."""
    path = nodeid.split("::", 1)[0]
    return "slurm-cluster" if path in SLURM_CLUSTER_FILES else path


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the Slurm-cluster files as one unit, in the order the workers
    collected (``pytest_collection_modifyitems`` below: the Slurm unit first).

    Every other file is one unit, as in xdist's loadfile (a module's fixture, an engine or a
    finished run, is built once). The Slurm unit is the longest (about 7 minutes, mostly waiting on
    the cluster), so it starts at once on one worker while the others share the rest, instead of
    running as a serial phase after them."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SlurmFirstFileScheduling(LoadFileScheduling):
        def __init__(self, config, log=None):
            super().__init__(config, log)
            config.option.loadscopereorder = False  # the workers' collection order is the plan

        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return SlurmFirstFileScheduling(config, log)


MODEL_FIXTURES = ("smollm2_dir", "tiny_dir")


def pytest_collection_modifyitems(config, items):
    """Under xdist, every worker orders its collection the same way, longest units first so that
    none is left running alone at the end: the Slurm unit, then units by weight, a test that loads
    a model (a model fixture, an engine) weighing ten and any other one (xdist's own reorder by
    test count, which the scheduler above turns off, put the few long end-to-end files last). Each
    unit's tests keep their file order. Without xdist the order is left alone."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    weight: dict[str, int] = {}
    for item in items:
        heavy = item.get_closest_marker("vllm") or any(f in item.fixturenames for f in MODEL_FIXTURES)
        weight[_unit(item.nodeid)] = weight.get(_unit(item.nodeid), 0) + (10 if heavy else 1)
    order = sorted(weight, key=lambda u: (u != "slurm-cluster", -weight[u]))
    rank = {u: i for i, u in enumerate(order)}
    items.sort(key=lambda item: rank[_unit(item.nodeid)])


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


@pytest.fixture(scope="session")
def toy_site(tmp_path_factory) -> Path:
    """A folder holding the test-only benchmark's distribution metadata (its entry point)."""
    from toy_benchmark import install

    site = tmp_path_factory.mktemp("toy-site")
    install(site)
    return site


@pytest.fixture
def toy_registered(toy_site, monkeypatch):
    """The toy benchmark installed, as a package outside localbench is: its entry point on the
    path of this process and of the commands it starts."""
    tests = str(Path(__file__).resolve().parent)
    monkeypatch.syspath_prepend(tests)
    monkeypatch.syspath_prepend(str(toy_site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(toy_site), tests, os.environ.get("PYTHONPATH", "")]))

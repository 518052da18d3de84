"""`make test`'s xdist plan (tests/conftest.py): the Slurm-cluster files are one unit, first; heavy
files before light ones; each worker computes on one thread."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import conftest

TESTS = Path(__file__).resolve().parent


def test_the_slurm_unit_is_exactly_the_files_marked_slurm():
    marked = sorted(f"tests/{p.name}" for p in TESTS.glob("test_*.py")
                    if re.search(r"pytest\.mark\.slurm\b", p.read_text()))
    assert marked == sorted(conftest.SLURM_CLUSTER_FILES)


def _item(nodeid, fixtures=(), vllm=False):
    return SimpleNamespace(nodeid=nodeid, fixturenames=list(fixtures),
                           get_closest_marker=lambda name: object() if (vllm and name == "vllm") else None)


def test_workers_order_the_slurm_unit_first_then_heavy_files(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    items = [_item(f"tests/test_a_many.py::t{i}") for i in range(15)]
    items += [_item("tests/test_b_e2e.py::run", ["tmp_path", "smollm2_dir"]), _item("tests/test_b_e2e.py::other")]
    items += [_item("tests/test_c_vllm.py::engine", vllm=True)]
    items += [_item("tests/test_slurm_cluster.py::array"), _item("tests/test_slurm_up_script.py::up")]
    conftest.pytest_collection_modifyitems(None, items)
    units = list(dict.fromkeys(conftest._unit(i.nodeid) for i in items))
    assert units == ["slurm-cluster", "tests/test_a_many.py", "tests/test_b_e2e.py", "tests/test_c_vllm.py"]
    assert [i.nodeid for i in items[2:17]] == [f"tests/test_a_many.py::t{i}" for i in range(15)]


def test_without_xdist_the_order_is_left_alone(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    items = [_item("tests/test_a.py::x"), _item("tests/test_slurm_cluster.py::y")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == ["tests/test_a.py::x", "tests/test_slurm_cluster.py::y"]


def test_the_scheduler_keeps_a_file_or_the_slurm_unit_together():
    config = SimpleNamespace(getvalue=lambda name: "loadfile",
                             option=SimpleNamespace(loadscopereorder=True, maxschedchunk=None),
                             getoption=lambda name, default=None: default)
    sched = conftest.pytest_xdist_make_scheduler(config, None)
    assert config.option.loadscopereorder is False
    assert sched._split_scope("tests/test_slurm_cluster_hardening.py::t") == "slurm-cluster"
    assert sched._split_scope("tests/test_x.py::C::t[1]") == "tests/test_x.py"
    assert conftest.pytest_xdist_make_scheduler(SimpleNamespace(getvalue=lambda name: "load"), None) is None


def test_an_xdist_worker_computes_on_one_thread():
    """A process that imports conftest as worker gw1 of two: torch on one thread, vLLM on core 1."""
    code = ("import conftest, os, torch; print(torch.get_num_threads(), os.environ['OMP_NUM_THREADS'], "
            "os.environ['VLLM_CPU_OMP_THREADS_BIND'])")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "VLLM_CPU_OMP"))}
    out = subprocess.run([sys.executable, "-c", code], cwd=TESTS, capture_output=True, text=True, check=True,
                         env={**env, "PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}).stdout
    assert out.split() == ["1", "1", str(1 % (os.cpu_count() or 1))]
    alone = subprocess.run([sys.executable, "-c", "import conftest, os; print(os.environ.get('OMP_NUM_THREADS'))"],
                           cwd=TESTS, capture_output=True, text=True, check=True,
                           env={k: v for k, v in env.items() if not k.startswith("PYTEST_XDIST")}).stdout
    assert alone.split() == ["None"]

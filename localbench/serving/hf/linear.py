"""Linear layers of the ``hf`` engine on CPU, with weights packed once for oneDNN.

Why: ``torch.nn.functional.linear`` on CPU hands oneDNN a plain row-major weight, which it
re-lays out as it goes. During a decode step every weight is read from memory once for a few
rows, so that is most of the step. oneDNN can take the weight already in its own blocked layout
(``torch.ops.mkldnn._reorder_linear_weight``, the packing PyTorch's own compiler does on CPU).
Measured on SmolLM2-135M's MLP shape (576 -> 1536), 60 weights larger than the caches together,
2 cores: bf16 4.3 -> 2.7 ms at 1 row, 4.7 -> 3.2 at 8, 8.8 -> 5.8 at 32, unchanged at 200+ rows,
with bit-identical results; float32 12.7 -> 6.0 ms at 1 row (results differ in the last bits).

Only plain ``nn.Linear`` modules on CPU in bf16 or float32 are packed. A weight that another
module shares (a tied language-model head) stays as it is; other weights are replaced by their
packed copy, so memory does not double. If this PyTorch build lacks the ops, nothing changes.
"""

from __future__ import annotations

from typing import Any

import torch

_DTYPES = (torch.bfloat16, torch.float32)


def pack_linears(model: torch.nn.Module) -> int:
    """Pack every eligible linear layer of ``model`` in place; returns how many were packed."""
    if not _available():
        return 0
    eligible = [m for m in model.modules() if type(m) is torch.nn.Linear and getattr(m, "_lb_packed", None) is None
                and m.weight.device.type == "cpu" and m.weight.dtype in _DTYPES]
    if not all(_agrees(m.weight) for m in _one_per_shape(eligible)):
        return 0  # oneDNN gives wrong answers here (e.g. under OMP_THREAD_LIMIT=1): plain F.linear it is
    shared = _shared_weights(model)
    packed = 0
    for module in eligible:
        weight = module.weight
        module._lb_packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), 1)
        module.forward = _packed_forward.__get__(module)
        if id(weight) not in shared:  # the packed copy replaces it
            module.weight = torch.nn.Parameter(torch.empty(0, dtype=weight.dtype), requires_grad=False)
        packed += 1
    return packed


def _packed_forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, self._lb_packed, self.bias, "none", [], "")


def _shared_weights(model: torch.nn.Module) -> set[int]:
    """ids of parameters that more than one module holds (e.g. tied input and output embeddings)."""
    seen: dict[int, int] = {}
    for module in model.modules():
        for param in module.parameters(recurse=False):
            seen[id(param)] = seen.get(id(param), 0) + 1
    return {k for k, n in seen.items() if n > 1}


def _available() -> bool:
    """Whether this build has the oneDNN ops and they give F.linear's answer on a small probe."""
    try:
        if not torch.backends.mkldnn.is_available():
            return False
        w, x = torch.randn(8, 16), torch.randn(3, 16)
        got = torch.ops.mkldnn._linear_pointwise(x, torch.ops.mkldnn._reorder_linear_weight(w, 1), None, "none", [], "")
        return bool(torch.allclose(got, torch.nn.functional.linear(x, w), atol=1e-5))
    except (AttributeError, RuntimeError):
        return False


def _one_per_shape(modules: list[torch.nn.Linear]) -> list[torch.nn.Linear]:
    out: dict[tuple[Any, ...], torch.nn.Linear] = {}
    for m in modules:
        out.setdefault((tuple(m.weight.shape), m.weight.dtype), m)
    return list(out.values())


def _agrees(weight: torch.Tensor) -> bool:
    """Whether the packed weight gives F.linear's answer for 1 and 3 rows (a decode step, a small batch).

    Measured: with OMP_THREAD_LIMIT=1 (which Slurm sites often set) oneDNN's packed linear returns
    garbage or NaN at the model's real shapes, while a toy 8×16 probe still agrees; every reply of the
    engine then failed its grammar. So each distinct weight shape is checked before anything is packed.
    """
    w = weight.detach()
    with torch.no_grad():
        packed = torch.ops.mkldnn._reorder_linear_weight(w, 1)
        gen = torch.Generator().manual_seed(0)
        for rows in (1, 3):
            x = torch.randn(rows, w.shape[1], generator=gen).to(w.dtype)
            got = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "").float()
            ref = torch.nn.functional.linear(x, w).float()
            tol = 1e-3 if w.dtype == torch.float32 else 3e-2
            if not torch.allclose(got, ref, rtol=tol, atol=tol * max(1.0, float(ref.abs().max()))):
                return False
    return True


def packed_count(model: Any) -> int:
    """How many linear layers of ``model`` run on packed weights (recorded with the engine)."""
    return sum(1 for m in model.modules() if getattr(m, "_lb_packed", None) is not None)

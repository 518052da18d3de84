"""Which benchmarks exist: the one place that answers it.

A benchmark registers itself through a Python entry point in the group ``localbench.benchmarks``
(name → ``module:Class`` of its plug-in class, a ``localbench.benchmarks.Benchmark``). The built-in
ones are declared so in localbench's own pyproject.toml; a benchmark in another installed package
declares the same in its own, and localbench finds it with no edit here. Plug-in classes are imported
on first use, so `localbench --help` and a run of one benchmark never import another.

A leaf: it imports no benchmark statically (the layering test cannot see an entry point's target),
which is what lets the spec and the report ask for a design by name.
"""

from __future__ import annotations

import functools
import sys
from importlib.metadata import EntryPoint, distributions
from typing import TYPE_CHECKING, Any

from localbench.errors import UserError

if TYPE_CHECKING:
    from localbench.design import Design

GROUP = "localbench.benchmarks"
"""The entry-point group a benchmark registers in."""

DEFAULT_BENCHMARK = "asb"
"""What a spec runs when it names no benchmark (the embedded default's)."""


class UnknownBenchmark(ValueError):
    pass


def registered() -> dict[str, EntryPoint]:
    """name → entry point of every installed benchmark, in name order (read again when sys.path changes)."""
    return dict(_registered(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _registered(path: tuple[str, ...]) -> tuple[tuple[str, EntryPoint], ...]:
    # every distribution's, not entry_points()'s one per package name: a stale localbench.egg-info
    # in the working directory would otherwise hide the installed package's own registrations
    eps: dict[str, EntryPoint] = {}
    for dist in distributions():
        for ep in dist.entry_points.select(group=GROUP):
            eps.setdefault(ep.name, ep)
    return tuple(sorted(eps.items()))


@functools.lru_cache(maxsize=None)
def _load(name: str, value: str) -> Any:
    return EntryPoint(name, value, GROUP).load()


def benchmark_class(name: str) -> Any:
    """The plug-in class registered as ``name`` (UnknownBenchmark, naming the registered ones, otherwise)."""
    ep = registered().get(name)
    if ep is None:
        raise UnknownBenchmark(f"unknown benchmark '{name}' (registered: {', '.join(registered())})")
    return _load(ep.name, ep.value)


def design_of(name: str) -> "Design":
    """The design of the benchmark registered as ``name``."""
    return benchmark_class(name).design


def get_benchmark(name: str) -> Any:
    """An instance of the benchmark registered as ``name``; a user error for an unknown name."""
    try:
        return benchmark_class(name)()
    except UnknownBenchmark as e:
        raise UserError(str(e)) from e

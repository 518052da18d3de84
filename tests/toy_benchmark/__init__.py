"""A benchmark that lives only in the tests: proof that the shared layers read a benchmark's
declaration and never name a built-in benchmark's categories, conditions, metrics or roles.

"Toy secret-keeping": a teller writes notes to a friend while keeping one secret. Its own axes
(topic × tone), roles (teller, grader), metrics (SLR, lower is better; CHEER, higher is better), one
table and one figure of its own. It registers as a package outside localbench would: an installed
distribution whose entry point in the ``localbench.benchmarks`` group names its plug-in class
(``install`` writes that distribution's metadata, as pip does, into a folder on the Python path).
"""

from __future__ import annotations

from pathlib import Path

ENTRY_POINT = "toy = toy_benchmark.plugin:ToySecrets"


def install(site: Path) -> Path:
    """Write the toy's distribution metadata (a dist-info folder with its entry point) into ``site``."""
    info = site / "localbench_toy-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: localbench-toy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[localbench.benchmarks]\n{ENTRY_POINT}\n")
    return info

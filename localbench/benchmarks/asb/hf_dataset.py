"""AgentSocialBench from the Hugging Face Hub (``hf:kingofspace0wzz/AgentSocialBench``).

The Hub dataset holds the same 372 scenario files as the upstream repository. It is read with the
``datasets`` library (config and split ``scenarios``); columns that the Hub stores as JSON text are
decoded. If the table lacks the columns a scenario needs (its card lists only a few), or
``datasets`` cannot build it, the raw scenario files of the dataset repository are fetched with
``huggingface_hub`` instead and read like a local clone. Either way every record goes through the
same converter as a local directory (upstream.py). Needs network, or a filled HF cache with
HF_HUB_OFFLINE=1; not exercised by the tests (no network there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localbench.benchmarks.asb.issues import ScenarioError
from localbench.errors import UserError

CONFIG = "scenarios"
SCENARIO_GLOB = "scenarios/**/*.json"


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    """Columns stored as JSON text (objects, lists) back to JSON values."""
    out = {}
    for k, v in row.items():
        if isinstance(v, str) and v[:1] in "{[":
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                pass
        out[k] = v
    return out


def _complete(row: dict[str, Any]) -> bool:
    return "scenario_id" in row and ("agents" in row or "participants" in row)


def hf_records(name: str) -> tuple[list[tuple[str, dict[str, Any]]], Path | None]:
    """(label, record) per scenario from the Hub dataset; or, on fallback, the snapshot folder.

    Returns ``(records, None)`` when the ``datasets`` table was complete, else ``([], folder)``
    with the downloaded raw files, for the caller to read as a directory.
    """
    where = f"hf:{name}"
    try:
        import datasets  # noqa: F401  (optional dependency: the `data` extra)
    except ImportError as e:
        raise UserError(f"{where}: loading from the Hugging Face Hub needs the 'datasets' package "
                        "(pip install 'localbench[data]')") from e
    reason = ""
    try:
        dd = datasets.load_dataset(name, CONFIG)
        split = dd[CONFIG] if CONFIG in dd else next(iter(dd.values()))
        rows = [_decode(dict(r)) for r in split]
        if rows and all(_complete(r) for r in rows):
            return [(f"{where}/{r.get('category', '')}/{r['scenario_id']}", r) for r in rows], None
        reason = "its table lacks the agents/participants columns"
    except Exception as e:  # datasets raises many types (network, schema cast, missing config)
        reason = f"datasets could not build it ({type(e).__name__}: {e})"
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(repo_id=name, repo_type="dataset", allow_patterns=[SCENARIO_GLOB])
    except Exception as e:
        raise ScenarioError(where, None, f"cannot load: {reason}; fetching its files failed too "
                                         f"({type(e).__name__}: {e})") from e
    root = Path(folder) / "scenarios"
    if not root.is_dir():
        raise ScenarioError(where, None, f"{reason}, and the dataset repository has no scenarios/ folder")
    return [], root

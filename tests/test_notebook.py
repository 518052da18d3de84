"""notebooks/asb_results.ipynb runs end to end on a run directory (LOCALBENCH_RUN_DIR) with nbclient."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).parent))
from report_fixtures import MODELS, make_run_dir  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "asb_results.ipynb"


@pytest.mark.timeout(180)
def test_notebook_runs_on_a_run_dir(tmp_path, monkeypatch):
    run = make_run_dir(tmp_path / "asb-nb")
    monkeypatch.setenv("LOCALBENCH_RUN_DIR", str(run))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()

    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    # every cell after the parameters shows something
    assert all(c.outputs for c in code[1:]), [c.source[:60] for c in code[1:] if not c.outputs]
    data = [o.get("data", {}) for c in code for o in c.outputs]
    markdown = "\n".join(d.get("text/markdown", "") for d in data)
    pngs = [d["image/png"] for d in data if "image/png" in d]
    assert f"Run `{run.name}`" in markdown  # it read the run named by the env var, not the default
    for title in ("Headline metrics by model at privacy level L0", "Headline metrics by model at privacy level L2",
                  "Privacy ladder", "Full and partial leakage", "Paired comparisons"):
        assert title in markdown, title
    assert all(m in markdown for m in MODELS)
    assert len(pngs) == 4 and all(len(p) > 5_000 for p in pngs)


@pytest.mark.timeout(180)
def test_notebook_reads_the_newest_asb_run_under_runs_by_default(tmp_path, monkeypatch):
    """Without LOCALBENCH_RUN_DIR it opens the newest scored asb-* run in runs/ beside notebooks/
    (where `make run` writes), not a run directory that does not exist."""
    import os
    import shutil

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    shutil.copy(NOTEBOOK, notebooks / NOTEBOOK.name)
    older = make_run_dir(tmp_path / "runs" / "asb-older")
    newest = make_run_dir(tmp_path / "runs" / "asb-newest")
    os.utime(older / "scores.json", (1_000_000_000, 1_000_000_000))
    (tmp_path / "runs" / "agentleak-x").mkdir()  # another benchmark's run is not picked
    monkeypatch.delenv("LOCALBENCH_RUN_DIR", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(notebooks / NOTEBOOK.name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(notebooks)}}).execute()
    markdown = "\n".join(o.get("data", {}).get("text/markdown", "") for c in nb.cells if c.cell_type == "code"
                         for o in c.outputs)
    assert f"Run `{newest.name}`" in markdown


@pytest.mark.timeout(240)
def test_notebook_shows_the_viewers_data_of_a_real_run(tmp_path, monkeypatch):
    """On a run with transcripts (the recorded embedded default), the last cell tabulates what the
    viewer shows: a row per simulation and the judge labels that found a leak."""
    import shutil

    run = tmp_path / "asb-d9c285b0e4"
    shutil.copytree(Path(__file__).resolve().parent / "golden" / "asb-v1-run", run)
    monkeypatch.setenv("LOCALBENCH_RUN_DIR", str(run))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    html = "\n".join(o.get("data", {}).get("text/html", "") for o in last.outputs)
    assert "n_leaks" in html and "cd-dental-budget" in html  # the simulations table
    assert "<td>privacy</td>" in html and "<td>full</td>" in html  # the leaking labels

"""The hand-off between a study's judge server job and the merge jobs it serves: a file holding the
server's base URL (``<out>/slurm/judge-<preset>.url``), written by the server job once its server
answers and removed when it ends. A merge job waits for the file and for the URL to answer."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from localbench.errors import UserError


def answers(url: str, timeout: float = 5.0) -> bool:
    """The OpenAI server at ``url`` (its /v1 base) lists its models."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=timeout) as r:
            return r.status == 200
    except (OSError, ValueError):
        return False


def server_state_file(url_file: str | Path) -> Path:
    """The state file the judge server job writes as it ends (``_lib.sh.j2``'s lb_record):
    <folder>/state/judge-<preset>.exit beside <folder>/judge-<preset>.url."""
    f = Path(url_file)
    return f.parent / "state" / f"{f.stem}.exit"


def wait_for_judge(url_file: str | Path, timeout: float, poll: float = 2.0) -> str:
    """The judge server's base URL once ``url_file`` holds one that answers; UserError after
    ``timeout`` seconds, saying whether the file never came or its server did not answer, and at
    once when the server job has ended (its state file is written) without a URL."""
    f = Path(url_file)
    ended = server_state_file(f)
    deadline = time.monotonic() + timeout
    url = ""
    while True:
        url = f.read_text().strip() if f.exists() else ""
        if url and answers(url):
            return url
        if not url and ended.exists():
            raise UserError(f"{f}: the judge server job ended without serving ({ended}: {ended.read_text().strip()}); "
                            f"see its log in {f.parent / 'logs'}, then submit the study again (`localbench study "
                            "submit STUDY.yaml`: the runs not yet reported, each resuming, with a new judge server)")
        if time.monotonic() >= deadline:
            break
        time.sleep(poll)
    if not url:
        raise UserError(f"{f}: no judge server URL within {timeout:.0f} s: the judge server job has not started "
                        f"or not come up (see `localbench study status` and its log in {f.parent / 'logs'}); "
                        "raise slurm.judge_wait if its queue is long")
    raise UserError(f"{url} (from {f}): the judge server did not answer within {timeout:.0f} s")

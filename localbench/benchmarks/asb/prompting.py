"""AgentSocialBench's prompt templates (prompts/*.j2): rendered and hashed by ``runtime.prompts``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from localbench.runtime.prompts import PromptSet

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
PROMPTS = PromptSet(PROMPTS_DIR)


def render(template: str, **context: Any) -> str:
    """One template rendered with ``context``; runs of blank lines collapsed to one, ends trimmed."""
    return PROMPTS.render(template, **context)


def template_files() -> list[Path]:
    return PROMPTS.files()


def template_hashes() -> dict[str, str]:
    """sha256 (16 hex) of each template file, by file name."""
    return PROMPTS.hashes()


@lru_cache(maxsize=1)
def prompt_set_hash() -> str:
    """One hash over all templates (names and contents): recorded with every transcript."""
    return PROMPTS.set_hash()

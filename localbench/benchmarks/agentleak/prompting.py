"""AgentLeak's prompt templates (prompts/*.j2), rendered and hashed by ``runtime.prompts``."""

from __future__ import annotations

from pathlib import Path

from localbench.runtime.prompts import PromptSet

PROMPTS = PromptSet(Path(__file__).resolve().parent / "prompts")

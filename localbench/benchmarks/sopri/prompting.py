"""SopriBench's prompt templates (prompts/*.j2), rendered strictly and hashed by ``runtime.prompts``.

One folder holds the attackers' prompts, the abductive agent's and the sanitizer's; their hashes
go into spec.yaml and every transcript. The generator's prompts (``gen_*.j2``) make scenarios,
not simulations: they are rendered from the same folder but left out of the simulation's hash, so
editing the generator does not make an old run's transcripts look like another experiment.
"""

from __future__ import annotations

from pathlib import Path

from localbench.runtime.prompts import PromptSet

FOLDER = Path(__file__).resolve().parent / "prompts"


class SimulationPrompts(PromptSet):
    """The prompt folder, hashed without the generator's templates."""

    def files(self) -> list[Path]:
        return [p for p in super().files() if not p.name.startswith("gen_")]


PROMPTS = SimulationPrompts(FOLDER)

"""What loading scenario files can report: a hard error (ScenarioError) or a warning (LoadIssue).

A ScenarioError means the file cannot be used at all (bad JSON, a missing or mistyped required
field, a graph edge naming nobody); a LoadIssue means the file loaded but something in it could not
be resolved and was handled in a stated way. Both name the file and the field. The types are
every benchmark's (``localbench.scenario_files``); this module names them for AgentSocialBench's code.
"""

from __future__ import annotations

from localbench.scenario_files import LoadIssue, ScenarioError

__all__ = ["LoadIssue", "ScenarioError"]

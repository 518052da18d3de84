"""Published AgentLeak traces imported as a run and rescored with localbench's detectors (issue 29): the
importer, the definitions of columns (b)-(d), the paper's values (a), the tables, the agreement and
the study. Registered as the benchmark ``agentleak-traces`` (plugin.py)."""

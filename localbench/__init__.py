"""localbench: agentic privacy benchmarks on open-weights models you serve yourself."""

__version__ = "0.1.0"

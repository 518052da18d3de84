"""AgentLeak: multi-agent privacy leakage over seven channels (arXiv 2602.11510)."""

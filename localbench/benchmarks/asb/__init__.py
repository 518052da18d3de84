"""AgentSocialBench (arXiv 2604.01487): 7 categories of privacy-sensitive agent coordination."""

"""Runtime shared by every benchmark: records on disk, conversation logs, the concurrent scheduler."""

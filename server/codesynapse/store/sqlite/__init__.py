"""The embedded default: the code graph and memory in one SQLite file per workspace."""

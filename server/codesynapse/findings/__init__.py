"""Findings of code analyzers (SARIF 2.1.0) as graph nodes attached to symbols and files."""

"""CodeSynapse: a live, metadata-only code graph served over LSP with budgeted answers."""

__version__ = "0.1.0"

"""Per-language hooks (see ``codesynapse.extract.hooks``)."""

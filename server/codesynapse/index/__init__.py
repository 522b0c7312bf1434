"""Indexing: the indexer, the resolver, the live updater and the index state they share."""

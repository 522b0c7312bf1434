"""Change sources (LSP document events, watched files, a watchfiles watcher) merged into one
debounced queue that drives incremental updates."""

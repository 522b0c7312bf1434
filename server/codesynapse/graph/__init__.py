"""The code graph: store protocol, backends, resolution and the in-memory symbol index."""

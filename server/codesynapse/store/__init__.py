"""Stores by backend: the ports (``store.graph.GraphStore``, ``store.memory.MemoryStore``) and
one package per backend (``store/<backend>/{graph,memory,deps}.py``) behind them."""

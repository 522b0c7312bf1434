"""HugeGraph: the code graph and memory on an Apache HugeGraph server (REST + Gremlin)."""

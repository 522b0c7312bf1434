"""Session-scoped agent memory: entities and facts in the graph store, recalled by exact,
lexical (BM25) and dense (Milvus) legs fused with RRF, hydrated and budgeted.

Entry point: :func:`codesynapse.memory.factory.open_memory`.
"""

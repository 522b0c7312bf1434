"""Neo4j: the code graph and memory on a Neo4j server (a team outgrowing one machine)."""

; YAML: mapping pairs (docs.py walks the tree itself; this query only has to compile).
(block_mapping_pair) @pair
(flow_pair) @pair

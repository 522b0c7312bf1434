; JSON: object pairs (docs.py walks the tree itself; this query only has to compile).
(pair) @pair

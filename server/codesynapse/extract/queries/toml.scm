; TOML: pairs and tables (docs.py walks the tree itself; this query only has to compile).
(pair) @pair
(table) @table

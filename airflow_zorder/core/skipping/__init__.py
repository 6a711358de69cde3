"""Data skipping: the predicate language, the project's one SQL parser (sqlglot) and the file pruning evaluator."""

"""How rows are ordered: space-filling curves, range ids, curve keys and the write choices."""

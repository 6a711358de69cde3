"""A fleet of tables under one budget: the spec, the ranking by read savings per byte, the budget and the records."""

"""Delta Lake tables: read through their log (delta_log) and a clustering rewrite committed through delta-rs (delta_commit)."""

"""Apache Iceberg tables through pyiceberg: catalogs, per-file statistics from manifests, a rewrite as one snapshot."""

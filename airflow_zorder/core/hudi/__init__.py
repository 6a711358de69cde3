"""Apache Hudi tables: the ``.hoodie/`` timeline and table config, and the latest file slices read by hudi-rs."""

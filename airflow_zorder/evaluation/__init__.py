"""Measuring a layout outside the jobs (demo and benchmarks); not shipped to Spark executors."""

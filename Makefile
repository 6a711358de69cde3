# The two commands of the README. Both install what they need into .venv first.
.PHONY: demo test bench bench-cluster install

install:
	bash scripts/bootstrap.sh

demo: install
	bash scripts/demo.sh

test: install
	bash scripts/test.sh

bench-cluster: install
	.venv/bin/python benchmarks/bench_cluster.py

# docs/benchmarks.md: data, clustering (ours, linear, delta-rs), files read + DuckDB check, query times, stats (13-21 min on a shared 2-core machine)
bench: install
	.venv/bin/python benchmarks/run_all.py

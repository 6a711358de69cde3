# The two commands of the README. Both install what they need into .venv first.
.PHONY: demo test bench-cluster install

install:
	bash scripts/bootstrap.sh

demo: install
	bash scripts/demo.sh

test: install
	bash scripts/test.sh

bench-cluster: install
	.venv/bin/python benchmarks/bench_cluster.py

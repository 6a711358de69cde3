# The two commands of the README. Both install what they need into .venv first.
.PHONY: demo test test-lowest lint format bench bench-cluster install jars

install:
	bash scripts/bootstrap.sh

demo: install
	bash scripts/demo.sh

# The object stores' connector jars for the installed Spark line (hadoop-aws + the AWS SDK bundle, ~660 MB; the
# gcs-connector; hadoop-azure), resolved with mvn into .venv/jars/<line>/<store>/ once per checkout (~/.m2 keeps the
# downloads): airflow_zorder/spark_jars.py. make demo needs none of them.
jars: install
	@command -v mvn >/dev/null 2>&1 || { echo "mvn is required to fetch the connector jars: installing Debian's maven" >&2; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >&2; }
	.venv/bin/python -m airflow_zorder.spark_jars fetch

# The whole suite in 2 pytest-xdist workers (scripts/test.sh; ~8 min on a 2-core machine).
test: install jars hudi-env
	bash scripts/test.sh

# ruff's lint rules and formatter (pyproject's [tool.ruff]); CI runs it before the tests. `make format` fixes.
lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

format: install
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

# The provider in an existing deployment of the lowest Airflow we support (pyproject's lower bounds):
# a new .venv-lowest with released Airflow + Spark provider, the project's wheel installed with plain pip
# (it may only add packages), then the Airflow-facing tests against the installed wheel in 2 pytest-xdist workers
# (~6 min on a 2-core machine: ~2 min of installs, ~4.5 min of tests).
test-lowest:
	bash scripts/test_lowest.sh

bench-cluster: install
	.venv/bin/python benchmarks/bench_cluster.py

# docs/benchmarks.md: data, clustering (ours, linear, delta-rs), files read + DuckDB check, query times, stats, the sensor on a 10,000-file Delta log,
# and never/full/incremental/liquid/hudi/optimum re-clustering over 30 daily appends in 3 scenarios at SF 0.2 (run_all.py --incremental-sf; the doc keeps
# SF1 figures from benchmarks/bench_incremental.py --sf 1 --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md) (23-35 min on a 2-core machine)
bench: install jars
	.venv/bin/python benchmarks/run_all.py

# The jobs on S3 beside local disk (issue #48): a moto server and TPC-H lineitem SF0.05, a stats run and a full re-cluster
# on each store, 3 rounds (benchmarks/bench_s3.py; ~4 min on a 2-core machine); rewrites only its section of
# docs/benchmarks.md and its key "s3" in docs/benchmarks/results.json. make bench runs it too.
.PHONY: bench-s3
bench-s3: install jars
	.venv/bin/python benchmarks/bench_s3.py --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md

# The workload advisor (issue #53): its recommended columns against the best of every 1-3 column set really laid out,
# on TPC-H lineitem and orders (SF 0.02, 64 files), three workloads each, and 10,000 statements advised
# (benchmarks/bench_advisor.py; ~10 min on a 2-core machine); rewrites only its section of docs/benchmarks.md and
# its key "advisor" in docs/benchmarks/results.json.
.PHONY: bench-advisor
bench-advisor: install
	.venv/bin/python benchmarks/bench_advisor.py --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md

# .venv-hudi: pyspark 3.5.8 + Hudi's Spark 3.5 bundle (hudi-spark3.5-bundle_2.12:1.2.0, resolved with mvn into
# .venv/jars/3.5/hudi/), every other package from .venv (issue #50: Hudi serves no bundle for Spark 4 here). The Hudi
# tests write their tables and re-cluster with it (tests/hudi_tables.py). ~1 min the first time, nothing after.
.PHONY: hudi-env
hudi-env: install
	bash scripts/hudi_env.sh

# A fleet of tables under one budget (issue #52): 50 simulated tables over 60 days (unbounded, budgeted at half its
# bytes, round-robin; a starvation-guard sweep over 5 fleets), planning 1,000 tables without Spark (synthetic stats),
# and the tests' 9 real tables planned through FleetHook (~1-2 min, no Spark); rewrites only its section of
# docs/benchmarks.md and its key "fleet" in docs/benchmarks/results.json.
.PHONY: bench-fleet
bench-fleet: install
	nice -n 10 .venv/bin/python benchmarks/sim_fleet.py --real --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md \
		--fleet-doc docs/fleet.md --hook-tables 200 --processes 0

# Watching a Hudi table of 10,000 file groups without Spark (issue #50): the table written once by Hudi's bundle under
# .venv-hudi (~10 min on 2 cores; kept in /tmp/bench-hudi-sensor), then the sensor's decision timed in a fresh process;
# rewrites only its section of docs/benchmarks.md and its key "hudi_sensor" in docs/benchmarks/results.json.
.PHONY: bench-hudi-sensor
bench-hudi-sensor: hudi-env
	.venv/bin/python benchmarks/bench_hudi_sensor.py --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md

# Apache Hudi (issue #50): our plan-driven clustering of a Hudi table beside Hudi's own run_clustering (hilbert, z-order)
# on TPC-H lineitem SF0.1 in 64 files, files read per point query by Hudi's data skipping (benchmarks/bench_hudi.py,
# Spark 3.5.8 + Hudi 1.2.0 under .venv-hudi; ~6 min on a 2-core machine); rewrites only its section of
# docs/benchmarks.md and its key "hudi" in docs/benchmarks/results.json.
.PHONY: bench-hudi
bench-hudi: install hudi-env
	.venv/bin/python benchmarks/bench_hudi.py --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md

# The field's engines beside ours (issue #51): .venv-spark41 (pyspark 4.1.2, scripts/spark_line_env.sh) and the anchors'
# jars resolved with mvn into .venv/jars/<line>/<engine>/ (benchmarks/engines_env.py: Delta 4.4.0 on Spark 4.2 and 4.1,
# Iceberg 1.11.0 + sqlite-jdbc on 4.1, Hudi 1.2.0 on 3.5 by make hudi-env). make bench-engines runs ours (on Parquet,
# Delta, Iceberg and Hudi), the sort rewrite, delta-rs, Delta OPTIMIZE ZORDER, Iceberg's zorder rewrite and Hudi's
# clustering on lineitem SF1 and the skewed table, each Spark line in its own JVM, one after another
# (benchmarks/bench_engines.py; ~2 h on a 2-core machine, Hudi's line alone ~1 h: --lines and --merge-lines split it); rewrites only its section of docs/benchmarks.md, its key
# "engines" in docs/benchmarks/results.json and its line in README.
.PHONY: engines-env bench-engines
engines-env: install jars hudi-env
	.venv/bin/python benchmarks/engines_env.py fetch

bench-engines: engines-env
	.venv/bin/python benchmarks/bench_engines.py --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md --readme README.md

# Scaling (issue #51): TPC-H lineitem SF1, SF3 and SF10 (60 million rows) in 64 files: ours, the sort rewrite and the
# fastest anchor of the engines run (its key in results.json), on that anchor's Spark line: time, peak JVM and Python
# worker memory, bytes spilled, files read (benchmarks/bench_scale.py; ~45 min on a 2-core machine, ~20 GB of disk in
# .bench/scale); rewrites only its section of docs/benchmarks.md and its key "scale" in docs/benchmarks/results.json.
.PHONY: bench-scale
bench-scale: engines-env
	.venv/bin/python benchmarks/bench_scale.py --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md

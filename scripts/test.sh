#!/usr/bin/env bash
# Run the test suite with the project's interpreter for the Spark driver and workers.
#
# Without arguments (make test): the whole suite, in ZORDER_TEST_WORKERS (default 2) pytest-xdist workers, a test
# module never split between two (--dist loadfile; the longest modules first, see tests/conftest.py). Each worker
# has its own Airflow home, metadata DB and SparkSession; many tests mostly wait (dag.test() runs, sensor pokes,
# spark-submit's JVM start, the api-server and the browser), so two workers keep both cores busy.
# With arguments: pytest with exactly those (add -n 2 for workers). ZORDER_TEST_WORKERS=0: one process.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYSPARK_PYTHON="$(pwd)/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PYSPARK_PYTHON"
export SPARK_LOCAL_IP=127.0.0.1
workers=${ZORDER_TEST_WORKERS:-2}
if [ $# -eq 0 ] && [ "$workers" != 0 ]; then
  set -- -n "$workers" --dist loadfile --no-loadscope-reorder
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"

#!/usr/bin/env bash
# Run the test suite with the project's interpreter for the Spark driver and workers.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYSPARK_PYTHON="$(pwd)/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PYSPARK_PYTHON"
export SPARK_LOCAL_IP=127.0.0.1
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"

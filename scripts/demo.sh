#!/usr/bin/env bash
# The README's main command: generate a scrambled sample table, re-cluster it with the
# real spark-submit on local Spark, and print what changed (files a point query reads).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYSPARK_PYTHON="$(pwd)/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PYSPARK_PYTHON"
export SPARK_LOCAL_IP=127.0.0.1
DEMO=${DEMO_DIR:-$(pwd)/.demo}
rm -rf "$DEMO" && mkdir -p "$DEMO"
.venv/bin/python -m airflow_zorder.sample_data "$DEMO/events" --rows 400000 --files-per-partition 8
.venv/bin/python scripts/layout_report.py "$DEMO/events" user_id,product_id --json "$DEMO/before.json"
.venv/bin/spark-submit --master 'local[2]' --conf spark.ui.enabled=false \
  --conf spark.sql.shuffle.partitions=8 \
  spark_jobs/cluster_table.py --table "$DEMO/events" --columns user_id,product_id \
  --curve hilbert --num-files 8 --result-json "$DEMO/result.json" > "$DEMO/spark-submit.log" 2>&1 \
  || { tail -30 "$DEMO/spark-submit.log"; exit 1; }
.venv/bin/python scripts/layout_report.py "$DEMO/events" user_id,product_id \
  --json "$DEMO/after.json" --before "$DEMO/before.json" --result "$DEMO/result.json"

#!/usr/bin/env bash
# The README's main command (`make demo`, after `make install`): generate a scrambled sample table and run
# the example DAG zorder_recluster_table with `airflow dags test` -- local Spark through the operators'
# real spark-submit, a throw-away SQLite Airflow home in .demo/airflow -- then print its before/after table
# and what real readers read for one point query per clustering column, before and after
# (airflow_zorder.evaluation.reader_check); then the same rows as a Delta Lake table through
# zorder_recluster_delta_table; then as an Apache Iceberg table (a SQL catalog on SQLite, .demo/.pyiceberg.yaml)
# through zorder_recluster_iceberg_table; last, the plan of one fleet run over those tables and three more
# (scripts/demo_fleet.py: the zorder_fleet DAG's plan task, no Spark).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
DEMO=${DEMO_DIR:-$REPO/.demo}
export PATH="$REPO/.venv/bin:$PATH"
export PYSPARK_PYTHON="$REPO/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PYSPARK_PYTHON"
export SPARK_LOCAL_IP=127.0.0.1
export AIRFLOW_HOME="$DEMO/airflow"
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__LOGGING__LOGGING_LEVEL=WARNING
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'
export ZORDER_TABLE="$DEMO/events"
export ZORDER_DELTA_TABLE="$DEMO/events_delta"
export ZORDER_HUDI_TABLE="$DEMO/events_hudi"
export PYICEBERG_HOME="$DEMO"  # the demo's Iceberg catalog: .demo/.pyiceberg.yaml
export ZORDER_ICEBERG_CATALOG=zorderdemo ZORDER_ICEBERG_TABLE=demo.events
# A partition of the sample (100,000 rows) is ~4 MB of Parquet: the sensor's incremental plan and the job
# write round(bytes / target) files, so 500KB gives 8 clustered files per partition (the DAG's default,
# 512MB, would compact each partition into one file: no clustering to see).
TARGET_FILE_SIZE=500KB

rm -rf "$DEMO" && mkdir -p "$AIRFLOW_HOME"
python -m airflow_zorder.evaluation.sample_data "$ZORDER_TABLE" --rows 400000 --files-per-partition 8
# what a reader reads before: the DAG rewrites the files in place, so measure (and keep the queried values) now
python -m airflow_zorder.evaluation.reader_check "$ZORDER_TABLE" --columns user_id,product_id \
  --save "$DEMO/reads-before.json" > /dev/null
airflow db migrate > "$DEMO/airflow-db.log" 2>&1 || { tail -30 "$DEMO/airflow-db.log"; exit 1; }
echo "running the DAG zorder_recluster_table (airflow dags test; log: $DEMO/dag-test.log)"
start=$(date +%s)
airflow dags test zorder_recluster_table -c "{\"target_file_size\": \"$TARGET_FILE_SIZE\"}" > "$DEMO/dag-test.log" 2>&1 \
  || { tail -40 "$DEMO/dag-test.log"; exit 1; }
echo "DAG run finished in $(( $(date +%s) - start )) s"
python scripts/demo_report.py zorder_recluster_table compare
echo
python -m airflow_zorder.evaluation.reader_check "$ZORDER_TABLE" --before "$DEMO/reads-before.json"
python - <<'PY'
from airflow_zorder.core.policy.point_queries import ideal_point_query_fraction
share = ideal_point_query_fraction(8, 2)
print(f"(the best any layout can do with 2 clustering columns and 8 files per partition: about {8 * share:.1f} of "
      f"each partition's 8 files, {share:.0%}; a value that fills several files, like a hot user_id, reads more)")
PY

echo
echo "the same rows as a Delta Lake table: the sensor decides from its _delta_log/, the job commits one Delta version"
python -m airflow_zorder.evaluation.sample_data "$ZORDER_DELTA_TABLE" --rows 400000 --files-per-partition 8 --delta
python -m airflow_zorder.evaluation.reader_check "$ZORDER_DELTA_TABLE" --columns user_id,product_id \
  --save "$DEMO/reads-before-delta.json" > /dev/null
start=$(date +%s)
airflow dags test zorder_recluster_delta_table -c "{\"target_file_size\": \"$TARGET_FILE_SIZE\"}" > "$DEMO/dag-test-delta.log" 2>&1 \
  || { tail -40 "$DEMO/dag-test-delta.log"; exit 1; }
echo "DAG run finished in $(( $(date +%s) - start )) s"
python scripts/demo_report.py zorder_recluster_delta_table compare
echo
python -m airflow_zorder.evaluation.reader_check "$ZORDER_DELTA_TABLE" --before "$DEMO/reads-before-delta.json"
python - <<'PY'
import json, os
from deltalake import DeltaTable
entry = DeltaTable(os.environ["ZORDER_DELTA_TABLE"]).history(1)[0]
print(f"Delta history: version {entry['version']} {entry['operation']}, zorder = {json.loads(entry['zorder'])}")
PY

echo
echo "the same rows as an Apache Iceberg table: the sensor decides from its manifests, the job commits one replace snapshot"
mkdir -p "$DEMO/iceberg/warehouse"
cat > "$DEMO/.pyiceberg.yaml" <<YAML
catalog:
  zorderdemo:
    type: sql
    uri: sqlite:///$DEMO/iceberg/catalog.db
    warehouse: file://$DEMO/iceberg/warehouse
YAML
python -m airflow_zorder.evaluation.sample_data "$ZORDER_ICEBERG_TABLE" --iceberg-catalog "$ZORDER_ICEBERG_CATALOG" \
  --rows 400000 --files-per-partition 8
python -m airflow_zorder.evaluation.reader_check "$ZORDER_ICEBERG_TABLE" --iceberg-catalog "$ZORDER_ICEBERG_CATALOG" \
  --columns user_id,product_id --save "$DEMO/reads-before-iceberg.json" > /dev/null
start=$(date +%s)
airflow dags test zorder_recluster_iceberg_table -c "{\"target_file_size\": \"$TARGET_FILE_SIZE\"}" \
  > "$DEMO/dag-test-iceberg.log" 2>&1 || { tail -40 "$DEMO/dag-test-iceberg.log"; exit 1; }
echo "DAG run finished in $(( $(date +%s) - start )) s"
python scripts/demo_report.py zorder_recluster_iceberg_table compare
echo
python -m airflow_zorder.evaluation.reader_check "$ZORDER_ICEBERG_TABLE" --iceberg-catalog "$ZORDER_ICEBERG_CATALOG" \
  --before "$DEMO/reads-before-iceberg.json"
python - <<'PY'
import os
from airflow_zorder.core.iceberg.catalogs import load_catalog
snap = load_catalog(os.environ["ZORDER_ICEBERG_CATALOG"]).load_table(os.environ["ZORDER_ICEBERG_TABLE"]).current_snapshot()
summary = {k: v for k, v in snap.summary.additional_properties.items() if k.startswith(("zorder.", "added-data", "deleted-data"))}
print(f"Iceberg snapshot {snap.snapshot_id}: {snap.summary.operation.value}, {summary}")
PY

echo
echo "the same rows as an Apache Hudi table: the sensor decides from its timeline, Hudi's own clustering runs the plan"
if bash scripts/hudi_env.sh > "$DEMO/hudi-env.log" 2>&1; then
  python -m airflow_zorder.evaluation.sample_data "$DEMO/events_hudi_src" --rows 400000 --files-per-partition 8
  PYSPARK_PYTHON="$REPO/.venv-hudi/bin/python" PYSPARK_DRIVER_PYTHON="$REPO/.venv-hudi/bin/python" \
    .venv-hudi/bin/python scripts/demo_hudi_table.py "$DEMO/events_hudi_src" "$ZORDER_HUDI_TABLE" 2> "$DEMO/hudi-write.log" \
    || { tail -20 "$DEMO/hudi-write.log"; exit 1; }
  start=$(date +%s)
  airflow dags test zorder_recluster_hudi_table -c "{\"target_file_size\": \"$TARGET_FILE_SIZE\"}" \
    > "$DEMO/dag-test-hudi.log" 2>&1 || { tail -40 "$DEMO/dag-test-hudi.log"; exit 1; }
  echo "DAG run finished in $(( $(date +%s) - start )) s"
  python scripts/demo_report.py zorder_recluster_hudi_table compare
  python - <<'PY'
import os
import hudi
t = hudi.HudiTableBuilder.from_base_uri(os.environ["ZORDER_HUDI_TABLE"]).build()
done = t.get_timeline().get_completed_replacecommits()
rows = sum(batch.num_rows for batch in t.read())  # hudi-rs's snapshot read: the latest slices only
print(f"Hudi timeline: replacecommit {done[-1].timestamp} (Hudi's clustering); hudi-rs reads "
      f"{len(t.get_file_slices())} base files and {rows:,} rows")
PY
else
  echo "Hudi part skipped: Hudi's Spark line could not be set up here ($(tail -1 "$DEMO/hudi-env.log"); log: $DEMO/hudi-env.log)"
fi

echo
echo "a fleet under one budget: one run of the zorder_fleet DAG's plan over the demo's tables and three more (no Spark)"
python scripts/demo_fleet.py "$DEMO" --budget 2MB 2> "$DEMO/fleet.log" || { tail -20 "$DEMO/fleet.log"; exit 1; }

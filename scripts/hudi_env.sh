#!/usr/bin/env bash
# .venv-hudi: the Spark line whose Hudi bundle is served here (pyspark 3.5.8 + hudi-spark3.5-bundle_2.12:1.2.0), beside
# .venv (Spark 4.2, whose line has no Hudi bundle on this machine's Maven mirror). Only pyspark 3.5.8 (+ its py4j) is
# installed into it (scripts/spark_line_env.sh); every other package (this project, pyarrow, hudi, ...) comes from .venv
# through a .pth file that adds .venv's site-packages after .venv-hudi's own, so pyspark 3.5.8 wins. The bundle jar is resolved with mvn into
# .venv/jars/3.5/hudi/ (airflow_zorder/hudi_spark.py; 77 MB, once per machine in ~/.m2). Idempotent; 59 s here the
# first time without pip's cache (pyspark 3.5.8 is a ~320 MB sdist; the venv is 372 MB), nothing after.
# HUDI_VENV overrides the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "no .venv: run make install first" >&2; exit 1; }
VENV=${HUDI_VENV:-.venv-hudi}
PYSPARK_VERSION=3.5.8
bash scripts/spark_line_env.sh "$VENV" "$PYSPARK_VERSION"
if ! command -v mvn >/dev/null 2>&1; then
  echo "mvn is required to fetch Hudi's bundle: installing Debian's maven" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven) >&2
fi
.venv/bin/python -m airflow_zorder.hudi_spark fetch --line 3.5 > /dev/null
"$VENV/bin/python" -c 'import pyspark, airflow_zorder; assert pyspark.__version__ == "'$PYSPARK_VERSION'", pyspark.__version__'
echo "Hudi's Spark line in $(cd "$VENV" && pwd) (pyspark $PYSPARK_VERSION), bundle: $(.venv/bin/python -m airflow_zorder.hudi_spark jars)" >&2

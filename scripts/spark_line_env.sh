#!/usr/bin/env bash
# A virtualenv for another Spark line beside .venv (Spark 4.2): only pyspark of that line (+ its py4j) is installed
# into it; every other package (this project, pyarrow, deltalake, ...) comes from .venv through a .pth file that adds
# .venv's site-packages after the venv's own, so its pyspark wins (the way scripts/hudi_env.sh makes .venv-hudi).
#   bash scripts/spark_line_env.sh VENV PYSPARK_VERSION     e.g. .venv-spark41 4.1.2 (make engines-env)
# Idempotent (a stamp file per version); ~1 min the first time (pip's cache keeps the wheel), nothing after.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 VENV PYSPARK_VERSION" >&2; exit 2; }
[ -x .venv/bin/python ] || { echo "no .venv: run make install first" >&2; exit 1; }
VENV=$1
PYSPARK_VERSION=$2
stamp=$VENV/.installed-pyspark-$PYSPARK_VERSION
if [ ! -f "$stamp" ]; then
  rm -rf "$VENV"
  .venv/bin/python -c 'import sys, venv; venv.create(sys.argv[1], with_pip=True)' "$VENV"
  if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check "pyspark==$PYSPARK_VERSION" > "$VENV/install.log" 2>&1; then
    tail -30 "$VENV/install.log" >&2
    exit 1
  fi
  own=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  base=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # an `import` line: site.addsitedir also runs .venv's own .pth files (the project's editable install)
  echo "import site; site.addsitedir('$(cd "$base" && pwd -P)')" > "$own/zz-airflow-zorder-venv.pth"
  touch "$stamp"
fi
"$VENV/bin/python" -c 'import pyspark, airflow_zorder; assert pyspark.__version__ == "'$PYSPARK_VERSION'", pyspark.__version__'
echo "Spark $PYSPARK_VERSION in $(pwd)/$VENV" >&2

#!/usr/bin/env bash
# Does the provider fit an existing Airflow deployment of the lowest release we support?
#
# 1. .venv-lowest (always new) holds a deployment made the way Airflow documents it: a released
#    apache-airflow==$LOWEST_AIRFLOW resolved as on its release day (pip --uploaded-prior-to stands in for
#    its constraints file, which is not on a package registry), then the Spark provider at the lower bound
#    of our range, added later with Airflow pinned. Resolved today, an old Airflow gets today's libraries,
#    which it may not work with (Airflow 3.2.0 with fastapi >= 0.137 fails in its own execution API; 3.3
#    caps fastapi): that is why deployments install under constraints.
# 2. The project's wheel, built from a copy of the current work tree, installed with a plain
#    `pip install <wheel>` (no extras, no constraints, no date): no package already there may change
#    version (only additions), and `pip check` must be clean.
# 3. The test-only dependencies (the wheel's dev, amazon and spark extras at today's releases, with pyspark
#    at the installed pyspark-client's version and the amazon provider at our lower bound), with Airflow
#    pinned; then the Airflow-facing tests run with .venv-lowest/bin/pytest from a directory outside the
#    repo, so that they import the installed wheel (a guard plugin checks it).
#
# Knobs (environment): LOWEST_AIRFLOW, LOWEST_AIRFLOW_AS_OF, LOWEST_SPARK_PROVIDER, LOWEST_AMAZON_PROVIDER,
# LOWEST_AS_OF, LOWEST_VENV, PYTHON, ZORDER_TEST_WORKERS (pytest-xdist workers for the default test paths, as in
# scripts/test.sh: default 2, 0 = one process); arguments go to pytest instead of the default test paths below.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
AIRFLOW_VERSION=${LOWEST_AIRFLOW:-3.2.0}          # = the lower bound of apache-airflow in pyproject.toml
SPARK_PROVIDER=${LOWEST_SPARK_PROVIDER:-6.1.0}    # = the lower bound of apache-airflow-providers-apache-spark
AMAZON_PROVIDER=${LOWEST_AMAZON_PROVIDER:-9.20.0}  # = the lower bound of the amazon extra
AIRFLOW_AS_OF=${LOWEST_AIRFLOW_AS_OF:-2026-04-08T00:00:00Z}  # the day Airflow 3.2.0 reached PyPI
AS_OF=${LOWEST_AS_OF:-2026-06-15T00:00:00Z}  # the Spark provider: the week 6.1.0 reached PyPI
TESTS=(tests/airflow tests/ui tests/reliability/test_connections.py)
VENV=${LOWEST_VENV:-$REPO/.venv-lowest}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
work=$(mktemp -d "${TMPDIR:-/tmp}/zorder-lowest-XXXXXX")
trap 'rm -rf "$work"' EXIT
t0=$SECONDS

say() { echo "== test-lowest [$((SECONDS - t0)) s]: $*" >&2; }
fail() { echo "test-lowest FAILED: $*" >&2; exit 1; }
pip_() { "$VENV/bin/python" -m pip --disable-pip-version-check "$@"; }
quiet() {  # run a command with its output in $work/<name>.log, shown (tail) only on failure
  local name=$1; shift
  "$@" > "$work/$name.log" 2>&1 || { tail -40 "$work/$name.log" >&2; fail "$name: $*"; }
}
freeze() { pip_ freeze --all | grep -viE '^(airflow-zorder|airflow_zorder)[= @]' | LC_ALL=C sort; }
version_of() { "$VENV/bin/python" -c 'import sys; from importlib.metadata import version; print(version(sys.argv[1]))' "$1"; }

# ------------------------------------------------------------------ 1. the existing deployment
say "a deployment: apache-airflow==$AIRFLOW_VERSION as of $AIRFLOW_AS_OF"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
quiet pip-upgrade pip_ install --upgrade pip
quiet airflow pip_ install --uploaded-prior-to "$AIRFLOW_AS_OF" "apache-airflow==$AIRFLOW_VERSION"
say "the deployment adds apache-airflow-providers-apache-spark==$SPARK_PROVIDER as of $AS_OF"
quiet spark-provider pip_ install --uploaded-prior-to "$AS_OF" \
  "apache-airflow==$AIRFLOW_VERSION" "apache-airflow-providers-apache-spark==$SPARK_PROVIDER"
freeze > "$work/before.txt"

# ------------------------------------------------------------------ 2. the project's wheel, plain pip install
say "the project's wheel from the current work tree"
# A copy of the tree's files (tracked and new, not ignored): a stale build/ or *.egg-info never reaches the wheel.
mkdir "$work/src" "$work/wheel"
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
  | (cd "$REPO" && xargs -0 -r sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' _) \
  | tar -C "$REPO" --null -T - -cf - | tar -C "$work/src" -xf -
quiet wheel pip_ wheel --no-deps -w "$work/wheel" "$work/src"
wheel=$(ls "$work"/wheel/airflow_zorder-*.whl)
# The wheel holds exactly the packages' files of the tree, byte for byte.
"$VENV/bin/python" - "$wheel" "$work/src" <<'EOF' || fail "the wheel is not the current tree's packages"
import sys, zipfile
from pathlib import Path
wheel, src = sys.argv[1], Path(sys.argv[2])
with zipfile.ZipFile(wheel) as zf:
    inside = {n: zf.read(n) for n in zf.namelist() if n.split("/")[0] in ("airflow_zorder", "spark_jobs")}
tree = {p.relative_to(src).as_posix(): p.read_bytes() for top in ("airflow_zorder", "spark_jobs")
        for p in (src / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
py = {n for n in tree if n.endswith((".py", ".html", "py.typed"))}
missing = sorted(n for n in py if n not in inside)
differ = sorted(n for n in py if n in inside and inside[n] != tree[n])
extra = sorted(n for n in inside if n.endswith(".py") and n not in tree)
for what, names in (("missing from the wheel", missing), ("different in the wheel", differ), ("only in the wheel", extra)):
    if names:
        print(f"{what}: {', '.join(names)}", file=sys.stderr)
print(f"{Path(wheel).name}: {len(inside)} files, {len(py)} sources of the tree", file=sys.stderr)
sys.exit(1 if missing or differ or extra else 0)
EOF
say "pip install $(basename "$wheel") (no extras, no constraints)"
quiet install-wheel pip_ install "$wheel"
freeze > "$work/after.txt"
changed=$(LC_ALL=C comm -23 "$work/before.txt" "$work/after.txt")
added=$(LC_ALL=C comm -13 "$work/before.txt" "$work/after.txt")
echo "added by the wheel: $(echo ${added:-nothing})" >&2
if [ -n "$changed" ]; then
  echo "these packages of the deployment changed version or went away:" >&2
  for line in $changed; do
    name=${line%%==*}
    echo "  $line -> $(grep -i "^$name==" "$work/after.txt" || echo removed)" >&2
  done
  fail "installing the wheel changed the deployment"
fi
quiet pip-check pip_ check
say "the deployment is unchanged (only additions) and pip check is clean"

# ------------------------------------------------------------------ 3. test dependencies, then the tests
client=$(version_of pyspark-client)
core=$(version_of apache-airflow-core)
sdk=$(version_of apache-airflow-task-sdk)
cat > "$work/keep.txt" <<EOF
apache-airflow==$AIRFLOW_VERSION
apache-airflow-core==$core
apache-airflow-task-sdk==$sdk
apache-airflow-providers-apache-spark==$SPARK_PROVIDER
apache-airflow-providers-amazon==$AMAZON_PROVIDER
pyspark-client==$client
pyspark==$client
EOF
say "test dependencies: the wheel's dev, amazon and spark extras (pyspark==$client, amazon provider $AMAZON_PROVIDER)"
quiet test-deps pip_ install -c "$work/keep.txt" "$wheel[dev,amazon,spark]"
[ "$(version_of apache-airflow)" = "$AIRFLOW_VERSION" ] || fail "apache-airflow is $(version_of apache-airflow) now"
freeze > "$work/tests.txt"
echo "the test tools changed: $(LC_ALL=C comm -23 "$work/after.txt" "$work/tests.txt" | tr '\n' ' ')" >&2
quiet pip-check-tests pip_ check
"$VENV/bin/python" -m airflow_zorder.spark_versions || fail "pyspark and pyspark-client differ"
# The S3 tests run Spark through s3a://: this deployment's Spark line's hadoop-aws, in the project's jar cache
# (the wheel cannot know the checkout's .venv/jars), fetched with mvn once per machine (~/.m2 keeps it).
export AIRFLOW_ZORDER_JARS_DIR="$REPO/.venv/jars"
quiet jars "$VENV/bin/python" -m airflow_zorder.spark_jars fetch --store s3a
say "connector jars for Spark $(version_of pyspark): $("$VENV/bin/python" -m airflow_zorder.spark_jars jars s3a | tr ',' '\n' | xargs -n1 basename | tr '\n' ' ')"
echo "test env: $(grep -iE '^(apache-airflow|apache-airflow-core|apache-airflow-task-sdk|apache-airflow-providers-[a-z-]+|pyspark|pyspark-client|pyarrow|numpy|boto3|moto)==' \
  <(freeze) | tr '\n' ' ')" >&2

# A pytest plugin that proves (and prints) which airflow_zorder the test session imports.
mkdir "$work/guard"
cat > "$work/guard/lowest_guard.py" <<'EOF'
import os

import pytest

import airflow_zorder
import spark_jobs


def pytest_sessionstart(session):
    site = os.path.realpath(os.environ["ZORDER_LOWEST_SITE"])
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for mod in (airflow_zorder, spark_jobs):
        if not os.path.realpath(mod.__file__).startswith(site + os.sep):
            raise pytest.UsageError(f"{mod.__name__} comes from {mod.__file__}, not the installed wheel in {site}")
        if reporter is not None:
            reporter.write_line(f"{mod.__name__} from {mod.__file__}")
EOF
export ZORDER_LOWEST_SITE
ZORDER_LOWEST_SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export PYTHONPATH="$work/guard"
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$PYSPARK_PYTHON"
export SPARK_LOCAL_IP=127.0.0.1
workers=${ZORDER_TEST_WORKERS:-2}
xdist=()
if [ $# -eq 0 ] && [ "$workers" != 0 ]; then  # as scripts/test.sh: whole modules per worker, the longest first
  xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
[ $# -gt 0 ] || set -- "${TESTS[@]/#/$REPO/}"
say "pytest on Airflow $AIRFLOW_VERSION: ${xdist[*]} $*"
# The console script from outside the repo: neither the cwd nor the repo is on sys.path (python -m pytest
# would put the cwd there); rootdir and options still come from the repo's pyproject.toml.
mkdir "$work/run"
set +e
(cd "$work/run" && "$VENV/bin/pytest" -c "$REPO/pyproject.toml" --rootdir "$REPO" -q -p no:cacheprovider \
  -p lowest_guard "${xdist[@]}" "$@")
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "the Airflow-facing tests on apache-airflow==$AIRFLOW_VERSION (pytest exit $rc, after $((SECONDS - t0)) s)"

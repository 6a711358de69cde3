#!/usr/bin/env bash
# Create .venv (if needed) and install the project with all its extras (a local Spark, the amazon provider,
# dev and bench tools, the Google and Azure providers for the GCS, Azure and Dataproc tests) under constraints.txt: the exact pins of the repo's own dev environment.
# Idempotent: a second run only checks that the install is current.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if ! command -v java >/dev/null 2>&1; then
  echo "Java is required for Spark: installing Debian's openjdk-17-jre-headless" >&2
  (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless) >&2
fi
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt scripts/azurite/package-lock.json | sha1sum | cut -c1-12)
if [ -f "$stamp" ]; then exit 0; fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt \
    -e ".[spark,amazon,dev,bench,google,azure]" > .venv/install.log 2>&1; then
  tail -40 .venv/install.log >&2
  exit 1
fi
# pyspark and pyspark-client (from the Spark provider) share the pyspark/ folder: same version or a clear error
.venv/bin/python -m airflow_zorder.spark_versions
# Azurite (the Azure Storage emulator the Azure tests start) from npm, at the versions of scripts/azurite's lock file
if command -v npm >/dev/null 2>&1; then
  mkdir -p .venv/azurite && cp scripts/azurite/package.json scripts/azurite/package-lock.json .venv/azurite/
  if ! (cd .venv/azurite && npm ci --no-audit --no-fund --loglevel=error > npm.log 2>&1); then
    tail -20 .venv/azurite/npm.log >&2
    exit 1
  fi
else
  echo "npm not found: the Azure tests will skip (install Node.js 18+ for Azurite)" >&2
fi
rm -f .venv/.installed-*
touch "$stamp"
echo "installed into $(pwd)/.venv" >&2

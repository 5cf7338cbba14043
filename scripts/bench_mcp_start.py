#!/usr/bin/env python3
"""How long an agent waits for `memex mcp`: spawn to the answer of `initialize` and of `tools/list`.

An agent starts the MCP server with every session and waits for its tool
list (Codex leaves a server that has not sent it out of the turn that
starts meanwhile). Each run starts `memex --vault V mcp` as the agents do,
sends `initialize`, `notifications/initialized` and `tools/list` over stdio,
and times both answers from the spawn; then one `memory_search` call (the
vault and the model load once the tools are listed). "cached": the
handshake's answers are in the user's cache (every start but the first);
"first_start" (--first-start): each run with an empty cache. "one_shot": a
cached start whose session calls no tool and ends 1.5 s after its tool list
(a one-shot agent turn that used no memex tool). Every run also gives the
CPU seconds the server process used in all (user + system). The vault holds
--memories memories. Prints one JSON object with every run's figures, their
medians and the load average.

    .venv/bin/python scripts/bench_mcp_start.py [--runs 7] [--memories 200] [--first-start]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from memex.vault import Vault, init_vault

MEMEX = str(Path(sys.executable).with_name("memex"))
ONE_SHOT_HOLD = 1.5  # seconds a one-shot session lasts after its tool list
TOPICS = ["deploys", "database", "editor", "tests", "reviews", "logging", "caching", "releases", "docs", "ci"]


def _send(pipe: IO[str], message: dict[str, Any]) -> None:
    pipe.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    pipe.flush()


def _answer(pipe: IO[str], wanted: int) -> dict[str, Any]:
    while True:
        line = pipe.readline()
        if not line:
            raise SystemExit("memex mcp closed its output")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == wanted:
            return message


def one_run(root: Path, cache: Path | None = None, call: bool = True) -> dict[str, float]:
    env = {**os.environ, "MEMEX_WARM": "0"}
    if cache is not None:  # a cache of its own: as the first start on a machine
        env["MEMEX_CACHE_DIR"] = str(cache)
    start = time.perf_counter()
    proc = subprocess.Popen([MEMEX, "--vault", str(root), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _send(proc.stdin, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        _answer(proc.stdout, 1)
        initialized = time.perf_counter() - start
        _send(proc.stdin, {"method": "notifications/initialized"})
        _send(proc.stdin, {"id": 2, "method": "tools/list"})
        tools = _answer(proc.stdout, 2)["result"]["tools"]
        listed = time.perf_counter() - start
        assert any(t["name"] == "memory_search" for t in tools)
        searched = 0.0
        if call:
            _send(proc.stdin, {"id": 3, "method": "tools/call",
                               "params": {"name": "memory_search", "arguments": {"query": "caching rules"}}})
            _answer(proc.stdout, 3)
            searched = time.perf_counter() - start
        else:
            time.sleep(ONE_SHOT_HOLD)
    finally:
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
    return {"initialize_s": initialized, "tools_list_s": listed, "first_search_s": searched,
            "cpu_s": usage.ru_utime + usage.ru_stime}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--first-start", action="store_true",
                        help="also time starts with an empty cache (the first on a machine, or after an upgrade)")
    args = parser.parse_args()
    report: dict[str, Any] = {"runs": args.runs, "memories": args.memories, "loadavg_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        with Vault(root) as vault:
            for i in range(args.memories):
                vault.add(f"Fact {i}: the team's rule number {i} about {TOPICS[i % len(TOPICS)]} is to keep item "
                          f"{i * 7} small", scope="user")
        one_run(root)  # warm-up: the file cache, the model's saved graph, the handshake's answers
        runs = {"cached": [one_run(root) for _ in range(args.runs)],
                "one_shot": [one_run(root, call=False) for _ in range(args.runs)]}
        if args.first_start:
            runs["first_start"] = [one_run(root, Path(tmp) / f"cache-{n}") for n in range(args.runs)]
    for case, found in runs.items():
        for key in ("initialize_s", "tools_list_s", "first_search_s", "cpu_s"):
            if case == "one_shot" and key == "first_search_s":
                continue
            report[f"{case}_{key}"] = [round(r[key], 3) for r in found]
            report[f"{case}_{key[:-2]}_median_s"] = round(statistics.median(r[key] for r in found), 3)
    report["loadavg_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

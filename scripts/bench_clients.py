#!/usr/bin/env python3
"""What memex adds to a real agent's turn: the same one-shot prompt with and without memex.

Runs the pinned Claude Code (`claude -p`) and Codex (`codex exec`) from
.node/clients/ (`bash scripts/clients_env.sh`) against the fake model server
(tests/fake_model_server.py, which answers at once), each in a throwaway
HOME: once as installed by `memex install claude-code` + `memex install mcp`
(Codex: `memex install codex` + `memex install mcp --agent codex`, hooks run
with --dangerously-bypass-hook-trust), once with nothing of memex. The two
alternate (A B A B ...), so a machine whose load drifts slows both alike;
each run is timed from spawn to exit (what a user waits for).

The first memex run of a vault starts its warm server (the session's first
hook finds none); it is reported apart from the others. The vault holds
--memories memories. Prints one JSON object: per client, the wall seconds
of each run, the medians, the median of the per-pair ratios and the
difference, and the load average before and after.

    .venv/bin/python scripts/bench_clients.py [--runs 7] [--memories 200] [--client claude-code|codex|both]
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import clientkit  # noqa: E402 - the tests' harness, not part of memex
from tests.fake_model_server import FakeModelServer  # noqa: E402

from memex.vault import Vault  # noqa: E402

PROMPT = "How do we handle caching in this project?"
TOPICS = ["deploys", "database", "editor", "tests", "reviews", "logging", "caching", "releases", "docs", "ci"]
SETTLE = 3.0  # seconds between runs: the previous run's after-the-answer work ends meanwhile


def _fill(world: clientkit.World, count: int) -> None:
    with Vault(world.vault) as vault:
        for i in range(count):
            vault.add(f"Fact {i}: the team's rule number {i} about {TOPICS[i % len(TOPICS)]} is to keep item "
                      f"{i * 7} small", scope="user" if i % 2 else "project:shop")


def _run(command: list[str], world: clientkit.World, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=world.project, env=env, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {done.stderr[-2000:]}")
    return took


def bench(client: str, runs: int, memories: int, base: Path) -> dict[str, Any]:
    # The warm server outlives the runs by warm_seconds, then exits by itself.
    with_memex = clientkit.make_world(base / f"{client}-memex", warm_seconds=30)
    bare = clientkit.make_world(base / f"{client}-bare")
    _fill(with_memex, memories)
    with FakeModelServer() as model:
        if client == "claude-code":
            command = [*clientkit.claude_command(), "-p", PROMPT]
            with_memex.memex("install", "claude-code")
            with_memex.memex("install", "mcp")
            envs = {"memex": clientkit.claude_env(with_memex, model.url), "bare": clientkit.claude_env(bare, model.url)}
        else:
            command = [*clientkit.codex_command(), "exec", "--dangerously-bypass-hook-trust",
                       "--skip-git-repo-check", PROMPT]
            for world in (with_memex, bare):
                clientkit.codex_config(world, model.url)
            with_memex.memex("install", "codex")
            with_memex.memex("install", "mcp", "--agent", "codex")
            envs = {"memex": clientkit.codex_env(with_memex), "bare": clientkit.codex_env(bare)}
        worlds = {"memex": with_memex, "bare": bare}
        first = _run(command, with_memex, envs["memex"])  # starts the vault's warm server
        time.sleep(SETTLE)
        times: dict[str, list[float]] = {"memex": [], "bare": []}
        for _ in range(runs):
            for name in ("memex", "bare"):
                times[name].append(_run(command, worlds[name], envs[name]))
                time.sleep(SETTLE)
    ratios = [a / b for a, b in zip(times["memex"], times["bare"])]
    return {
        "first_memex_run_s": round(first, 2),
        "memex_s": [round(t, 2) for t in times["memex"]], "bare_s": [round(t, 2) for t in times["bare"]],
        "memex_median_s": round(statistics.median(times["memex"]), 2),
        "bare_median_s": round(statistics.median(times["bare"]), 2),
        "added_median_s": round(statistics.median(a - b for a, b in zip(times["memex"], times["bare"])), 2),
        "ratio_median": round(statistics.median(ratios), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--client", choices=("claude-code", "codex", "both"), default="both")
    args = parser.parse_args()
    report: dict[str, Any] = {"runs": args.runs, "memories": args.memories, "loadavg_start": os.getloadavg()}
    clients = ("claude-code", "codex") if args.client == "both" else (args.client,)
    with tempfile.TemporaryDirectory() as tmp:
        for client in clients:
            try:
                report[client] = bench(client, args.runs, args.memories, Path(tmp))
            except clientkit.Unavailable as exc:
                report[client] = {"skipped": str(exc)}
    report["loadavg_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

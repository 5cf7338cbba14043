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

First runs are reported apart: each world's first run is its client's first
start in a fresh HOME (the client sets itself up: about 0.4 s for Claude
Code) and, with memex, the first session of a new vault on a machine with
cold per-user caches (no warm server yet, the model's optimized graph not
saved yet), started right after the install, as a user's very first
session after `pip install` + `memex install` is. The bare first run comes
first, so the client's own files are read from disk by it, not by memex's.

``--against DIR`` also runs another version of memex (a checkout or an
export of one, through PYTHONPATH; byte-compile it first, as this one is),
alternating with this one run by run (this, that, bare, ...): before/after
in one run. The vault holds --memories memories. Prints one JSON object:
per client, the wall seconds of each run, the medians, the median of the
per-pair ratios and the difference, and the load average before and after.

    .venv/bin/python scripts/bench_clients.py [--runs 7] [--memories 200] [--client claude-code|codex|both] [--against DIR]
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


def _setup(client: str, world: clientkit.World, model_url: str, memex: bool) -> tuple[list[str], dict[str, str]]:
    """Install memex into ``world`` (when ``memex``) as a user does; the client's command and environment."""
    if client == "claude-code":
        if memex:
            world.memex("install", "claude-code")
            world.memex("install", "mcp")
        return [*clientkit.claude_command(), "-p", PROMPT], clientkit.claude_env(world, model_url)
    clientkit.codex_config(world, model_url)
    if memex:
        world.memex("install", "codex")
        world.memex("install", "mcp", "--agent", "codex")
    return ([*clientkit.codex_command(), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", PROMPT],
            clientkit.codex_env(world))


def _summary(times: dict[str, list[float]], first: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, runs in times.items():
        out[f"first_{name}_run_s"] = round(first[name], 2)
        out[f"{name}_s"] = [round(t, 2) for t in runs]
        out[f"{name}_median_s"] = round(statistics.median(runs), 2)
        if name != "bare":
            prefix = "" if name == "memex" else f"{name}_"
            out[f"{prefix}added_median_s"] = round(statistics.median(a - b for a, b in zip(runs, times["bare"])), 2)
            out[f"{prefix}ratio_median"] = round(statistics.median(a / b for a, b in zip(runs, times["bare"])), 2)
            out[f"{prefix}first_added_s"] = round(first[name] - first["bare"], 2)
    return out


def bench(client: str, runs: int, memories: int, base: Path, against: Path | None = None) -> dict[str, Any]:
    # The warm server outlives the runs by warm_seconds, then exits by itself.
    worlds = {"bare": clientkit.make_world(base / f"{client}-bare"),
              "memex": clientkit.make_world(base / f"{client}-memex", warm_seconds=30)}
    if against is not None:
        worlds["against"] = clientkit.make_world(base / f"{client}-against", warm_seconds=30,
                                                 own_env={"PYTHONPATH": str(against)})
    for name, world in worlds.items():
        if name != "bare":
            _fill(world, memories)
    order = [name for name in ("memex", "against", "bare") if name in worlds]
    first: dict[str, float] = {}
    times: dict[str, list[float]] = {name: [] for name in order}
    with FakeModelServer() as model:
        commands: dict[str, tuple[list[str], dict[str, str]]] = {}
        for name in ("bare", *order[:-1]):  # the bare first run first (see the docstring)
            command, env = commands[name] = _setup(client, worlds[name], model.url, memex=name != "bare")
            first[name] = _run(command, worlds[name], env)  # a memex world's: starts its vault's warm server
            time.sleep(SETTLE)
        for _ in range(runs):
            for name in order:
                command, env = commands[name]
                times[name].append(_run(command, worlds[name], env))
                time.sleep(SETTLE)
    return _summary(times, first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--client", choices=("claude-code", "codex", "both"), default="both")
    parser.add_argument("--against", type=Path, help="another memex version's source folder, run through PYTHONPATH")
    args = parser.parse_args()
    report: dict[str, Any] = {"runs": args.runs, "memories": args.memories, "loadavg_start": os.getloadavg()}
    if args.against:
        report["against"] = str(args.against)
    clients = ("claude-code", "codex") if args.client == "both" else (args.client,)
    with tempfile.TemporaryDirectory() as tmp:
        for client in clients:
            try:
                report[client] = bench(client, args.runs, args.memories, Path(tmp),
                                       args.against.resolve() if args.against else None)
            except clientkit.Unavailable as exc:
                report[client] = {"skipped": str(exc)}
    report["loadavg_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark agent hook latency: how long an agent waits for `memex hook claude-code`.

Runs the real CLI as Claude Code does (a new process per event, the event
JSON on stdin) against a throwaway vault holding --memories memories, and
times each run from spawn to exit: that is the agent's wait. Stop,
PreCompact and SessionEnd do their work after answering (a forked child),
so their figure is the time to answer; `--sync` measures the work itself.

Prints one JSON object with p50/p95/max per event, for the real model and
(with --lexical too) for a lexical-only vault, plus the load average.

    .venv/bin/python scripts/bench_hooks.py [--memories 500] [--runs 15] [--lexical] [--sync]
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

from memex.vault import Vault, init_vault

MEMEX = str(Path(sys.executable).with_name("memex"))
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hooks" / "claude-code"
TOPICS = ["deploys", "database", "editor", "tests", "reviews", "logging", "caching", "releases", "docs", "ci"]


def fill(root: Path, count: int) -> None:
    with Vault(root) as vault:
        for i in range(count):
            topic = TOPICS[i % len(TOPICS)]
            vault.add(f"Fact {i}: the team's rule number {i} about {topic} is to keep item {i * 7} small",
                      scope="user" if i % 2 else "project:bench")


def event(name: str, cwd: Path, transcript: Path, prompt: str | None = None) -> str:
    text = (DATA / f"{name}.json").read_text(encoding="utf-8")
    data = json.loads(text.replace("{cwd}", str(cwd)).replace("{transcript}", str(transcript)))
    if prompt is not None:
        data["prompt"] = prompt
    return json.dumps(data)


def time_runs(stdin: str, env: dict[str, str], runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([MEMEX, "hook", "claude-code"], input=stdin, text=True, env=env,
                              capture_output=True, timeout=120)
        times.append(time.perf_counter() - start)
        if proc.stderr:
            raise SystemExit(f"hook reported an error: {proc.stderr}")
    times.sort()
    return {
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))] * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
    }


def bench(root: Path, runs: int, sync: bool) -> dict[str, Any]:
    cwd = root.parent / "bench"
    (cwd / ".git").mkdir(parents=True, exist_ok=True)
    transcript = root.parent / "transcript.jsonl"
    env = {k: v for k, v in os.environ.items()}
    env["MEMEX_VAULT"] = str(root)
    if sync:
        env["MEMEX_HOOK_SYNC"] = "1"
    else:
        env.pop("MEMEX_HOOK_SYNC", None)
    out: dict[str, Any] = {}
    out["SessionStart"] = time_runs(event("SessionStart", cwd, transcript), env, runs)
    out["UserPromptSubmit"] = time_runs(
        event("UserPromptSubmit", cwd, transcript, "how do we handle caching in this project?"), env, runs)
    raw = (DATA / "transcript.jsonl").read_text(encoding="utf-8").replace("{cwd}", str(cwd))
    stops = []
    for _ in range(runs):  # a fresh turn each time, as in a session
        with open(transcript, "a", encoding="utf-8") as fh:
            fh.write(raw)
        stops.append(time_runs(event("Stop", cwd, transcript), env, 1)["p50_ms"])
    stops.sort()
    out["Stop"] = {"p50_ms": statistics.median(stops), "p95_ms": stops[min(len(stops) - 1, int(len(stops) * 0.95))],
                   "max_ms": stops[-1]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--lexical", action="store_true", help="Also measure a lexical-only vault.")
    parser.add_argument("--sync", action="store_true", help="Do Stop's work before exiting (MEMEX_HOOK_SYNC=1).")
    args = parser.parse_args()
    report: dict[str, Any] = {"memories": args.memories, "runs": args.runs, "sync": args.sync,
                              "loadavg_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        t0 = time.perf_counter()
        fill(root, args.memories)
        report["fill_s"] = round(time.perf_counter() - t0, 1)
        report["model"] = bench(root, args.runs, args.sync)
        if args.lexical:
            config = root / ".memex" / "config.toml"
            config.write_text(config.read_text().replace("\n[embedding]\n", '\n[embedding]\nmodel = "none"\n', 1))
            report["lexical"] = bench(root, args.runs, args.sync)
    report["loadavg_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

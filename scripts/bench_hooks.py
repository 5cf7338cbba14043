#!/usr/bin/env python3
"""Benchmark agent hook latency: how long an agent waits for `memex hook claude-code`.

Runs the real CLI as Claude Code does (a new process per event, the event
JSON on stdin) against a throwaway vault holding --memories memories, and
times each run from spawn to exit: that is the agent's wait. Stop,
PreCompact and SessionEnd do their work after answering (a forked child),
so their figure is the time to answer; `--sync` measures the work itself.

Prints one JSON object with p50/p95/max wall time and median CPU time per
event: "cold" (``MEMEX_WARM=0``, no warm model server ever: each prompt
loads the model, in a child process of its hook, memex/agents/query_child.py),
"no_server" (the server is on but not up yet, as for a session's first
events: each run finds none, answers, and starts one, which is stopped again
once it is up, before the next run; a prompt's model loads in its child
likewise), "warm" (SessionStart
started the server, as in a real session: its own figure is mostly runs
that found the server still loading; SessionStart_server_up is a start
answered by the running server), and with --lexical a
lexical-only vault; plus the load average.

``--against DIR`` pairs this checkout with another version of memex, run by
run: DIR holds that version's ``memex/`` and ``vault-template/`` (``git
archive REV memex vault-template | tar -x -C DIR``, then ``python -m
compileall -q DIR/memex``), put on the hooks' ``PYTHONPATH``. Each round
runs a prompt (and a SessionStart) that finds no server once with each
version, alternating which goes first, and reports both medians and the
median of the per-round ratios (this / other).

    .venv/bin/python scripts/bench_hooks.py [--memories 500] [--runs 15] [--lexical] [--sync]
                                            [--only cold no_server warm] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from memex.agents import warm
from memex.vault import Vault, init_vault

MEMEX = str(Path(sys.executable).with_name("memex"))
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hooks" / "claude-code"
SECTIONS = ("cold", "no_server", "warm")
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


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _summary(times: list[float], cpu: list[float]) -> dict[str, float]:
    times, cpu = sorted(times), sorted(cpu)
    return {
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))] * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
        # CPU seconds of the hook process: what it costs on an idle machine,
        # and far less sensitive than wall time to other load on a shared one.
        "cpu_p50_ms": round(statistics.median(cpu) * 1000, 1),
    }


def time_runs(stdin: str, env: dict[str, str], runs: int,
              between: Callable[[], None] | None = None) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``runs`` hook processes; ``between`` runs before each (untimed)."""
    times, cpu = [], []
    for _ in range(runs):
        if between is not None:
            between()
        start, cpu0 = time.perf_counter(), _cpu()
        proc = subprocess.run([MEMEX, "hook", "claude-code"], input=stdin, text=True, env=env,
                              capture_output=True, timeout=120)
        times.append(time.perf_counter() - start)
        cpu.append(_cpu() - cpu0)
        if proc.stderr:
            raise SystemExit(f"hook reported an error: {proc.stderr}")
    return times, cpu


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _detached_hooks() -> list[int]:
    """The hook processes still running: a detached Stop child keeps its
    parent's command line (``memex hook claude-code``)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"hook" in words and b"claude-code" in words and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def wait_for_detached(deadline_s: float = 120) -> None:
    """Before a Stop run: let the last turn's detached work finish, so the run
    meets a quiet machine (as a turn does after the agent waited for the
    user), not its own predecessor loading the model beside it."""
    deadline = time.monotonic() + deadline_s
    while _detached_hooks() and time.monotonic() < deadline:
        time.sleep(0.05)


def no_server(root: Path) -> Callable[[], None]:
    """Before each run: wait for the server the last run started, then stop it,
    so that the run finds none (a session's first events) and the server's
    model load does not compete with the run."""
    def between() -> None:
        deadline = time.monotonic() + 120
        while warm.server_status(root) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        status = warm.server_status(root)
        if status is not None and status.get("pid"):
            pid = int(status["pid"])
            os.kill(pid, signal.SIGTERM)
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        path = warm.socket_path(root)
        if path is not None:
            path.unlink(missing_ok=True)

    return between


def bench_no_server(root: Path, runs: int) -> dict[str, Any]:
    """SessionStart and UserPromptSubmit finding no warm server up, with it turned on."""
    cwd = root.parent / "bench"
    (cwd / ".git").mkdir(parents=True, exist_ok=True)
    transcript = root.parent / "transcript.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("MEMEX_WARM", "MEMEX_HOOK_SYNC")}
    env["MEMEX_VAULT"] = str(root)
    between = no_server(root)
    out: dict[str, Any] = {}
    out["SessionStart"] = _summary(*time_runs(event("SessionStart", cwd, transcript), env, runs, between))
    out["UserPromptSubmit"] = _summary(*time_runs(
        event("UserPromptSubmit", cwd, transcript, "how do we handle caching in this project?"), env, runs, between))
    between()  # the last run's server
    return out


def bench_against(root: Path, runs: int, other: Path) -> dict[str, Any]:
    """SessionStart and UserPromptSubmit finding no server, this version and
    ``other`` alternating run by run (see the module docstring)."""
    cwd = root.parent / "bench"
    (cwd / ".git").mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("MEMEX_WARM", "MEMEX_HOOK_SYNC", "PYTHONPATH")}
    base["MEMEX_VAULT"] = str(root)
    between = no_server(root)
    out: dict[str, Any] = {"other": str(other)}
    for name, prompt in (("SessionStart", None), ("UserPromptSubmit", "how do we handle caching in this project?")):
        seen: dict[str, tuple[list[float], list[float]]] = {"this": ([], []), "other": ([], [])}
        for i in range(runs):
            for label in ("this", "other") if i % 2 == 0 else ("other", "this"):
                env = dict(base, PYTHONPATH=str(other)) if label == "other" else base
                # A new session each run: what one shows is not left out of the next (docs/agents.md).
                transcript = root.parent / f"transcript-{name}-{i}-{label}.jsonl"
                stdin = event(name, cwd, transcript, prompt).replace(
                    '"session_id": "', f'"session_id": "{label}-{i}-', 1)
                wall, cpu = time_runs(stdin, env, 1, between)
                seen[label][0].extend(wall)
                seen[label][1].extend(cpu)
        ratios = [a / b for a, b in zip(seen["this"][0], seen["other"][0])]
        out[name] = {"this": _summary(*seen["this"]), "other": _summary(*seen["other"]),
                     "ratio_p50": round(statistics.median(ratios), 3)}
    between()
    return out


def bench(root: Path, runs: int, sync: bool, warm_server: bool) -> dict[str, Any]:
    cwd = root.parent / "bench"
    (cwd / ".git").mkdir(parents=True, exist_ok=True)
    transcript = root.parent / "transcript.jsonl"
    env = {k: v for k, v in os.environ.items()}
    env["MEMEX_VAULT"] = str(root)
    env["MEMEX_WARM"] = "1" if warm_server else "0"
    if sync:
        env["MEMEX_HOOK_SYNC"] = "1"
    else:
        env.pop("MEMEX_HOOK_SYNC", None)
    out: dict[str, Any] = {}
    out["SessionStart"] = _summary(*time_runs(event("SessionStart", cwd, transcript), env, runs))
    if warm_server:  # SessionStart started it; the next events come once it has loaded the model
        with Vault(root) as vault:
            deadline = time.monotonic() + 120
            while warm.connect(vault) is None and time.monotonic() < deadline:
                time.sleep(0.2)
            out["warm_server_up"] = warm.connect(vault) is not None
        # A session started while the server is up (another session of the
        # vault, a resume, a compaction's new start) is answered by it too.
        out["SessionStart_server_up"] = _summary(*time_runs(event("SessionStart", cwd, transcript), env, runs))
    out["UserPromptSubmit"] = _summary(*time_runs(
        event("UserPromptSubmit", cwd, transcript, "how do we handle caching in this project?"), env, runs))
    raw = (DATA / "transcript.jsonl").read_text(encoding="utf-8").replace("{cwd}", str(cwd))
    stops: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):  # a fresh turn each time, as in a session
        with open(transcript, "a", encoding="utf-8") as fh:
            fh.write(raw)
        wall, cpu = time_runs(event("Stop", cwd, transcript), env, 1, wait_for_detached)
        stops[0].extend(wall)
        stops[1].extend(cpu)
    out["Stop"] = _summary(*stops)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--lexical", action="store_true", help="Also measure a lexical-only vault.")
    parser.add_argument("--sync", action="store_true", help="Do Stop's work before exiting (MEMEX_HOOK_SYNC=1).")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="Measure only these sections (default: all).")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="Only pair no-server hooks with the memex in DIR, run by run.")
    args = parser.parse_args()
    if args.against is not None and not (args.against / "memex" / "__init__.py").is_file():
        parser.error(f"--against: {args.against} holds no memex/ package")
    report: dict[str, Any] = {"memories": args.memories, "runs": args.runs, "sync": args.sync,
                              "loadavg_start": os.getloadavg()}
    # Detached Stop work may still write in the vault when it is removed.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        t0 = time.perf_counter()
        fill(root, args.memories)
        report["fill_s"] = round(time.perf_counter() - t0, 1)
        config = root / ".memex" / "config.toml"
        text = config.read_text()
        config.write_text(text.replace("\n[agents]\n", "\n[agents]\nwarm_seconds = 20\n", 1))
        # First: the other sections' detached Stop work (archiving, a commit
        # that loads the model) would still be running during its runs.
        if args.against is not None:
            report["against"] = bench_against(root, args.runs, args.against.resolve())
        elif "no_server" in args.only:
            report["no_server"] = bench_no_server(root, args.runs)
        if "cold" in args.only and args.against is None:
            report["cold"] = bench(root, args.runs, args.sync, warm_server=False)
        if "warm" in args.only and args.against is None:
            report["warm"] = bench(root, args.runs, args.sync, warm_server=True)
        if args.lexical:
            text = config.read_text()
            config.write_text(text.replace("\n[embedding]\n", '\n[embedding]\nmodel = "none"\n', 1))
            report["lexical"] = bench(root, args.runs, args.sync, warm_server=False)
    report["loadavg_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What one Stop hook given a huge transcript sets going: the hook itself
and the background `memex context commit` it starts (memex/context/bounds.py).

Writes a Claude Code transcript of --mb megabytes, every turn a user
statement the rule-based extractor keeps ("We decided that ..."), as a
hostile or long-forgotten session would; runs `memex hook claude-code` with
its Stop event (MEMEX_HOOK_SYNC=1: the hook's deferred work inline, so its
time is the hook's whole cost) on a fresh vault with the bundled model;
then follows the detached commit to its end, sampling its peak memory
(VmHWM) and CPU from /proc. Prints one JSON object: the hook's wall time
and peak RSS, the commit's wall time, CPU, peak RSS and niceness, the
memories created, the notes written, and the load average.

    .venv/bin/python scripts/bench_big_transcript.py [--mb 28]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memex.context import archive
from memex.vault import Vault, init_vault

MEMEX = str(Path(sys.executable).with_name("memex"))
SESSION = "bench-big-transcript"


def write_transcript(path: Path, megabytes: float) -> int:
    turns = 0
    with path.open("w", encoding="utf-8") as out:
        while out.tell() < megabytes * (1 << 20):
            said = f"We decided that service number {turns} always deploys from the branch named release{turns}."
            out.write(json.dumps({"type": "user", "message": {"role": "user", "content": said}}) + "\n")
            out.write(json.dumps({"type": "assistant", "message": {
                "id": f"m{turns}", "role": "assistant", "content": [{"type": "text", "text": "Noted."}]}}) + "\n")
            turns += 1
    return turns


def _commit_pid(root: Path) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"commit" in argv and str(root).encode() in argv:
            return int(entry.name)
    return None


def _proc(pid: int) -> dict[str, float] | None:
    try:
        status = (Path("/proc") / str(pid) / "status").read_text()
        stat = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), None)
    if hwm is None:  # ended (a zombie keeps no memory figures)
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return {"rss_mb": hwm / 1024, "cpu_s": (int(stat[11]) + int(stat[12])) / ticks, "nice": float(stat[16])}


def run(megabytes: float) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="memex-bigt-"))
    root = init_vault(base / "vault", git=False)
    transcript = base / "transcript.jsonl"
    turns = write_transcript(transcript, megabytes)
    event = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(base),
             "hook_event_name": "Stop", "stop_hook_active": False}
    env = {**os.environ, "MEMEX_VAULT": str(root), "MEMEX_HOOK_SYNC": "1", "MEMEX_WARM": "0", "HOME": str(base)}
    started = time.monotonic()
    done = subprocess.run([MEMEX, "hook", "claude-code"], input=json.dumps(event), capture_output=True,
                          text=True, env=env, timeout=3600)
    hook_s = time.monotonic() - started
    hook_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    pid = _commit_pid(root)
    last: dict[str, float] | None = None
    while pid is not None:
        seen = _proc(pid)
        if seen is None:
            break
        last = seen
        time.sleep(0.2)
    commit_s = time.monotonic() - started - hook_s
    with Vault(root, embedder=None) as vault:
        created = len(vault.list(limit=100_000))
        state = archive.load_state(vault, SESSION)
        log = vault.paths.context_commit_log
        notes = log.read_text(encoding="utf-8").strip().splitlines() if log.exists() else []
    size_mb = round(transcript.stat().st_size / (1 << 20), 1)
    shutil.rmtree(base, ignore_errors=True)
    return {
        "transcript_mb": size_mb, "turns": turns,
        "hook_exit": done.returncode, "hook_wall_s": round(hook_s, 1), "hook_peak_rss_mb": round(hook_rss),
        "hook_stderr": done.stderr.strip().splitlines(),
        "commit_seen": last is not None, "commit_wall_s": round(commit_s, 1),
        "commit_cpu_s": round(last["cpu_s"], 1) if last else None,
        "commit_peak_rss_mb": round(last["rss_mb"]) if last else None,
        "commit_nice": int(last["nice"]) if last else None,
        "memories_created": created, "commits": state.commits, "commit_log": notes,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=28.0, help="transcript size in MB (default 28, as found)")
    args = parser.parse_args()
    print(json.dumps(run(args.mb), indent=2))


if __name__ == "__main__":
    main()

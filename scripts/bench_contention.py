#!/usr/bin/env python3
"""Benchmark `memex add` under contention (docs/write-path.md).

The load that lost adds before: --writers processes each running `memex add`
--per-writer times (a new process per add, as a user or a script does, so
each one loads the model), beside a running `memex watch` and a loop of
`memex reindex` and `memex search` (plus a stream of hand-written files for
the watcher and reindex to index), all on one throwaway vault holding
--memories memories.

Every add must answer `created` and its memory must be in the index at the
end; the script prints one JSON object with the add count, failures (exit
status other than 0, with their first error line), p50/p99/max wall time
per add (and of the same add run alone just before, as the machine's
baseline), the reindex/search loop's rounds, and the load average. Exit 1 if
any add failed or is missing.

    .venv/bin/python scripts/bench_contention.py [--writers 8] [--per-writer 12] [--memories 500]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from memex.vault import Vault, init_vault

MEMEX = str(Path(sys.executable).with_name("memex"))
TOPICS = ["deploys", "database", "editor", "tests", "reviews", "logging", "caching", "releases", "docs", "ci"]


def fill(root: Path, count: int) -> None:
    with Vault(root) as vault:
        for i in range(count):
            vault.add(f"Fact {i}: the rule number {i} about {TOPICS[i % len(TOPICS)]} keeps item {i * 7} small")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def writer(root: Path, n: int, per: int, out: list[dict[str, Any]], lock: threading.Lock) -> None:
    for i in range(per):
        text = f"Writer {n} note {i}: the marker w{n}n{i}z belongs to the contention benchmark"
        started = time.perf_counter()
        proc = subprocess.run([MEMEX, "--vault", str(root), "add", "--json", text], capture_output=True, text=True)
        wall = time.perf_counter() - started
        row: dict[str, Any] = {"writer": n, "i": i, "seconds": wall, "code": proc.returncode, "marker": f"w{n}n{i}z"}
        if proc.returncode == 0:
            row["status"] = json.loads(proc.stdout)["status"]
        else:
            row["error"] = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        with lock:
            out.append(row)


def churn(root: Path, stop: threading.Event, rounds: dict[str, int]) -> None:
    """`memex reindex` and `memex search` in turn, with a hand-written file per round."""
    hand = root / "memories" / "hand"
    hand.mkdir(parents=True, exist_ok=True)
    k = 0
    while not stop.is_set():
        (hand / f"note-{k}.md").write_text(f"Hand-written note {k} about {TOPICS[k % len(TOPICS)]}.\n")
        for args in (["reindex"], ["search", TOPICS[k % len(TOPICS)]]):
            subprocess.run([MEMEX, "--vault", str(root), *args], capture_output=True, check=False)
            rounds[args[0]] += 1
        k += 1


def run(writers: int, per: int, memories: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memex-contention-") as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        fill(root, memories)
        # The same add alone, first: what the machine gives one add right now
        # (the CPUs are shared), to read the loaded figures against.
        solo: list[dict[str, Any]] = []
        writer(root, writers, 3, solo, threading.Lock())
        watch_log = open(Path(tmp) / "watch.log", "w")  # a pipe nobody reads would fill and stall it
        watch = subprocess.Popen([MEMEX, "--vault", str(root), "watch"], stdout=subprocess.DEVNULL, stderr=watch_log)
        stop = threading.Event()
        rounds = {"reindex": 0, "search": 0}
        loop = threading.Thread(target=churn, args=(root, stop, rounds))
        results: list[dict[str, Any]] = []
        lock = threading.Lock()
        threads = [threading.Thread(target=writer, args=(root, n, per, results, lock)) for n in range(writers)]
        started = time.perf_counter()
        loop.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        stop.set()
        loop.join()
        watch.send_signal(signal.SIGINT)
        try:
            watch.wait(30)
        except subprocess.TimeoutExpired:
            watch.kill()
        watch_log.close()
        watch_errors = [line for line in (Path(tmp) / "watch.log").read_text().splitlines() if "lock" in line]
        with Vault(root, embedder=None) as vault:
            vault.reindex()
            stored = {h.body.split(":")[1].split()[2] for h in vault.list() if h.body.startswith("Writer ")}
        times = [r["seconds"] for r in results]
        failed = [r for r in results if r["code"] != 0 or r.get("status") != "created"]
        missing = [r["marker"] for r in results if r["marker"] not in stored]
        return {
            "adds": len(results),
            "failed": len(failed),
            "failures": [r.get("error") or r.get("status") for r in failed][:10],
            "missing_from_index": len(missing),
            "add_seconds": {
                "p50": round(statistics.median(times), 3),
                "p99": round(percentile(times, 0.99), 3),
                "max": round(max(times), 3),
            },
            "solo_add_seconds_p50": round(statistics.median(r["seconds"] for r in solo), 3),
            "watcher_lock_warnings": len(watch_errors),
            "wall_seconds": round(elapsed, 1),
            "reindex_rounds": rounds["reindex"],
            "search_rounds": rounds["search"],
            "writers": writers,
            "per_writer": per,
            "memories": memories,
            "cpus": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=12)
    parser.add_argument("--memories", type=int, default=500)
    args = parser.parse_args()
    report = run(args.writers, args.per_writer, args.memories)
    print(json.dumps(report, indent=2))
    return 1 if report["failed"] or report["missing_from_index"] else 0


if __name__ == "__main__":
    sys.exit(main())

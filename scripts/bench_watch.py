#!/usr/bin/env python3
"""Benchmark `memex watch`: edit-to-searchable latency and a 1,000-file drop.

Runs a real ``memex watch`` process (real model unless --model none) on a
throwaway vault and measures, from this process:

* single edits: each edit atomically replaces one file (temp file + rename,
  as editors save) with a body holding a new unique word; latency is from
  just before the write until ``Vault.search`` for that word returns that
  file. Polling uses a lexical-only Vault so that the poll itself does not
  spend CPU embedding the query; the watcher writes the FTS row and the
  vector in one transaction, and each edit is then checked, untimed, with a
  hybrid search using the model;
* bulk: N new files written into ``memories/bulk/`` at once; time until
  all N are indexed with their vectors and a sample is returned by search.

Prints one JSON object. The machine may be shared: the load average at the
start and end is in the output; run it twice when it is high.

    .venv/bin/python scripts/bench_watch.py [--edits 120] [--bulk 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memex.watch import state as watch_state
from memex.vault import Vault, init_vault


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _atomic_replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.bench.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _wait(condition: Any, timeout: float, what: str, interval: float = 0.003) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_watch: timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _returned(vault: Vault, word: str, rel: str) -> bool:
    return any(h.path == rel and h.lexical > 0 for h in vault.search(word, limit=5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edits", type=int, default=120, help="single edits to time (>= 100 for a p95)")
    ap.add_argument("--bulk", type=int, default=1000, help="files dropped at once")
    ap.add_argument("--seed-files", type=int, default=200, help="memories in the vault before timing")
    ap.add_argument("--model", default="auto", help='embedding model ("auto" or "none")')
    ap.add_argument("--debounce-ms", type=int, default=None)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="memex-bench-watch-"))
    root = init_vault(work / "vault", git=False)
    if args.model != "auto":
        cfg = root / ".memex" / "config.toml"
        cfg.write_text(cfg.read_text().replace('# model = "auto"', f'model = "{args.model}"'))
    rng = random.Random(7)
    topics = ["sqlite", "deploy", "testing", "editor", "review", "python", "release", "cache", "index"]
    seed_dir = root / "memories" / "seed"
    seed_dir.mkdir(parents=True)
    for i in range(args.seed_files):
        (seed_dir / f"s{i:04d}.md").write_text(
            f"Seed memory {i}: notes on {rng.choice(topics)} and {rng.choice(topics)} for the team\n")
    with Vault(root) as setup:
        setup.reindex()

    cmd = [sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(root), "watch", "--quiet"]
    if args.debounce_ms:
        cmd += ["--debounce-ms", str(args.debounce_ms)]
    load_start = os.getloadavg()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: proc.poll() is not None or watch_state.watcher_info(root / ".memex")["pid"] == proc.pid,
              120, "the watcher to start", 0.05)
        if proc.poll() is not None:
            raise SystemExit(f"bench_watch: watcher exited: {proc.communicate()[1]}")
        poll = Vault(root, embedder=None)  # lexical-only: polling must not embed
        check = Vault(root)  # with the model: hybrid search, untimed
        latencies: list[float] = []
        for i in range(args.edits):
            rel = f"memories/seed/s{i % args.seed_files:04d}.md"
            word = f"benchword{i:05d}"
            text = f"Edited memory {i}: the {rng.choice(topics)} notes now mention {word}\n"
            started = time.perf_counter()
            _atomic_replace(root / rel, text)
            _wait(lambda: _returned(poll, word, rel), 30, f"edit {i}")
            latencies.append((time.perf_counter() - started) * 1000)
            if not _returned(check, word, rel):
                raise SystemExit(f"bench_watch: hybrid search does not return {rel} for {word}")
            time.sleep(0.02)

        bulk_dir = root / "memories" / "bulk"
        bulk_dir.mkdir()
        started = time.perf_counter()
        for i in range(args.bulk):
            (bulk_dir / f"b{i:05d}.md").write_text(
                f"Bulk memory {i} about {rng.choice(topics)}: bulkword{i:05d}\n")
        written = time.perf_counter() - started

        # With a model, searchable means the vector is stored too.
        need = " AND embedded = 1" if args.model != "none" else ""

        def bulk_done() -> bool:
            row = poll.backend.conn.execute(
                f"SELECT count(*) FROM memories WHERE path LIKE 'memories/bulk/%'{need}").fetchone()
            return row is not None and int(row[0]) == args.bulk

        _wait(bulk_done, 600, "the bulk drop", 0.02)
        bulk_seconds = time.perf_counter() - started
        sample = rng.sample(range(args.bulk), min(20, args.bulk))
        missing = [i for i in sample if not _returned(check, f"bulkword{i:05d}", f"memories/bulk/b{i:05d}.md")]
        if missing:
            raise SystemExit(f"bench_watch: bulk files not returned by search: {missing}")
        poll.close()
        check.close()
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "edits": len(latencies),
        "edit_latency_ms": {
            "p50": round(_percentile(latencies, 50), 1),
            "p95": round(_percentile(latencies, 95), 1),
            "max": round(max(latencies), 1),
            "mean": round(statistics.fmean(latencies), 1),
        },
        "target_p95_ms": 250,
        "bulk_files": args.bulk,
        "bulk_write_seconds": round(written, 2),
        "bulk_until_all_searchable_seconds": round(bulk_seconds, 2),
        "seed_files": args.seed_files,
        "model": args.model,
        "debounce_ms": args.debounce_ms or 40,
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "watcher_exit_code": proc.returncode,
        "watcher_errors": [line for line in stderr.splitlines() if "ERROR" in line][:5],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

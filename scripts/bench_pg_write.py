#!/usr/bin/env python3
"""The vault's write path with its index on PostgreSQL, wall and CPU time (JSON out).

    nice -n 10 .venv/bin/python scripts/bench_pg_write.py                  # this checkout
    nice -n 10 .venv/bin/python scripts/bench_pg_write.py /path/to/other   # another checkout's memex, to compare

A PostgreSQL server with pgvector in a temporary folder (tests/pgkit.py's),
and a vault of ``--count`` synthetic memories (scripts/bench.py's bodies)
whose ``[index] backend`` is ``postgres``; stored vectors are random unit
vectors (scripts/bench_backends.py's ``RandomEmbedder``: no model time).
What ``memex reindex`` and ``memex add`` do on such a vault: this clone's
SQLite index first, then the shared index follows.

- ``reindex_cold_s``: the first ``Vault.reindex()`` (every file into both
  indexes), wall and this process's CPU;
- ``resync_first_s``: the next ``Vault.reindex()``, which reads again the
  files the first read within 2 s of their mtime (``RACY_NS``: their rows
  only take the new stat);
- ``resync_s``: a no-change ``Vault.reindex()`` after it, mean of three;
- ``add_ms_p50`` / ``p95``: ``Vault.add`` of ``--adds`` new bodies (dedup,
  the file, both indexes, under both write locks).

The server's own CPU is not this process's: compare wall times, two
checkouts in turn, several rounds (docs/postgres.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
sys.path.insert(0, str(ROOT or Path(__file__).resolve().parent.parent))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkout", nargs="?")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--adds", type=int, default=100)
    args = parser.parse_args()
    if ROOT is not None:
        os.chdir(ROOT)

    import scripts.bench as bench
    from scripts.bench_backends import RandomEmbedder
    from tests import pgkit
    from tests.conftest import use_postgres

    from memex.vault import Vault

    if pgkit.MISSING is not None:
        raise SystemExit(pgkit.MISSING)
    rng = random.Random(args.count)
    bodies = [bench.memory_text(rng, n) for n in range(args.count)]
    fresh = [f"Bench add {k}: " + bench.memory_text(rng, args.count + k) for k in range(args.adds)]
    import memex

    out: dict[str, object] = {"memex": str(Path(memex.__file__).parent.parent), "count": args.count}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        base.chmod(0o755)  # the server may run as another user (tests/pgkit.py)
        server = pgkit.PgServer(base / "data")
        try:
            root = base / "vault"
            bench.write_vault(root, bodies)
            use_postgres(root, server.new_database())
            with Vault(root, embedder=RandomEmbedder()) as vault:  # type: ignore[arg-type]
                wall, cpu = time.perf_counter(), time.process_time()
                vault.reindex()
                out["reindex_cold_s"] = round(time.perf_counter() - wall, 2)
                out["reindex_cold_cpu_s"] = round(time.process_time() - cpu, 2)
                assert vault.store.memory_count() == args.count
                # Files read within 2 s of their mtime are read again by the next
                # sync (memex/index/scan.py, RACY_NS): that one is timed apart.
                wall, cpu = time.perf_counter(), time.process_time()
                vault.reindex()
                out["resync_first_s"] = round(time.perf_counter() - wall, 3)
                out["resync_first_cpu_s"] = round(time.process_time() - cpu, 3)
                walls, cpus = [], []
                for _ in range(3):
                    wall, cpu = time.perf_counter(), time.process_time()
                    vault.reindex()
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                out["resync_s"] = round(statistics.mean(walls), 3)
                out["resync_cpu_s"] = round(statistics.mean(cpus), 3)
                adds, created = [], 0
                for text in fresh:
                    wall = time.perf_counter()
                    created += vault.add(text, scope="user", source="user").status == "created"
                    adds.append(time.perf_counter() - wall)
                out["add_ms_p50"], out["add_ms_p95"] = _pct(adds, 0.5), _pct(adds, 0.95)
                out["added"] = created
                assert vault.store.memory_count() == args.count + created
        finally:
            server.stop()
    out["load_avg"] = round(os.getloadavg()[0], 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

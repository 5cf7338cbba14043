#!/usr/bin/env python3
"""What keeping the hub prior's densities costs (JSON out; docs/search.md,
"Crowded neighbourhoods").

    nice -n 10 .venv/bin/python scripts/bench_density.py --settle 10000 100000
    nice -n 10 .venv/bin/python scripts/bench_density.py --add 10000 --runs 21
    .venv/bin/python scripts/bench_density.py --checkout /path/to/other ...   # another checkout's memex

- ``--settle N...``: :mod:`memex.store.density` alone, as a cold reindex
  drives it: N random unit vectors (384 dimensions) written in transactions
  of 256 (memex/index/indexer.py's batch), each settled before its COMMIT,
  into a bare SQLite file (a plain ``memory_vec`` table, ``memories`` for the
  ids). CPU seconds of the settles, all told.
- ``--add N``: a vault of N synthetic memories (scripts/bench.py's bodies,
  random vectors), then ``--runs`` fresh processes that each open it and time
  one ``Vault.add`` (what ``memex add`` and an agent hook pay in the index:
  no model, no start-up). Median, mean and max ms: a write that changes the
  reference set costs more and shows in the mean and max. One untimed add
  runs first. ``--keep DIR`` builds the vault there once and reuses it
  (100k memories: about 2.5 min to build on 2 busy cores).
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

HERE = Path(__file__).resolve().parent
BATCH = 256

_ADD_ONE = """
import os, sys, time, json
sys.path.insert(0, {root!r}); sys.path.insert(1, {here!r})
from benchkit import RandomEmbedder
from memex.vault import Vault
vault = Vault({vault!r}, embedder=RandomEmbedder({seed}))
wall, cpu = time.perf_counter(), time.process_time()
words = " ".join(os.urandom(3).hex() for _ in range(8))  # a kept vault holds earlier runs' notes: no duplicate
status = vault.add(f"fresh process note {seed} about the deploy window of {{words}}").status
print(json.dumps([(time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, status]))
vault.close()
"""


def settle_cost(size: int) -> dict[str, float]:
    import apsw
    import numpy as np

    from memex.store import density

    rng = np.random.default_rng(size)
    with tempfile.TemporaryDirectory() as tmp:
        conn = apsw.Connection(str(Path(tmp) / "d.db"))
        conn.execute("CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL);"
                     "CREATE TABLE memory_vec (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
        density.create(conn)
        cpu = 0.0
        for start in range(1, size + 1, BATCH):
            vecs = rng.standard_normal((min(BATCH, size + 1 - start), 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            conn.execute("BEGIN")
            for i, v in enumerate(vecs):
                rowid, blob = start + i, v.tobytes()
                conn.execute("INSERT INTO memories VALUES (?, ?)", (rowid, f"m{rowid:08d}"))
                conn.execute("INSERT INTO memory_vec VALUES (?, ?)", (rowid, blob))
                density.note_insert(conn, rowid, blob)
            began = time.process_time()
            density.settle(conn)
            cpu += time.process_time() - began
            conn.execute("COMMIT")
        conn.close()
    return {"memories": size, "settle_cpu_s": round(cpu, 2)}


def build_vault(vault_root: Path, size: int) -> float:
    """A vault of ``size`` synthetic memories at ``vault_root``, indexed
    with random vectors: the seconds it took."""
    import scripts.bench as bench
    from scripts.benchkit import RandomEmbedder

    from memex.vault import Vault

    began = time.perf_counter()
    bench.write_vault(vault_root, [bench.memory_text(__import__("random").Random(size), n) for n in range(size)])
    with Vault(vault_root, embedder=RandomEmbedder(size)) as vault:
        vault.reindex()
    return time.perf_counter() - began


def add_cost(size: int, runs: int, root: Path, keep: Path | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        vault_root = keep if keep is not None else Path(tmp) / "vault"
        built = 0.0 if vault_root.exists() else build_vault(vault_root, size)
        walls, cpus = [], []
        for seed in range(runs + 1):  # the first, untimed: an index from an older memex migrates there
            code = _ADD_ONE.format(root=str(root), here=str(HERE), vault=str(vault_root), seed=seed + 1)
            out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
            wall, cpu, status = json.loads(out.stdout.strip().splitlines()[-1])
            if status != "created":  # a duplicate writes nothing: not what is measured
                raise SystemExit(f"run {seed}: the add was not written ({status})")
            if seed:
                walls.append(wall)
                cpus.append(cpu)
    return {"memories": size, "runs": runs, "build_s": round(built, 1), "add_ms_p50": round(statistics.median(walls), 1),
            "add_ms_mean": round(statistics.mean(walls), 1), "add_ms_max": round(max(walls), 1),
            "add_cpu_ms_p50": round(statistics.median(cpus), 1), "add_cpu_ms_mean": round(statistics.mean(cpus), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, default=HERE.parent, help="the memex to measure (default: this one)")
    parser.add_argument("--settle", type=int, nargs="*", default=[], metavar="N")
    parser.add_argument("--add", type=int, default=0, metavar="N")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="--add's vault: built there if absent, else reused (as it is: each run adds one)")
    args = parser.parse_args()
    root = args.checkout.resolve()
    sys.path.insert(0, str(root))
    sys.path.insert(1, str(HERE.parent))
    out: dict[str, object] = {"checkout": str(root)}
    out["settle"] = [settle_cost(n) for n in args.settle]
    if args.add:
        out["add"] = add_cost(args.add, args.runs, root, args.keep)
    out["load_average_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the index store costs in CPU, without the model's time (JSON out).

    .venv/bin/python scripts/bench_store_cpu.py                  # this checkout
    .venv/bin/python scripts/bench_store_cpu.py /path/to/other   # another checkout's memex, to compare

At 10k synthetic memories (scripts/bench.py's bodies) with random unit
vectors for what is stored (as scripts/bench_search_latency.py does):

- ``search_cpu_ms_p50``: ``memex.search.hybrid.search`` CPU per query, the
  query vectors computed beforehand by the real model (so only candidates,
  fusion and the rows read count), after 5 warm-up searches;
- ``reindex_cold_cpu_s``: the first ``Vault.reindex()`` (parse, write every
  row, FTS entry and vector; the random vectors cost next to nothing);
- ``resync_cpu_s``: a no-change ``Vault.reindex()``, mean of three;
- ``add_cpu_ms_p50``: ``Vault.add`` of 50 new bodies after it (dedup, the
  file, the index, under the write lock; random vectors, so no model time).

CPU time first: on a shared machine other load inflates it less. Each has
its wall time beside it (``*_wall_*``).
Run two checkouts in turn, several rounds, to compare (docs/store.md).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)

COUNT = 10_000
SEARCHES = 300
ADDS = 50


def main() -> None:
    import scripts.bench as bench
    from scripts.bench_search_latency import RandomStoreRealQuery

    from memex.embedding import embed
    from memex.search import hybrid
    from memex.vault import Vault

    model = embed.load_embedder("auto")
    if model is None:
        raise SystemExit(f"the bundled model did not load: {embed.why_no_embedder('auto')}")
    rng = random.Random(COUNT)
    bodies = [bench.memory_text(rng, n) for n in range(COUNT)]
    questions = bench.queries(rng, SEARCHES + 5)
    qvecs = embed.embed_queries(model, questions)
    fresh = [f"Bench add {k}: " + bench.memory_text(rng, COUNT + k) for k in range(ADDS)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        bench.write_vault(root, bodies)
        with Vault(root, embedder=RandomStoreRealQuery(model, COUNT)) as vault:
            started, wall = time.process_time(), time.perf_counter()
            vault.reindex()
            reindex_cpu, reindex_wall = time.process_time() - started, time.perf_counter() - wall
            for q, v in zip(questions[:5], qvecs[:5]):
                hybrid.search(vault.backend.conn, vault.embedder, q, qvec=v)
            cpu, walls = [], []
            for q, v in zip(questions[5:], qvecs[5:]):
                started, wall = time.process_time(), time.perf_counter()
                hybrid.search(vault.backend.conn, vault.embedder, q, qvec=v)
                cpu.append((time.process_time() - started) * 1000)
                walls.append((time.perf_counter() - wall) * 1000)
            started, wall = time.process_time(), time.perf_counter()
            for _ in range(3):
                vault.reindex()
            resync_cpu, resync_wall = (time.process_time() - started) / 3, (time.perf_counter() - wall) / 3
            add_cpu, add_wall = [], []
            for text in fresh:
                started, wall = time.process_time(), time.perf_counter()
                vault.add(text, scope="user", source="user")
                add_cpu.append((time.process_time() - started) * 1000)
                add_wall.append((time.perf_counter() - wall) * 1000)
    print(json.dumps({
        "checkout": str(ROOT),
        "memories": COUNT,
        "search_cpu_ms_p50": round(statistics.median(cpu), 3),
        "search_wall_ms_p50": round(statistics.median(walls), 3),
        "reindex_cold_cpu_s": round(reindex_cpu, 2),
        "reindex_cold_wall_s": round(reindex_wall, 2),
        "resync_cpu_s": round(resync_cpu, 3),
        "resync_wall_s": round(resync_wall, 3),
        "add_cpu_ms_p50": round(statistics.median(add_cpu), 2),
        "add_wall_ms_p50": round(statistics.median(add_wall), 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }))


if __name__ == "__main__":
    main()

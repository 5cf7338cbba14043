#!/usr/bin/env python3
"""Bytes of the derived index per short memory, by table (JSON out).

    .venv/bin/python scripts/bench_index_size.py                    # 5,882 short memories
    .venv/bin/python scripts/bench_index_size.py --memories 10000

Builds a fresh vault of short synthetic memories (the one-sentence notes of
``scripts/bench.py``, no long chunked bodies), reindexes it with an embedder
of random 384-dimension unit vectors (the size of the real models' vectors;
what the values are does not change the bytes) and reports:

- ``index_bytes``: ``.memex/index.db`` after a WAL checkpoint (what the
  folder holds once writers are done), and ``bytes_per_memory``;
- ``tables``: every table and index with its pages' bytes and the share of
  them unused (from SQLite's ``dbstat``), largest first;
- ``page_size`` and the ``schema_version`` that built it.

The default count, 5,882, is the size of the vault in which an earlier run
measured 43 MB (7.3 KB per memory, ~18 MB unused).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchkit import RandomEmbedder  # noqa: E402


def table_bytes(conn: Any) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT name, count(*), sum(pgsize), sum(unused) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC"
    ).fetchall()
    return [
        {"name": name, "pages": pages, "bytes": size, "unused_share": round(unused / size, 3) if size else 0.0}
        for name, pages, size, unused in rows
    ]


def run(count: int, seed: int) -> dict[str, Any]:
    import scripts.bench as bench
    from memex.store.sqlite import meta as db
    from memex.vault import Vault

    bench.LONG_EVERY = 0  # short memories only
    rng = random.Random(seed)
    bodies = [bench.memory_text(rng, n) for n in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        bench.write_vault(root, bodies)
        with Vault(root, embedder=RandomEmbedder(seed)) as vault:
            started = time.perf_counter()
            report = vault.reindex()
            seconds = time.perf_counter() - started
            if report.added != count:
                raise SystemExit(f"reindex went wrong: {report.as_dict()}")
            vault.backend.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            tables = table_bytes(vault.backend.conn)
            page_size = int(db.scalar(vault.backend.conn, "PRAGMA page_size"))
            version = int(db.scalar(vault.backend.conn, "PRAGMA user_version"))
            cached = int(db.scalar(vault.backend.conn, "SELECT count(*) FROM embedding_cache"))
        size = (root / ".memex" / "index.db").stat().st_size
    return {
        "memories": count,
        "body_chars_mean": round(sum(map(len, bodies)) / count, 1),
        "index_bytes": size,
        "bytes_per_memory": round(size / count),
        "cached_vectors": cached,
        "page_size": page_size,
        "schema_version": version,
        "reindex_seconds": round(seconds, 2),
        "tables": tables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5882)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    if args.memories < 1:
        parser.error("--memories must be at least 1")
    print(json.dumps(run(args.memories, args.seed), indent=2))


if __name__ == "__main__":
    main()

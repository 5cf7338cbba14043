"""Interleaved A/B of search on PostgreSQL: an older memex's search (read
from a git revision) against this tree's, on one loaded index.

"old" is the PostgreSQL search of ``--old-rev`` (its ``memex/search/postgres.py``,
which read candidates from :mod:`memex.store.postgres.query` itself); "new"
is this tree's one hybrid search (:func:`memex.search.hybrid.search`) over
:class:`memex.store.postgres.store.PgStore`. The same queries as
scripts/bench_backends.py, old and new one after the other for each query,
alternating which goes first, after untimed searches that warm the caches.
Also checks that both give the same hits and scores. Point it at an index
that bench_backends.py loaded and kept (``--pg-dir``, then start that
server) with ``--pg-url``.

    .venv/bin/python scripts/bench_pg_ab.py --pg-url URL --old-rev a814cd0 --queries 200 --warmup 200
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
from memex.search.hybrid import Filters, search  # noqa: E402
from memex.store.postgres.schema import connect  # noqa: E402
from memex.store.postgres.store import PgStore  # noqa: E402


def old_search_module(rev: str) -> Any:
    source = subprocess.run(
        ["git", "show", f"{rev}:memex/search/postgres.py"], check=True, capture_output=True, text=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_search.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_search", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_search"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-url", required=True)
    parser.add_argument("--old-rev", required=True, help="a git revision whose memex/search/postgres.py is 'old'")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scope", help="narrow every search to this scope (a filtered search)")
    args = parser.parse_args()
    old = old_search_module(args.old_rev)
    conn = connect(args.pg_url)
    store = PgStore(conn)
    emb = bb.RandomEmbedder()
    filters = Filters((args.scope,)) if args.scope else Filters()
    runs = {
        "old": lambda q, qvec: old.search(conn, emb, q, 10, filters, qvec),
        "new": lambda q, qvec: search(store, emb, q, 10, filters, qvec),  # type: ignore[arg-type]
    }
    for q in bb.queries(args.warmup, args.seed + 100):
        for run in runs.values():
            run(q, embed.query_vector(emb, q))  # type: ignore[arg-type]
    times: dict[str, list[float]] = {"old": [], "new": []}
    same = 0
    qs = bb.queries(args.queries + 5, args.seed)
    for i, q in enumerate(qs):
        qvec = embed.query_vector(emb, q)  # type: ignore[arg-type]
        got = {}
        for name in ("old", "new") if i % 2 else ("new", "old"):
            t = time.perf_counter()
            hits = runs[name](q, qvec)
            dt = time.perf_counter() - t
            got[name] = [(h.id, round(h.score, 6)) for h in hits]
            if i >= 5:
                times[name].append(dt * 1000)
        same += got["old"] == got["new"]
    out: dict[str, Any] = {
        name: {
            "search_p50_ms": round(float(np.percentile(v, 50)), 2), "search_p95_ms": round(float(np.percentile(v, 95)), 2),
            "search_mean_ms": round(float(np.mean(v)), 2),
        }
        for name, v in times.items()
    }
    out["same_hits_and_scores"] = f"{same}/{len(qs)}"
    print(json.dumps(out))


if __name__ == "__main__":
    main()

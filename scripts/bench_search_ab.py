#!/usr/bin/env python3
"""Interleaved A/B of search on SQLite in one process: an older memex's
``memex/search/hybrid.py`` (read from a git revision) against this tree's.

At 10k synthetic memories (scripts/bench.py's bodies, random stored vectors,
the real model's query vectors: as scripts/bench_store_cpu.py), old and new
search one after the other for each query, alternating which goes first,
after warm-up searches; CPU time per search, without filters and narrowed
to one scope. Also checks that both give the same hits and scores. In one
process, both read the same index and the same in-process vector copy, so
the load of a shared machine weighs on both alike.

    nice -n 10 .venv/bin/python scripts/bench_search_ab.py --old-rev a814cd0
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def old_hybrid(rev: str) -> Any:
    import memex.index
    from memex.store import rows
    from memex.store.sqlite import vecmatrix

    # Before the vector copy moved into the store, search imported it from memex.index.
    sys.modules.setdefault("memex.index.vecmatrix", vecmatrix)
    memex.index.vecmatrix = vecmatrix  # type: ignore[attr-defined]
    # Before the SQLite modules moved into memex/store/sqlite/, search imported
    # the row types from memex.store.memories (they are memex.store.rows' now).
    sys.modules.setdefault("memex.store.memories", rows)
    source = subprocess.run(["git", "show", f"{rev}:memex/search/hybrid.py"], check=True, capture_output=True,
                            text=True, cwd=ROOT).stdout
    path = Path(tempfile.mkdtemp()) / "old_hybrid.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_hybrid", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_hybrid"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-rev", required=True, help="a git revision whose memex/search/hybrid.py is 'old'")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=400)
    args = parser.parse_args()
    old = old_hybrid(args.old_rev)
    import scripts.bench as bench
    from scripts.bench_search_latency import RandomStoreRealQuery

    from memex.embedding import embed
    from memex.search import hybrid
    from memex.search.hybrid import Filters
    from memex.vault import Vault

    model = embed.load_embedder("auto")
    if model is None:
        raise SystemExit(f"the bundled model did not load: {embed.why_no_embedder('auto')}")
    rng = random.Random(args.count)
    bodies = [bench.memory_text(rng, n) for n in range(args.count)]
    questions = bench.queries(rng, args.searches + 5)
    qvecs = embed.embed_queries(model, questions)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        bench.write_vault(root, bodies)
        with Vault(root, embedder=RandomStoreRealQuery(model, args.count)) as vault:
            vault.reindex()
            runs = {"old": old.search, "new": hybrid.search}
            for label, filters in (("all", Filters()), ("one_scope", Filters(("project:atlas",)))):
                for q, v in zip(questions[:5], qvecs[:5]):
                    for run in runs.values():
                        run(vault.backend.conn, vault.embedder, q, filters=filters, qvec=v)
                cpu: dict[str, list[float]] = {"old": [], "new": []}
                same = 0
                for i, (q, v) in enumerate(zip(questions[5:], qvecs[5:])):
                    got = {}
                    for name in ("old", "new") if i % 2 else ("new", "old"):
                        started = time.process_time()
                        hits = runs[name](vault.backend.conn, vault.embedder, q, filters=filters, qvec=v)
                        cpu[name].append((time.process_time() - started) * 1000)
                        got[name] = [(h.id, h.score) for h in hits]
                    same += got["old"] == got["new"]
                out[label] = {name: {"cpu_ms_p50": round(statistics.median(c), 3),
                                     "cpu_ms_mean": round(statistics.mean(c), 3)} for name, c in cpu.items()}
                out[label]["same_hits_and_scores"] = f"{same}/{args.searches}"
    out["load_average_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

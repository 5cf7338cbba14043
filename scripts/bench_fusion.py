#!/usr/bin/env python3
"""What the ranking rule costs per search at 10k memories: previous rule vs chosen (MiniLM, multilingual), A/B.

    .venv/bin/python scripts/bench_fusion.py [--memories 10000] [--searches 300]

scripts/bench.py measures the whole search (query embedding included) and
needs a quiet machine; on a shared one its wall times mostly measure the
neighbours. This runs both rules on the same vault, the same queries and the
same query vectors, interleaved, so load hits both alike, and reports the
p50 / p95 of wall and CPU milliseconds of :func:`memex.search.hybrid.search`
(query embedding excluded: it is the same for every rule). The vault holds
bench.py's synthetic memories with random unit vectors (bench_erase.py's
``random384``): the cost of a search does not depend on what the vectors
mean, and a cold reindex with the real model would take minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench  # noqa: E402
import bench_erase  # noqa: E402

from fusion_grid import PREVIOUS_FUSION  # noqa: E402
from memex.search.fusion import DEFAULT_FUSION, MULTILINGUAL_FUSION, query_names  # noqa: E402
from memex.search.hybrid import search  # noqa: E402
from memex.vault import Vault  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--named", action="store_true",
                        help="capitalise project names in the queries, so the proper-name bonus reads bodies")
    args = parser.parse_args()
    rng = random.Random(7)
    embedder = bench_erase.RandomEmbedder(seed=7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        bench.write_vault(root, [bench.memory_text(rng, n) for n in range(args.memories)])
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            texts = bench.queries(rng, args.searches)
            if args.named:
                for project in bench._PROJECTS:
                    texts = [t.replace(project, project.capitalize()) for t in texts]
            qvecs = embedder.embed(texts)
            rules = {"previous": PREVIOUS_FUSION, "chosen": DEFAULT_FUSION, "multilingual": MULTILINGUAL_FUSION,
                     "chosen_without_names": replace(DEFAULT_FUSION, name_boost=0.0),
                     "chosen_without_rare_words": replace(DEFAULT_FUSION, rare_penalty=0.0)}
            for text, qvec in list(zip(texts, qvecs))[:20]:  # warm-up: vector copy, caches
                for rule in rules.values():
                    search(vault.conn, embedder, text, 10, qvec=qvec, fusion=rule)
            wall: dict[str, list[float]] = {k: [] for k in rules}
            cpu: dict[str, list[float]] = {k: [] for k in rules}
            for text, qvec in zip(texts, qvecs):
                for name, rule in rules.items():
                    w0, c0 = time.perf_counter(), time.process_time()
                    search(vault.conn, embedder, text, 10, qvec=qvec, fusion=rule)
                    wall[name].append((time.perf_counter() - w0) * 1000)
                    cpu[name].append((time.process_time() - c0) * 1000)
    print(json.dumps({
        "memories": args.memories, "searches": args.searches,
        "queries_naming_something": sum(bool(query_names(t)) for t in texts), "load_average_1m": round(os.getloadavg()[0], 2),
        **{name: {"wall_ms_p50": _pct(wall[name], 50), "wall_ms_p95": _pct(wall[name], 95),
                  "cpu_ms_p50": _pct(cpu[name], 50), "cpu_ms_p95": _pct(cpu[name], 95), "rule": rules[name].name}
           for name in rules},
    }, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Time the save-side dedup pipeline in a vault of N memories (JSON out).

    .venv/bin/python scripts/bench_dedup.py              # 10k memories
    .venv/bin/python scripts/bench_dedup.py --size 1000
    .venv/bin/python scripts/bench_dedup.py --long-lived   # the vector copy loaded first

The vault holds the synthetic memories of ``scripts/bench.py``. Embedding
10k bodies with the real model takes many minutes on a shared 2-core
machine and has no bearing on how long the pipeline's queries take (a
sqlite-vec KNN costs the same whatever the vectors say), so the stored
vectors come from a fast stand-in with the real model's id and dimension;
every body *added* is embedded by the real model, as in production.

Figures (milliseconds, p50 and p95 over ``--adds`` new distinct bodies, in
a session, from an agent source, so every layer including the same-session
check and the turn-echo guard runs):

- ``check_ms``: ``memex.dedup.pipeline.check`` alone (exact lookup, FTS top-k,
  vector KNN, session vectors, echo query, Jaccard and value rules);
- ``embed_ms``: the real model embedding one body;
- ``add_ms``: the whole ``Vault.add`` (lock, embed, check, atomic write
  with fsync, write-through indexing).

``vector_copy_used`` says whether the KNN ran over the in-process vector
copy (``memex/store/sqlite/vecmatrix.py``, loaded in a process that has searched twice:
``--long-lived``) or over sqlite-vec (a one-shot ``memex add``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

TARGET_ADD_MS_P50 = 30.0


class StandIn:
    """Deterministic unit vectors under the real model's id (bulk indexing only)."""

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id, self.dim = model_id, dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            vec = np.random.default_rng(seed).normal(size=self.dim)
            out[i] = vec / np.linalg.norm(vec)
        return out


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))], 2),
    }


def run(size: int, adds: int, long_lived: bool) -> dict[str, Any]:
    from bench import memory_text, write_vault

    from memex.dedup import pipeline
    from memex.store.sqlite import vecmatrix
    from memex.embedding.embed import load_embedder
    from memex.vault import Vault

    model = load_embedder("auto")
    if model is None:
        raise SystemExit("the embedding model did not load")
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        write_vault(root, [memory_text(rng, n) for n in range(size)])
        with Vault(root, embedder=StandIn(model.model_id, model.dim)) as vault:
            report = vault.reindex()
            if report.added != size or report.errors:
                raise SystemExit(f"indexing failed: {report.as_dict()}")
        check_ms: list[float] = []
        embed_ms: list[float] = []
        add_ms: list[float] = []
        statuses: dict[str, int] = {}
        with Vault(root, embedder=model) as vault:
            if long_lived:  # two searches of an unchanged index load the vector copy
                vault.search("warm-up query about the billing service")
                vault.search("second warm-up query about the scheduler")
            for n in range(5):  # warm-up: model session, SQLite pages
                vault.add(memory_text(rng, size + 10_000 + n), scope="project:atlas", source="bench")
            copy = vecmatrix.for_connection(vault.backend.conn, may_load=False) is not None
            for n in range(adds):
                body = memory_text(rng, size + n)
                t0 = time.perf_counter()
                qvec = model.embed([body])[0]
                embed_ms.append((time.perf_counter() - t0) * 1000)
                cand = pipeline.Candidate(body, "project:atlas", "tool", f"s{n % 7}", qvec)
                t0 = time.perf_counter()
                pipeline.check(vault.backend.conn, vault.config, vault.embedder, cand)
                check_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                result = vault.add(body, scope="project:atlas", source="tool", session=f"s{n % 7}")
                add_ms.append((time.perf_counter() - t0) * 1000)
                statuses[result.status] = statuses.get(result.status, 0) + 1
    return {
        "memories": size,
        "adds": adds,
        "vector_copy_used": copy,
        "check_ms": _stats(check_ms),
        "embed_ms": _stats(embed_ms),
        "add_ms": _stats(add_ms),
        "statuses": statuses,
        "target_add_ms_p50": TARGET_ADD_MS_P50,
        "met": statistics.median(add_ms) <= TARGET_ADD_MS_P50,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--adds", type=int, default=100)
    parser.add_argument(
        "--long-lived", action="store_true",
        help="search twice first, as a long-lived process (MCP server) has, so dedup uses the vector copy",
    )
    args = parser.parse_args()
    print(json.dumps(run(args.size, args.adds, args.long_lived), indent=2))


if __name__ == "__main__":
    main()

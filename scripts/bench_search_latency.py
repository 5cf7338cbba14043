#!/usr/bin/env python3
"""Search latency at 10k memories for a model, without embedding the vault with it (JSON out).

    .venv/bin/python scripts/bench_search_latency.py --model multilingual
    .venv/bin/python scripts/bench_search_latency.py --model auto --memories 10000

``scripts/bench.py --model M`` measures search too, but first embeds the
whole vault with M several times over (40 minutes for the multilingual model
at 10k on the shared 2-core machine). What a search costs does not depend on
which model wrote the stored vectors, only on their number and dimension
(384 for both models): here the vault's memories (bench.py's synthetic
bodies) get random unit vectors, while every search question goes through the
real model's query side, as ``Vault.search`` does. Figures:

- ``search_ms_p50/p95`` and ``search_cpu_ms_p50``: ``Vault.search`` of
  distinct questions (query embedding included), after 5 warm-up searches
  (the in-process vector copy is loaded by then, as in a long-lived process);
- ``query_embed_ms_p50`` / ``_min``, ``query_embed_cpu_ms_p50`` and
  ``query_embed_context_switches_p50``: the model's query side alone on the
  same questions (the minimum and the CPU time are what a loaded machine
  distorts least);
- ``load_average_1m``: other work on the machine while it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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


class RandomStoreRealQuery:
    """Random unit vectors for stored text; the real model for questions."""

    def __init__(self, model: Any, seed: int) -> None:
        self.model, self.model_id, self.dim = model, model.model_id, model.dim
        self.rng = np.random.default_rng(seed)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        normed: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normed

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        from memex.embedding.embed import embed_queries

        return embed_queries(self.model, texts)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(setting: str, count: int, searches: int) -> dict[str, Any]:
    import scripts.bench as bench
    from memex.embedding import embed
    from memex.vault import Vault

    model = embed.load_embedder(setting)
    if model is None:
        raise SystemExit(f"model {setting!r} did not load: {embed.why_no_embedder(setting)}")
    rng = random.Random(count)
    bodies = [bench.memory_text(rng, n) for n in range(count)]
    questions = bench.queries(rng, searches + 5)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        bench.write_vault(root, bodies)
        with Vault(root, embedder=RandomStoreRealQuery(model, count)) as vault:
            vault.reindex()
            for q in questions[:5]:
                vault.search(q)
            wall, cpu = [], []
            for q in questions[5:]:
                w, c = time.perf_counter(), time.process_time()
                vault.search(q)
                wall.append((time.perf_counter() - w) * 1000)
                cpu.append((time.process_time() - c) * 1000)
    alone, alone_cpu, switches = [], [], []
    for q in questions[5:]:
        before = resource.getrusage(resource.RUSAGE_SELF)
        w, c = time.perf_counter(), time.process_time()
        embed.embed_queries(model, [q + " (again)"])
        alone.append((time.perf_counter() - w) * 1000)
        alone_cpu.append((time.process_time() - c) * 1000)
        after = resource.getrusage(resource.RUSAGE_SELF)
        switches.append(after.ru_nvcsw - before.ru_nvcsw + after.ru_nivcsw - before.ru_nivcsw)
    return {
        "model": model.model_id,
        "memories": count,
        "searches": searches,
        "search_ms_p50": round(statistics.median(wall), 2),
        "search_ms_p95": round(_pct(wall, 0.95), 2),
        "search_ms_min": round(min(wall), 2),
        "search_cpu_ms_p50": round(statistics.median(cpu), 2),
        "query_embed_ms_p50": round(statistics.median(alone), 2),
        "query_embed_ms_min": round(min(alone), 2),
        "query_embed_cpu_ms_p50": round(statistics.median(alone_cpu), 2),
        # Thread wake-ups of the model's worker threads show here, and they
        # do not depend on how loaded the machine is (wall time does).
        "query_embed_context_switches_p50": statistics.median(switches),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="auto", help='[embedding] model setting: "auto" or "multilingual"')
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    if args.memories < 1 or args.searches < 1:
        parser.error("--memories and --searches must be at least 1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    print(json.dumps(run(args.model, args.memories, args.searches), indent=2))


if __name__ == "__main__":
    main()

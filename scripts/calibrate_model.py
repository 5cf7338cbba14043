#!/usr/bin/env python3
"""Cosine distributions of related and unrelated text pairs, per model (JSON out).

    .venv/bin/python scripts/calibrate_model.py --model auto
    .venv/bin/python scripts/calibrate_model.py --model multilingual

What a threshold on cosine means depends on the model (memex/embedding/profiles.py).
This prints, for one model, quantiles (min, p05, p25, p50, p75, p95, max)
of the cosine of:

- the labelled dedup pairs the thresholds are chosen on (:data:`PAIR_FILES`),
  by kind and language: ``paraphrase``/``near_copy`` (the same fact),
  ``value_change`` (the same sentence with another value),
  ``distinct_same_topic``;
- the held-out pairs (:data:`HOLDOUT_FILES`, under ``holdout``), reported
  apart and never used to choose;
- for a model whose dedup compares query sides (``dedup_query_side`` in its
  profile, memex/dedup/symmetric.py), the same pairs on the query side of
  both texts (``query_side`` and ``holdout_query_side``);
- ``unrelated``: pairs of memories from different groups of those files
  (every ``a`` against the ``a`` of 8 other groups, fixed seed);
- ``query_relevant`` / ``query_unrelated``: search questions of
  tests/data/search_eval.jsonl against their relevant memories and against
  8 random others (query side of the model for the question).

These are the numbers a relevance floor or a fusion weight needs to be
calibrated per model (docs/models.md).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "data"
# The sets thresholds are chosen on ...
PAIR_FILES = ("dedup_pairs.jsonl", "dedup_pairs_zh.jsonl", "dedup_pairs_zh_dev2.jsonl")
# ... and the held-out ones, reported apart.
HOLDOUT_FILES = ("dedup_pairs_holdout.jsonl", "dedup_pairs_zh_holdout.jsonl", "dedup_pairs_zh_holdout2.jsonl")
QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def summary(values: list[float]) -> dict[str, Any]:
    arr = np.asarray(values, dtype=np.float64)
    names = ("min", "p05", "p25", "p50", "p75", "p95", "max")
    return {"n": len(values), **{n: round(float(np.quantile(arr, q)), 3) for n, q in zip(names, QUANTILES)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="auto", help='[embedding] model setting ("auto", "multilingual")')
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    from memex.embedding.embed import embed_queries, load_embedder, why_no_embedder
    from memex.embedding.profiles import for_model
    from memex.text import strip_injected

    embedder = load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"model {args.model!r} did not load: {why_no_embedder(args.model)}")
    rng = random.Random(args.seed)
    pairs = [(name, row) for name in PAIR_FILES for row in _rows(DATA / name)]
    held = [(name, row) for name in HOLDOUT_FILES for row in _rows(DATA / name)]
    texts = sorted({strip_injected(t).strip() for _, r in pairs + held for t in (r["a"], r["b"])})
    vec = dict(zip(texts, embedder.embed(texts)))
    query_side = for_model(embedder.model_id).dedup_query_side
    qside = dict(zip(texts, embed_queries(embedder, texts))) if query_side else {}

    def cos(a: str, b: str, side: dict[str, np.ndarray] = vec) -> float:
        return float(np.dot(side[strip_injected(a).strip()], side[strip_injected(b).strip()]))

    def by_kind(rows: list[tuple[str, dict[str, Any]]], side: dict[str, np.ndarray]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = defaultdict(list)
        for _, row in rows:
            if row["kind"] != "exact_provenance":  # the exact layer decides those before any cosine
                out[f"{row['kind']}/{row['lang']}"].append(cos(row["a"], row["b"], side))
        return out

    groups = by_kind(pairs, vec)
    heads: dict[str, list[str]] = defaultdict(list)
    for _, row in pairs:
        if row["a"] not in heads[row["lang"]]:
            heads[row["lang"]].append(row["a"])
    for lang, items in heads.items():
        for i, a in enumerate(items):
            others = [b for j, b in enumerate(items) if j != i]
            for b in rng.sample(others, min(8, len(others))):
                groups[f"unrelated/{lang}"].append(cos(a, b))

    search_rows = _rows(DATA / "search_eval.jsonl")
    memories = {r["id"]: r["text"] for r in search_rows if r.get("kind") == "memory"}
    queries = [r for r in search_rows if r.get("kind") == "query"]
    if memories and queries:
        ids = sorted(memories)
        mvec = dict(zip(ids, embedder.embed([memories[i] for i in ids])))
        qvec = embed_queries(embedder, [q["query"] for q in queries])
        for q, qv in zip(queries, qvec):
            lang = q.get("lang", "en")
            relevant = set(q["relevant"])
            for mid in relevant & mvec.keys():
                groups[f"query_relevant/{lang}"].append(float(np.dot(qv, mvec[mid])))
            for mid in rng.sample([i for i in ids if i not in relevant], 8):
                groups[f"query_unrelated/{lang}"].append(float(np.dot(qv, mvec[mid])))
    def table(found: dict[str, list[float]]) -> dict[str, Any]:
        return {k: summary(v) for k, v in sorted(found.items())}

    report: dict[str, Any] = {
        "model": embedder.model_id, "chosen_on": list(PAIR_FILES), "cosines": table(groups),
        "holdout_files": list(HOLDOUT_FILES), "holdout": table(by_kind(held, vec)),
    }
    if query_side:
        report["query_side"] = table(by_kind(pairs, qside))
        report["holdout_query_side"] = table(by_kind(held, qside))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Measure search fusions on the labelled set and print JSON.

    .venv/bin/python scripts/eval_search.py [--data tests/data/search_eval.jsonl]

The set holds agent memories (``kind: memory``, with an ``id`` the file
keeps) and conversational queries (``kind: query``) with the ids of the
memories that answer them. The memories are written as files into a
throwaway vault and indexed with the real embedding model; every query is
then run through :func:`memex.search.search` once per fusion in
:data:`memex.search.FUSIONS`, on the same candidates and query vectors.

Metrics per fusion: recall@1 and recall@5 (share of a query's relevant
memories in the top 1 / top 5, averaged over queries) and MRR (1 / rank of
the first relevant memory, 0 beyond the top 10), overall and per language.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memex import embed, memory_file  # noqa: E402
from memex.search import DEFAULT_FUSION, FUSIONS, Fusion, search  # noqa: E402
from memex.vault import Vault, init_vault  # noqa: E402

DEFAULT_DATA = ROOT / "tests" / "data" / "search_eval.jsonl"
DEPTH = 10


def load_set(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Memories and queries of a labelled set; bad lines name the file and line."""
    memories: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            kind = item["kind"]
        except (ValueError, KeyError) as exc:
            raise SystemExit(f"{path}:{n}: not a memory or query line: {exc}") from exc
        (memories if kind == "memory" else queries).append(item)
    ids = {m["id"] for m in memories}
    for q in queries:
        unknown = [r for r in q["relevant"] if r not in ids]
        if unknown:
            raise SystemExit(f"{path}: query {q['id']} names unknown memories {unknown}")
    return memories, queries


def build_vault(root: Path, memories: list[dict[str, Any]], embedder: embed.Embedder) -> Vault:
    """A vault holding the set's memories as files (ids kept), fully indexed."""
    init_vault(root, git=False)
    for m in memories:
        meta = {"id": m["id"], "scope": m["scope"], "category": m.get("category"), "source": "eval"}
        folder = root / "memories" / m["scope"].replace(":", "/")
        memory_file.atomic_write(
            folder / f"{m['id']}.md",
            memory_file.serialize(memory_file.MemoryFile({k: v for k, v in meta.items() if v}, m["text"] + "\n")),
        )
    vault = Vault(root, embedder=embedder)
    report = vault.reindex()
    if report.errors:
        raise SystemExit(f"indexing the eval set failed: {report.errors}")
    return vault


def score_ranking(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    rel = set(relevant)
    first = next((i for i, mid in enumerate(ranked[:DEPTH], 1) if mid in rel), None)
    return {
        "recall@1": len(rel & set(ranked[:1])) / len(rel),
        "recall@5": len(rel & set(ranked[:5])) / len(rel),
        "mrr": 1.0 / first if first else 0.0,
    }


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = ("recall@1", "recall@5", "mrr")
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) if rows else 0.0 for k in keys}


def evaluate(
    vault: Vault, queries: list[dict[str, Any]], fusions: tuple[Fusion, ...] = FUSIONS
) -> dict[str, dict[str, Any]]:
    """Metrics per fusion name: overall, per language, and the misses at rank 1."""
    qvecs = {q["id"]: vault.embed_query(q["query"]) for q in queries}
    out: dict[str, dict[str, Any]] = {}
    for fusion in fusions:
        per_query: dict[str, dict[str, float]] = {}
        for q in queries:
            hits = search(vault.conn, vault.embedder, q["query"], DEPTH, qvec=qvecs[q["id"]], fusion=fusion)
            per_query[q["id"]] = score_ranking([h.id for h in hits], q["relevant"])
        langs = sorted({q.get("lang", "en") for q in queries})
        out[fusion.name] = {
            "all": _mean(list(per_query.values())),
            **{lang: _mean([per_query[q["id"]] for q in queries if q.get("lang", "en") == lang]) for lang in langs},
            "missed_at_1": sorted(qid for qid, r in per_query.items() if r["mrr"] < 1.0),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--misses", action="store_true", help="list the queries each fusion misses at rank 1")
    args = parser.parse_args()
    memories, queries = load_set(args.data)
    embedder = embed.load_embedder("auto")
    if embedder is None:
        raise SystemExit(f"no embedding model: {embed.why_no_embedder('auto')}")
    with tempfile.TemporaryDirectory() as tmp:
        with build_vault(Path(tmp) / "vault", memories, embedder) as vault:
            results = evaluate(vault, queries)
    if not args.misses:
        for r in results.values():
            r.pop("missed_at_1")
    top = max(r["all"]["mrr"] for r in results.values())
    print(json.dumps({
        "data": str(args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else args.data),
        "memories": len(memories),
        "queries": len(queries),
        "model": embedder.model_id,
        "chosen": DEFAULT_FUSION.name,
        "best_mrr": sorted(name for name, r in results.items() if r["all"]["mrr"] == top),
        "fusions": results,
    }, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

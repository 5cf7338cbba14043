"""Precision and recall of the dedup decision on the labelled pairs (JSON out).

Each pair (a, b) of tests/data/dedup_pairs.jsonl is run through the real
pipeline: ``a`` is added to an otherwise empty vault, then ``b`` is judged by
:func:`memex.dedup.pipeline.check` exactly as ``Vault.add`` would judge it (with a
different session and an agent source that the turn-echo guard ignores),
then ``a`` is removed again. "Duplicate" means b would not be stored.

    .venv/bin/python scripts/eval_dedup.py            # real model
    .venv/bin/python scripts/eval_dedup.py --no-model # layers 1-2 only
    .venv/bin/python scripts/eval_dedup.py --model multilingual --data tests/data/dedup_pairs_zh.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "dedup_pairs.jsonl"
SCOPE = "project:dedup-eval"


def load_pairs(path: Path = DATA) -> list[dict[str, Any]]:
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not {"a", "b", "duplicate", "kind", "lang"} <= row.keys():
            raise SystemExit(f"{path}:{n}: a pair needs a, b, duplicate, kind and lang")
        pairs.append(row)
    return pairs


def _body(text: str) -> str:
    from memex.text import strip_injected

    return strip_injected(text).strip()  # what Vault.add stores and embeds


def warm_cache(vault: Any, pairs: list[dict[str, Any]]) -> None:
    """Embed every text once, in batches (the loop then reads the cache)."""
    from memex.dedup import symmetric
    from memex.embedding import embed, profiles
    from memex.store.sqlite.schema import write_txn
    from memex.text import normalize

    if vault.embedder is None:
        return
    texts = list(dict.fromkeys(
        t for p in pairs for t in (_body(p["a"]), normalize(_body(p["a"])), _body(p["b"]))
    ))
    embedders: list[Any] = [vault.embedder]
    if profiles.for_model(vault.embedder.model_id).dedup_query_side:
        # The query side dedup compares on (memex/dedup/symmetric.py).
        embedders.append(symmetric.QuerySide(vault.embedder))
        texts += [t for t in dict.fromkeys(symmetric.embed_text(t) for t in texts) if t not in texts]
    for embedder in embedders:
        for start in range(0, len(texts), 256):
            _, rows = embed.cached_vectors(vault.backend.conn, embedder, texts[start : start + 256])
            with write_txn(vault.backend.conn):
                embed.store_cache(vault.backend.conn, rows)


def judge(vault: Any, a: str, bs: list[str], n: int) -> list[Any]:
    """The decisions the pipeline makes on each b with only a stored."""
    from memex.dedup import pipeline

    added = vault.add(a, scope=SCOPE, source="user", session=f"a-{n}")
    decisions = []
    try:
        for b in bs:
            body = _body(b)
            cand = pipeline.Candidate(body=body, scope=SCOPE, source="claude-code", session=f"b-{n}")
            with vault.write_lock():
                cand.qvec = vault.embed_query(body)
                decisions.append(pipeline.check(vault.backend.conn, vault.config, vault.embedder, cand))
    finally:
        # Removing the file purges its row (and its cached vector) at once.
        (vault.root / added.path).unlink()
        vault.indexer.index_paths([added.path])
    return decisions


def _rates(tp: int, fp: int, fn: int) -> dict[str, float | None]:
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return {"precision": None if precision is None else round(precision, 4),
            "recall": None if recall is None else round(recall, 4)}


def evaluate(vault: Any, pairs: list[dict[str, Any]]) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    by_kind: dict[str, dict[str, int]] = defaultdict(lambda: {"pairs": 0, "judged_duplicate": 0})
    methods: dict[str, int] = defaultdict(int)
    false_merges, missed = [], []
    warm_cache(vault, pairs)
    by_a: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair in pairs:
        by_a[pair["a"]].append(pair)
    judged: list[tuple[dict[str, Any], Any]] = []
    for n, (a, group) in enumerate(by_a.items()):
        judged.extend(zip(group, judge(vault, a, [p["b"] for p in group], n)))
    for pair, decision in judged:
        predicted = decision.status != "created"
        if predicted:
            methods[str(decision.method)] += 1
        key = f"{pair['kind']}/{pair['lang']}"
        by_kind[key]["pairs"] += 1
        by_kind[key]["judged_duplicate"] += int(predicted)
        if predicted and pair["duplicate"]:
            tp += 1
        elif predicted:
            fp += 1
            false_merges.append({"a": pair["a"], "b": pair["b"], "method": decision.method,
                                 "similarity": decision.similarity})
        elif pair["duplicate"]:
            fn += 1
            missed.append({"a": pair["a"], "b": pair["b"], "kind": pair["kind"]})
        else:
            tn += 1
    return {
        "pairs": len(pairs),
        **_rates(tp, fp, fn),
        "true_positives": tp, "false_positives": fp, "false_negatives": fn, "true_negatives": tn,
        "methods": dict(methods),
        "by_kind": dict(sorted(by_kind.items())),
        "false_merges": false_merges,
        "missed": missed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-model", action="store_true", help="lexical layers only")
    parser.add_argument("--model", default="auto",
                        help='[embedding] model setting: "auto" (MiniLM, default) or "multilingual"')
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show-missed", action="store_true", help="list missed duplicates too")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from memex.embedding.embed import load_embedder, why_no_embedder
    from memex.vault import Vault, init_vault

    embedder = None if args.no_model else load_embedder(args.model)
    if not args.no_model and embedder is None:
        raise SystemExit(f"the embedding model did not load ({why_no_embedder(args.model)}); "
                         "use --no-model for the lexical layers")
    pairs = load_pairs(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        with Vault(root, embedder=embedder) as vault:
            started = time.perf_counter()
            report = evaluate(vault, pairs)
            report["seconds"] = round(time.perf_counter() - started, 2)
    report["model"] = embedder.model_id if embedder is not None else None
    if not args.show_missed:
        report["missed"] = len(report["missed"])
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()

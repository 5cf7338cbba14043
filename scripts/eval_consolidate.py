"""Choose and check consolidation's similarity thresholds on labelled data.

Data: tests/data/consolidate_facts.jsonl, one memory per line with its
``topic`` and ``fact``; lines of one fact are paraphrases (should merge),
different facts of one topic are hard negatives (related, must stay apart),
``value_of`` marks facts that differ only in a value (never merged).

Topics are split alternately into dev and test. The thresholds (cosine and
Jaccard together, over a grid) are those with the best F1 on dev pairs
among those with pair precision >= --min-precision (0.97), judged inside the
full rule (either measure, plus the value/polarity/swapped-word guard). The
script reports the rule's pair precision/recall on both splits and runs the
real consolidation (memex.consolidate, configured thresholds) on one session
per split, scoring its clusters.

    .venv/bin/python scripts/eval_consolidate.py [--min-precision 0.97]

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from memex import profiles
from memex.config import Config
from memex.consolidate import Settings, keep_apart, load_settings, pair_matrices
from memex.embed import load_embedder

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "consolidate_facts.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                sys.exit(f"{path}:{n}: {exc}")
    return rows


def split_of(rows: list[dict[str, Any]]) -> dict[str, str]:
    topics = sorted({r["topic"] for r in rows})
    return {t: ("dev" if k % 2 == 0 else "test") for k, t in enumerate(topics)}


def prf(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    tp = int(np.sum(pred & gold))
    fp = int(np.sum(pred & ~gold))
    fn = int(np.sum(~pred & gold))
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "tp": tp, "fp": fp, "fn": fn}


def write_session(root: Path, texts: list[str], session: str) -> None:
    """One memory file per text, ids m000.., all in ``session`` (as an agent leaves them)."""
    folder = root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for k, text in enumerate(texts):
        (folder / f"m{k:03d}.md").write_text(
            f"---\nid: m{k:03d}\nsession: {session}\ncategory: observation\nconfidence: 0.8\n"
            f"created: 2026-11-30T{10 + k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z\n---\n{text}\n",
            encoding="utf-8",
        )


def cluster_eval(rows: list[dict[str, Any]], embedder: Any) -> dict[str, Any]:
    """Consolidate the rows as one session in a real vault (configured thresholds); score the clusters."""
    from memex.vault import Vault, init_vault

    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "v", git=False)
        write_session(root, [r["text"] for r in rows], "eval")
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            report = vault.consolidate("eval", dry_run=True)
            cluster_of = {f"m{k:03d}": f"m{k:03d}" for k in range(len(rows))}
            for g in report.groups:
                for member in [g.representative, *g.superseded]:
                    cluster_of[member] = g.representative
    fact = {f"m{k:03d}": r["fact"] for k, r in enumerate(rows)}
    ids = sorted(fact)
    pred = np.array([cluster_of[a] == cluster_of[b] for a, b in combinations(ids, 2)])
    gold = np.array([fact[a] == fact[b] for a, b in combinations(ids, 2)])
    return {
        "memories": len(rows),
        "facts": len(set(fact.values())),
        "visible_after": len(set(cluster_of.values())),
        "merged_groups": report.merged_groups,
        "compression_ratio": report.compression_ratio,
        "pairs": prf(pred, gold),
        "wrongly_merged_groups": sum(
            1 for g in report.groups if len({fact[m] for m in [g.representative, *g.superseded]}) > 1
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--min-precision", type=float, default=0.97)
    ap.add_argument("--jaccard", type=float, default=None, help="Jaccard threshold (default: the configured one)")
    ap.add_argument("--model", default="auto", help='[embedding] model setting: "auto" or "multilingual"')
    args = ap.parse_args()
    rows = load(args.data)
    embedder = load_embedder(args.model)
    if embedder is None:
        sys.exit("the embedding model did not load; this evaluation needs it")
    texts = [r["text"] for r in rows]
    jac, cos = pair_matrices(texts, embedder.embed(texts))
    splits = split_of(rows)
    pairs = list(combinations(range(len(rows)), 2))
    ii = np.array([a for a, _ in pairs])
    jj = np.array([b for _, b in pairs])
    gold = np.array([rows[a]["fact"] == rows[b]["fact"] for a, b in pairs])
    value_diff = np.array([keep_apart(texts[a], texts[b]) for a, b in pairs])
    in_split = {
        s: np.array([splits[rows[a]["topic"]] == s and splits[rows[b]["topic"]] == s for a, b in pairs])
        for s in ("dev", "test")
    }
    pc, pj = cos[ii, jj], jac[ii, jj]
    base = load_settings(Config(), profiles.for_model(embedder.model_id))
    tj = base.jaccard_threshold if args.jaccard is None else args.jaccard
    dev = in_split["dev"]
    # Each threshold is judged inside the full rule: the other measure at its
    # threshold, and the value/polarity check, as consolidation applies them.
    sweep = []
    for t in np.round(np.arange(0.50, 0.976, 0.025), 3):
        pred = ((pj >= tj) | (pc >= t)) & ~value_diff
        sweep.append({"cosine": float(t), "cosine_alone": prf((pc >= t)[dev], gold[dev]), **prf(pred[dev], gold[dev])})
    jac_sweep = []
    for t in (0.3, 0.4, 0.5, 0.6, 0.7):
        pred = ((pj >= t) | (pc >= base.cosine_threshold)) & ~value_diff
        jac_sweep.append({"jaccard": t, "jaccard_alone": prf((pj >= t)[dev], gold[dev]), **prf(pred[dev], gold[dev])})
    # Both thresholds together: best dev F1 among precision >= the floor;
    # ties go to the higher (safer) thresholds.
    grid = []
    for tc in np.round(np.arange(0.50, 0.976, 0.025), 3):
        for tjj in (0.3, 0.4, 0.5, 0.6, 0.7):
            pred = ((pj >= tjj) | (pc >= tc)) & ~value_diff
            grid.append({"cosine": float(tc), "jaccard": tjj, **prf(pred[dev], gold[dev])})
    ok = [g for g in grid if g["precision"] >= args.min_precision]
    best = max(ok or grid, key=lambda g: (g["f1"], g["precision"], g["cosine"], g["jaccard"]))
    chosen = {"cosine": best["cosine"], "jaccard": best["jaccard"]}
    tj = chosen["jaccard"] if args.jaccard is None else args.jaccard
    settings = Settings(jaccard_threshold=tj, cosine_threshold=float(chosen["cosine"]))
    dev_best = {k: best[k] for k in ("precision", "recall", "f1")}
    rule = ((pj >= tj) | (pc >= settings.cosine_threshold)) & ~value_diff
    value_pairs = np.array([
        rows[a].get("value_of") is not None and rows[a].get("value_of") == rows[b].get("value_of") for a, b in pairs
    ])
    result = {
        "data": str(args.data),
        "model": embedder.model_id,
        "memories": len(rows),
        "pairs": len(pairs),
        "positive_pairs": int(gold.sum()),
        "min_precision": args.min_precision,
        "cosine_sweep_dev": sweep,
        "jaccard_sweep_dev": jac_sweep,
        "chosen": {"cosine_threshold": settings.cosine_threshold, "jaccard_threshold": tj, "dev": dev_best},
        "configured": {"cosine_threshold": base.cosine_threshold, "jaccard_threshold": base.jaccard_threshold},
        "chosen_rule_pairs": {s: prf(rule[m], gold[m]) for s, m in in_split.items()} | {"all": prf(rule, gold)},
        "value_pairs_merged": int(np.sum(rule & value_pairs)),
        "value_pairs_above_cosine": int(np.sum((pc >= settings.cosine_threshold) & value_pairs)),
        "clusters": {
            s: cluster_eval([r for r in rows if splits[r["topic"]] == s], embedder) for s in ("dev", "test")
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

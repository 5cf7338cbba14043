"""Measure recall scores of relevant and unrelated prompts with the real model.

Prints JSON: for each case the best score, and for the configured
``recall_score_threshold`` how many relevant prompts recall their memory
and how many unrelated prompts recall anything. Used to choose the default
documented in vault-template/.memex/config.toml (docs/context-engine.md).

    .venv/bin/python scripts/context_threshold.py [--threshold 0.40] [--model multilingual]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from memex.embedding import profiles
from memex.embedding.embed import load_embedder
from memex.vault import Vault, init_vault

CASES = Path(__file__).resolve().parent.parent / "tests" / "data" / "context" / "recall_cases.json"


def measure(threshold: float, model: str = "auto") -> dict[str, Any]:
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    embedder = load_embedder(model)
    if embedder is None:
        raise SystemExit(f"the embedding model {model!r} is needed for this measurement")
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        with Vault(root, embedder=embedder) as vault:
            key_of = {vault.add(body).id: key for key, body in cases["memories"].items()}
            relevant = []
            for case in cases["relevant"]:
                hits = vault.search(case["prompt"], limit=6)
                right = next((h.score for h in hits if key_of[h.id] == case["expect"]), 0.0)
                wrong = max((h.score for h in hits if key_of[h.id] != case["expect"]), default=0.0)
                relevant.append({"prompt": case["prompt"], "expected_score": right, "best_other": wrong})
            unrelated = []
            for prompt in cases["unrelated"]:
                hits = vault.search(prompt, limit=1)
                unrelated.append({"prompt": prompt, "best": hits[0].score if hits else 0.0})
    lowest_relevant = min(r["expected_score"] for r in relevant)
    highest_noise = max([u["best"] for u in unrelated] + [r["best_other"] for r in relevant])
    return {
        "model": embedder.model_id,
        "threshold": threshold,
        "relevant_recalled": sum(r["expected_score"] >= threshold for r in relevant),
        "relevant_total": len(relevant),
        "unrelated_recalling_something": sum(u["best"] >= threshold for u in unrelated),
        "unrelated_total": len(unrelated),
        "wrong_memories_above_threshold": sum(r["best_other"] >= threshold for r in relevant),
        "lowest_relevant_score": round(lowest_relevant, 4),
        "highest_unrelated_or_wrong_score": round(highest_noise, 4),
        "midpoint": round((lowest_relevant + highest_noise) / 2, 4),
        "relevant": relevant,
        "unrelated": unrelated,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=None,
                        help="default: the model's profile value (memex/embedding/profiles.py)")
    parser.add_argument("--model", default="auto", help='[embedding] model setting: "auto" or "multilingual"')
    args = parser.parse_args()
    threshold = args.threshold
    if threshold is None:
        threshold = profiles.for_setting(args.model).recall_score_threshold
    print(json.dumps(measure(threshold, args.model), ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()

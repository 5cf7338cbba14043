#!/usr/bin/env python3
"""Measure which gate SessionStart's project search should use, with the real model.

    .venv/bin/python scripts/eval_session_start.py            # MiniLM (the default model)
    .venv/bin/python scripts/eval_session_start.py --model multilingual

SessionStart has no prompt: ``start_memories`` (memex/agents/hooks.py)
searches the user's memories with the project's name and its own memories
(``START_QUERY_CHARS``). Captures land in the ``user`` scope by default
(``[agents] capture_scope``), so that search is how a project's captured
facts come back at the start of its next session. This script asks whether
the auto-recall gate (memex/context/gate.py: fused score OR a calibrated
cosine above a bar growing with the vault's size) serves that search better
than the fused score alone.

Vaults: each tiny vault of tests/data/context/tiny_vaults.json in turn is
the project. Its first ``k`` memories are in ``project:NAME`` (k = 0, 1, 3:
a new project, and one with a few memories), the rest of its memories in
``user`` scope ("relevant": captured for this project). Every other tiny
vault's memories are also in ``user`` ("unrelated": other projects and
preferences); with ``--background`` (default on) the 200 memories of
tests/data/search_eval.jsonl too, so the vault has the size a user reaches
within weeks. Counted: relevant and unrelated memories among those the
search would add (at most ``session_start_limit`` places minus the
project's own).
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
sys.path.insert(0, str(ROOT / "scripts"))

from eval_search import DEFAULT_DATA, build_vault, load_set  # noqa: E402

from memex.agents.hooks import START_QUERY_CHARS  # noqa: E402
from memex.context import gate  # noqa: E402
from memex.context.settings import ContextSettings  # noqa: E402
from memex.embedding import embed, profiles  # noqa: E402
from memex.search.fusion import calibration_for  # noqa: E402

TINY = ROOT / "tests" / "data" / "context" / "tiny_vaults.json"
LIMIT = 6  # [agents] session_start_limit's default


def run(embedder: embed.Embedder, model: profiles.ModelProfile, background: bool, tmp: Path) -> list[dict[str, Any]]:
    vaults = json.loads(TINY.read_text(encoding="utf-8"))["vaults"]
    extra = load_set(DEFAULT_DATA)[0] if background else []
    settings = ContextSettings(recall_score_threshold=model.recall_score_threshold,
                               recall_cosine_threshold=model.recall_cosine_threshold,
                               recall_cosine_growth=model.recall_cosine_growth)
    calibration = calibration_for(embedder.model_id)
    rows = []
    for spec in vaults:
        keys = list(spec["memories"])
        for k in (0, 1, 3):
            if k >= len(keys):
                continue
            project = f"project:{spec['name']}"
            memories = [{"id": f"{spec['name']}-{key}", "scope": project if i < k else "user", "text": body}
                        for i, (key, body) in enumerate(spec["memories"].items())]
            for other in vaults:
                if other["name"] != spec["name"]:
                    memories += [{"id": f"{other['name']}-{key}", "scope": "user", "text": body}
                                 for key, body in other["memories"].items()]
            memories += [{**m, "scope": "user"} for m in extra]
            with build_vault(tmp / f"{spec['name']}-{k}-{int(background)}", memories, embedder) as vault:
                own = [m["text"] for m in memories[:k]]
                query = " ".join([spec["name"], *own])[:START_QUERY_CHARS]
                hits = vault.search(query, limit=LIMIT * 3, scope=["user"])
                size = vault.store.memory_count()
                room = LIMIT - k
                gated = gate.recall_gate(query, settings, calibration, size)(hits)
                by_score = [h for h in hits if h.score >= settings.recall_score_threshold]
                relevant = {m["id"] for m in memories[k:len(keys)]}
                for rule, kept in (("score", by_score), ("gate", gated)):
                    shown = kept[:room]
                    rows.append({
                        "project": spec["name"], "k": k, "size": size, "rule": rule,
                        "relevant": sum(h.id in relevant for h in shown), "of": len(relevant),
                        "unrelated": [h.id for h in shown if h.id not in relevant],
                        "bar": round(gate.cosine_bar(settings, size), 3),
                    })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="auto", help="[embedding] model setting: auto (MiniLM) or multilingual")
    parser.add_argument("--no-background", action="store_true", help="tiny vaults only (about 30 memories)")
    args = parser.parse_args()
    embedder = embed.load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"no embedding model for --model {args.model}: {embed.why_no_embedder(args.model)}")
    model = profiles.for_model(embedder.model_id)
    with tempfile.TemporaryDirectory() as tmp:
        rows = run(embedder, model, not args.no_background, Path(tmp))
    print("| project | k | size | rule | relevant shown / in user scope | unrelated shown |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['project']} | {r['k']} | {r['size']} | {r['rule']} | {r['relevant']}/{r['of']} | "
              f"{len(r['unrelated'])} {' '.join(r['unrelated'])} |")
    for rule in ("score", "gate"):
        mine = [r for r in rows if r["rule"] == rule]
        print(f"{rule}: relevant {sum(r['relevant'] for r in mine)}/{sum(r['of'] for r in mine)}, "
              f"unrelated {sum(len(r['unrelated']) for r in mine)}")


if __name__ == "__main__":
    main()

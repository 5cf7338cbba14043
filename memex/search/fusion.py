"""How BM25 and cosine become one score, and when nothing is relevant.

Every parameter is explicit in :class:`Fusion` (the rule) and
:class:`Calibration` (what one embedding model's cosines mean); both are
part of each model's profile in the one table of per-model numbers,
:mod:`memex.embedding.profiles`, so a second model adds a row there instead
of changing code. The chosen rules and how they were chosen are in
docs/search.md (``scripts/eval_search.py`` measures every rule of the grid
in ``scripts/fusion_grid.py`` on two labelled sets, dev split to choose,
test to report).

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

import numpy as np

from memex.embedding import profiles
from memex.embedding.profiles import FALLBACK_CALIBRATION as FALLBACK_CALIBRATION
from memex.embedding.tuning import Calibration as Calibration
from memex.embedding.tuning import Fusion as Fusion
from memex.embedding.tuning import has_cjk as has_cjk
from memex.embedding.tuning import is_keyword_query as is_keyword_query
from memex.dedup.cjk import cosine_trusted
from memex.dedup.wording import stem
from memex.search import when
from memex.search.rarity import Rarity
from memex.store.facts import Facts
from memex.text import SPEAKER_PREFIX, content_tokens

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
    ``numpy.ma`` (15-20 ms of a one-shot ``memex search``; docs/benchmarks.md)."""
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
        # "Tomás: ..." is a speaker; "ATL-2211: fix ..." is not, so a ticket named first counts as mentioned.
        speaker = SPEAKER_PREFIX.match(folded)
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


def hub_factor(fusion: Fusion, body: str, density: float | None) -> float:
    """The hub prior's multiplier for one memory (1: not a hub, or a density
    that means nothing: a mostly-CJK memory under a rule with ``density_cjk`` off)."""
    # has_cjk first: one C-level scan, so English text skips the character count.
    if not fusion.density_cjk and has_cjk(body) and not cosine_trusted(body):
        return 1.0
    return fusion.density_factor(density)


def apply_priors(
    scores: dict[int, float], fusion: Fusion, bodies_of: Callable[[list[int]], dict[int, str]], keep: int,
    batch: int = 32, densities_of: Callable[[list[int]], dict[int, float]] | None = None,
    rarity: Rarity | None = None,
) -> dict[int, float]:
    """``scores`` with the answer priors applied to every candidate that can reach the top ``keep``.

    A prior only lowers a score, so candidates are taken best first and the
    walk stops once the next one's unadjusted score is below the ``keep``-th
    best adjusted score: the top ``keep`` is then exactly what applying the
    priors to all candidates gives, at the cost of reading and tokenizing a
    few dozen bodies instead of a few hundred. Candidates never reached keep
    their (higher, unadjusted) scores, all below that cutoff. ``densities_of``
    (the store's :meth:`densities`; None: the backend keeps none) feeds the
    hub prior (:meth:`Fusion.density_factor`); ``rarity`` (None: off) the
    rare-word prior (:mod:`memex.search.rarity`).
    """
    use_density = fusion.needs_density and densities_of is not None
    use_rarity = bool(fusion.rare_penalty) and rarity is not None
    read_bodies = fusion.needs_bodies or (use_density and fusion.density_needs_bodies) or use_rarity
    if not (fusion.needs_bodies or use_density or use_rarity) or not scores:
        return scores
    order = sorted(scores, key=lambda r: -scores[r])
    out = dict(scores)
    adjusted: list[float] = []
    for start in range(0, len(order), batch):
        if len(adjusted) >= keep and scores[order[start]] < sorted(adjusted, reverse=True)[keep - 1]:
            break
        part = order[start : start + batch]
        bodies = bodies_of(part) if read_bodies else {}
        dens = densities_of(part) if use_density and densities_of is not None else {}
        rare = rarity.factors(bodies) if use_rarity and rarity is not None else {}
        for r in part:
            factor = answer_prior(bodies.get(r, ""), fusion) if fusion.needs_bodies else 1.0
            out[r] = scores[r] * factor * hub_factor(fusion, bodies.get(r, ""), dens.get(r)) * rare.get(r, 1.0)
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
    densities: dict[int, float] | None = None,
    rarity: Rarity | None = None,
    facts: dict[int, Facts] | None = None,
) -> dict[int, float]:
    """One score per candidate rowid (higher is better; a blend stays in 0..1 + recency).

    With ``bodies`` (and ``densities``, ``rarity``) every prior is applied to every
    candidate, as the evaluation does; search applies them lazily instead
    (:func:`apply_priors`), which gives the same top."""
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
    blend = dict(out)
    if fusion.needs_bodies and bodies:
        out = {r: s * answer_prior(bodies.get(r, ""), fusion) for r, s in out.items()}
    if fusion.needs_density and densities is not None:
        texts = bodies or {}
        out = {r: s * hub_factor(fusion, texts.get(r, ""), densities.get(r)) for r, s in out.items()}
    if fusion.rare_penalty and rarity is not None and bodies:
        rare = rarity.factors({r: bodies.get(r, "") for r in out})
        out = {r: s * rare[r] for r, s in out.items()}
    if fusion.context_weight and facts is not None:
        out = {r: s + fusion.context_weight * _beside(blend, facts.get(r)) for r, s in out.items()}
    return out


def _beside(blend: dict[int, float], fact: Facts | None) -> float:
    """The best blend of the memories just before and after one (0 when neither is a candidate)."""
    if fact is None:
        return 0.0
    return max(blend.get(fact.before, 0.0) if fact.before is not None else 0.0,
               blend.get(fact.after, 0.0) if fact.after is not None else 0.0)


# Function characters: a bigram holding one ("吃什", "是什") says nothing about the topic.
_CJK_FUNCTION = frozenset("的了是吗呢吧啊么什怎哪谁和与或也都就还很把被给从向这那个们")


def _words(text: str) -> set[str]:
    # Stemmed as full text stems them, roughly: found from outside, `memex search
    # prefer` answered "no matches" while BM25 had found "The user prefers …".
    return {t if has_cjk(t) else stem(t) for t in content_tokens(text)
            if not (has_cjk(t) and _CJK_FUNCTION & set(t))}


def _all_words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[^\W_]+", text.lower()) if not has_cjk(w)}


def coverage(query: str, body: str) -> tuple[int, int]:
    """(how many of the query's content words (stemmed) or CJK bigrams ``body`` holds, how many there are).

    A query of common words only ("prefer", "how to") is matched on all its words."""
    words = _words if _words(query) else _all_words
    wanted = words(query)
    return len(wanted & words(body)), len(wanted)


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

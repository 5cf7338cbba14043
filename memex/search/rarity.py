"""Rare words: a memory that adds nothing rare to the query loses.

A turn that answers a question adds something the question lacks, and what
it adds is specific: a place, a name, a tool, a number ("In August I'll be
in Hokkaido for two weeks"). Small talk and the turns that only echo the
question's words ("We still need to talk about language for Kestrel, let's
park it for now") add words the vault says everywhere. So each candidate is
scored by its *rarest new word*: of its content words that are not the
query's (nor a ``Speaker:`` prefix), the one held by the fewest memories of the vault, as an inverse
document frequency scaled to 0..1 by the vault's size,

    x = max over new words w of  ln(N / n(w)) / ln(N)

(N memories, n(w) of them holding w, counted by the full-text index as it
stems words: :meth:`memex.store.protocol.IndexStore.term_counts`). A memory
whose rarest new word is rarer than ``Fusion.rare_floor`` keeps its score;
below it, it loses up to ``Fusion.rare_penalty`` in proportion (a memory
whose every word is in the query loses nothing: it is what was asked for)
(:meth:`memex.embedding.tuning.Fusion.rarity_factor`). With a floor of 0.8
a word held by at most N^0.2 memories (4 of 1,663, 6 of 10,000) is rare
enough. The prior only lowers a score, so search applies it in the lazy
walk of :func:`memex.search.fusion.apply_priors` and the top stays exact.
In a small vault the counts say little (in a vault of three memories about
one editor, "editor" is in all three, yet a memory adding it is still the
answer): the prior's strength grows with ``ln N`` and is whole from
:data:`FULL_STRENGTH_AT` memories on (:meth:`Rarity.strength`). Every
evaluation vault is larger, so the measured figures hold as they are.
A query of a few bare words (:func:`memex.embedding.tuning.is_keyword_query`)
asks for the memory that holds them, not for one that adds to them: there
the prior is off (:func:`rarity_for`).

Why and the figures (chosen on the dev splits, checked on the test splits
and a guard set): docs/search.md, "Rare words".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from memex.embedding.tuning import Fusion, is_keyword_query
from memex.store.terms import TermCounts
from memex.text import SPEAKER_PREFIX, content_tokens

# Memories from which document counts carry the prior's whole strength.
# Found from outside: in a 3-memory vault the exact answer to "does the user
# prefer dark mode" lost 90% (a word held by all three memories), fell under
# the recall threshold, and an agent was shown nothing.
FULL_STRENGTH_AT = 100


@functools.lru_cache(maxsize=8192)
def body_words(body: str) -> frozenset[str]:
    """A memory's content words, a ``Speaker:`` prefix left out (it says who,
    not what). Kept for the bodies seen last: a long-lived process meets the
    same candidates again (tokenizing is most of the prior's cost)."""
    speaker = SPEAKER_PREFIX.match(body)
    return frozenset(content_tokens(body[speaker.end():] if speaker else body))


def rarity_for(query: str, fusion: Fusion, counts_of: Callable[[Sequence[str]], TermCounts]) -> Rarity | None:
    """The prior for this query, or None: off in the rule, or a query of a few
    bare words ("helm chart atlas"), where the memory holding just those
    words is what is asked for, not one that adds to them."""
    if not fusion.rare_penalty or is_keyword_query(query):
        return None
    return Rarity(query, fusion, counts_of)


class Rarity:
    """The rarity prior of one query: new words per memory, their counts read once."""

    def __init__(self, query: str, fusion: Fusion, counts_of: Callable[[Sequence[str]], TermCounts]) -> None:
        self.fusion = fusion
        self.query_words = content_tokens(query)
        self.counts_of = counts_of
        self.counts: dict[str, int] = {}
        self.total = 0

    def new_words(self, body: str) -> set[str]:
        """The memory's content words that the query does not hold."""
        return set(body_words(body) - self.query_words)

    def rarest(self, words: set[str]) -> float:
        """0..1: how rare the rarest of ``words`` is in the vault (1: held by this
        memory alone, 0: by every memory)."""
        if self.total < 2 or not words:
            # One memory: nothing to compare with. No new word at all: the
            # query holds the whole memory ("memex forget" by its text) —
            # the best match there is, not an echo.
            return 1.0
        fewest = min(max(1, self.counts.get(w, 0)) for w in words)
        return min(1.0, max(0.0, math.log(self.total / fewest) / math.log(self.total)))

    def factors(self, bodies: dict[int, str]) -> dict[int, float]:
        """Multiplier in (0, 1] per memory of ``bodies`` (one count read for their new words)."""
        if not self.fusion.rare_penalty:
            return {r: 1.0 for r in bodies}
        words = {r: self.new_words(b) for r, b in bodies.items()}
        unseen = sorted({w for ws in words.values() for w in ws if w not in self.counts})
        if unseen or not self.total:
            found = self.counts_of(unseen)
            self.counts.update(found.counts)
            self.total = found.total
        strength = self.strength()
        return {r: 1.0 - strength * (1.0 - self.fusion.rarity_factor(self.rarest(ws))) for r, ws in words.items()}

    def strength(self) -> float:
        """0..1: how much the vault's counts are trusted (``ln N / ln FULL_STRENGTH_AT``, at most 1)."""
        if self.total < 2:
            return 0.0
        return min(1.0, math.log(self.total) / math.log(FULL_STRENGTH_AT))

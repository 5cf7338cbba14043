"""Dedup's cosine on the query side of both texts, for e5-style models.

multilingual-e5 is trained with a "query: " and a "passage: " prefix; its
model card asks for "query: " on *both* sides of a symmetric task
(semantic similarity, paraphrase, bitext mining). Dedup asks whether two
stored statements say the same thing, a symmetric question, so a profile
with ``dedup_query_side`` (:mod:`memex.embedding.profiles`) decides a
duplicate on the cosine of the two query-side vectors instead of the two
passage-side ones the index holds. Measured on the labelled pairs
(docs/models.md, "Query side on both texts"): it spreads a Chinese
paraphrase and a different fact on the same topic further apart than the
passage side does, where no passage-side bar separated them.

The index keeps passage-side vectors only (search needs those), so a
memory's query-side vector lives in the embedding cache under the model id
plus :data:`QUERY_SIDE`, keyed by the hash of the text the index embeds:
computed once, the first time a memory is a close neighbour of a new one
(or when it is added), purged with the memory's other cached vectors by
erasure (which drops every model's rows of a text hash) and by
``cache_drop_unused`` once no memory uses the text.

Only neighbours that could still be duplicates (close on the passage side,
no guard against them) are scored, in one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memex.embedding import embed
from memex.store import IndexLike
from memex.text import normalize, strip_injected

# Appended to the model id of the cache rows that hold query-side vectors.
QUERY_SIDE = "#query"


class QuerySide:
    """The query side of ``embedder`` seen as an embedder of its own, so
    the embedding cache keeps its vectors apart from the passage side's."""

    def __init__(self, embedder: embed.Embedder) -> None:
        self.model_id = embedder.model_id + QUERY_SIDE
        self.dim = embedder.dim
        self._embedder = embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return embed.embed_queries(self._embedder, texts)


def embed_text(body: str) -> str:
    """The text the index embeds for a body (its cache key is the memory's ``embed_key``)."""
    return normalize(strip_injected(body))


def cosines(
    index: IndexLike, embedder: embed.Embedder, body: str, others: Sequence[str]
) -> tuple[list[float], list[embed.CacheRow]]:
    """Query-side cosines of ``body`` with each of ``others``, and the new
    cache rows (the caller stores them with the memory it writes)."""
    texts = [embed_text(body), *(embed_text(o) for o in others)]
    blobs, rows = embed.cached_vectors(index, QuerySide(embedder), texts)
    vectors = [embed.from_blob(b) for b in blobs]
    return [float(np.dot(vectors[0], v)) for v in vectors[1:]], rows

"""The save-side dedup pipeline that every ``Vault.add`` runs before writing.

Layers, cheapest first. They run before the vault's write lock is taken
(memex/adding.py); the commit re-checks the exact layer under the lock, so
two processes adding the same body still produce one file:

1. exact: the hash of the normalized body (provenance prefix and injected
   ``<relevant-memories>`` blocks stripped; frontmatter never part of it),
   one indexed lookup over the whole scope's active memories;
2. token Jaccard against the best FTS5 candidates of the scope;
3. embedding cosine against the nearest vectors (one KNN, the store's
   ``body_search``: SQLite's in-process copy once loaded, else the index), with
   the same-session threshold for neighbours written in the same session,
   and the session's own memories checked directly; for an e5-style model
   the close ones are judged on the query side of both texts
   (:mod:`memex.dedup.symmetric`);
4. value changes (a number, date, version, name, or a negation differs) are
   never duplicates: they are reported as similar with a ``supersede``
   suggestion, because silently dropping them would lose the update; nor
   is another subject's statement, an answer against its question, a
   text that says something the stored one does not
   (:mod:`memex.dedup.subject`; one that adds is reported with ``supersede``),
   or a question, or a turn said by someone that states something or points
   at the talk around it, unless in the same words (:mod:`memex.dedup.talk`);
5. turn-echo guard: an agent (``tool``/``agent``) restating what a hook
   (``keyword``/``user``) captured verbatim in the same session a moment
   ago is refused with the stored id (not another subject's statement, a
   question, or a text that says more: :func:`memex.dedup.subject.restates`;
   nor a turn that leans on the talk: :mod:`memex.dedup.talk`).

Without a model (no ``qvec``) layers 1, 2, 4 and 5 still run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from memex.embedding import embed
from memex.embedding import profiles
from memex.config import Config
from memex.store import IndexLike, IndexStore, as_store
from memex.text import body_hash, content_tokens, jaccard
from memex.dedup import symmetric
from memex.dedup.cjk import changes_cjk_value, cosine_trusted
from memex.dedup.subject import of_the_moment, restates
from memex.dedup.talk import apart as talk_apart, leans_on_talk
from memex.dedup.values import conflicts, differs_in_number
from memex.dedup.wording import changes_statement
# The [dedup] settings, re-exported: they live apart so that reading them loads no numpy.
from memex.dedup.thresholds import Thresholds as Thresholds
from memex.dedup.thresholds import echo_cutoff as echo_cutoff

# How many neighbours each layer looks at: enough to find a duplicate among
# many memories on the same topic, few enough to keep add fast at 10k.
FTS_CANDIDATES = 20
# The KNN runs over every scope (vec0 has no scope column), so it asks for
# more neighbours than it keeps; a brute-force scan costs the same for any k.
VECTOR_CANDIDATES = 50
SESSION_CANDIDATES = 200
ECHO_CANDIDATES = 50
MAX_SIMILAR = 5


@dataclass
class SimilarFact:
    id: str
    similarity: float
    body: str
    # "supersede" when the fact looks like an older value of the new one.
    suggestion: str | None = None


@dataclass
class Decision:
    status: str = "created"  # created | duplicate | refused
    method: str | None = None  # exact | jaccard | cosine | session_cosine | turn_echo | erased
    existing_id: str | None = None
    similarity: float | None = None
    similar_facts: list[SimilarFact] = field(default_factory=list)
    # Query-side vectors computed on the way (memex.dedup.symmetric): the
    # add stores them with the memory it writes.
    cache_rows: list[embed.CacheRow] = field(default_factory=list)


@dataclass
class Candidate:
    """What an add wants to store, as the pipeline sees it."""

    body: str
    scope: str
    source: str | None
    session: str | None
    qvec: np.ndarray | None = None
    # The memory a supersede replaces: never "a duplicate" of its successor,
    # and the echo guard does not apply (superseding is what it asks for).
    supersedes: str | None = None


@dataclass
class AddResult:
    status: str
    id: str
    path: str
    method: str | None = None
    existing_id: str | None = None
    similarity: float | None = None
    similar_facts: list[SimilarFact] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Neighbour:
    rowid: int
    id: str
    body: str
    session: str | None
    jaccard: float | None = None
    cosine: float | None = None


def check(
    index: IndexLike,
    config: Config,
    embedder: embed.Embedder | None,
    cand: Candidate,
    cache: IndexStore | None = None,
) -> Decision:
    """Decide whether ``cand`` is new (run before the write lock; see memex/adding.py).

    ``embedder`` is the model that made ``cand.qvec``; its profile sets the
    cosine thresholds (none without a query vector). ``index`` is the vault's
    connection or any backend's store (docs/store.md); ``cache``, the store
    whose embedding cache the add writes to (this clone's own on PostgreSQL),
    else ``index``'s.
    """
    model_id = embedder.model_id if embedder is not None and cand.qvec is not None else None
    limits = Thresholds.from_config(config, profiles.for_model(model_id))
    store = as_store(index)
    # Active memories only: a body equal to a *superseded* one is a value
    # coming back ("X = 1", superseded by "X = 2", then "X = 1" again), and
    # swallowing it would lose the latest statement.
    existing = store.exact_duplicate(cand.scope, body_hash(cand.body), cand.supersedes)
    if existing is not None:
        return Decision(status="duplicate", method="exact", existing_id=existing, similarity=1.0)

    neighbours = _neighbours(store, cand, limits)
    tokens = _content_tokens(cand.body)
    for n in neighbours.values():
        n.jaccard = jaccard(tokens, _content_tokens(n.body))
    rows: list[embed.CacheRow] = []

    def query_cosines(found: list[_Neighbour]) -> list[float]:
        assert embedder is not None  # limits.query_side needs a model
        sims, new = symmetric.cosines(cache or index, embedder, cand.body, [n.body for n in found])
        rows.extend(new)
        return sims

    scorer = query_cosines if limits.query_side and model_id is not None else None
    decision = _judge(cand, list(neighbours.values()), limits, scorer)
    decision.cache_rows = rows
    if decision.status == "created":
        echo = _turn_echo(store, cand, tokens, limits)
        if echo is not None:
            echo.similar_facts = decision.similar_facts
            return echo
    return decision


def _judge(
    cand: Candidate,
    neighbours: list[_Neighbour],
    limits: Thresholds,
    query_cosines: Callable[[list[_Neighbour]], list[float]] | None = None,
) -> Decision:
    """Layers 2 to 4 over the gathered neighbours. With ``query_cosines``
    the duplicate bars apply to the query-side cosines it gives for the
    neighbours still in the running (memex/dedup/symmetric.py)."""
    cand_latin = cosine_trusted(cand.body)
    trust_cosine = limits.cjk_cosine or cand_latin
    similar: dict[str, SimilarFact] = {}
    best_jaccard: tuple[float, str] | None = None
    best_cosine: tuple[float, str, str] | None = None
    # Neighbours a cosine may still make a duplicate: (neighbour, its bar, method).
    running: list[tuple[_Neighbour, float, str]] = []
    for n in neighbours:
        jac = n.jaccard or 0.0
        cos = n.cosine
        near = jac >= limits.jaccard_similar or (cos is not None and cos >= limits.cosine_similar)
        if not near:
            continue
        sim = max(jac, cos if cos is not None else 0.0)
        apart = talk_apart(n.body, cand.body)
        if apart is None and cand.session is not None and n.session not in (None, cand.session) \
                and of_the_moment(cand.body):
            # "Nice day out today" in another session: another day's fact.
            apart = "moment"
        if apart not in (None, "adds"):
            # Another subject, or a question against a statement: never
            # dropped, and no newer value of the stored memory either.
            similar[n.id] = SimilarFact(n.id, round(sim, 4), n.body.strip())
            continue
        if apart == "adds" or conflicts(n.body, cand.body):
            # A changed value or a negation, or something the stored memory
            # does not say: keep both, suggest supersede.
            similar[n.id] = SimilarFact(n.id, round(sim, 4), n.body.strip(), "supersede")
            continue
        similar[n.id] = SimilarFact(n.id, round(sim, 4), n.body.strip())
        if jac > limits.jaccard_duplicate and (best_jaccard is None or jac > best_jaccard[0]):
            best_jaccard = (jac, n.id)
        n_latin = cosine_trusted(n.body)
        if cos is not None and trust_cosine and (limits.cjk_cosine or n_latin):
            if not (cand_latin and n_latin) and changes_cjk_value(n.body, cand.body):
                # One name swapped for another in the same Chinese sentence
                # ("部署在东京" / "部署在新加坡": 0.96), or a requirement
                # narrowed: a changed value the multilingual model scores as
                # high as a paraphrase (memex/dedup/cjk.py).
                similar[n.id].suggestion = "supersede"
                continue
            if limits.query_side and changes_statement(n.body, cand.body):
                # The same opening, then something else: a model this
                # close on every pair of a topic scores it like a paraphrase.
                continue
            same_session = cand.session is not None and n.session == cand.session
            bar = limits.session_cosine_duplicate if same_session else limits.cosine_duplicate
            if not (cand_latin and n_latin):
                bar = limits.cjk_cosine_duplicate
            if cos >= (limits.query_side_band if query_cosines is not None else bar):
                running.append((n, bar, "session_cosine" if same_session else "cosine"))
    scores = [n.cosine or 0.0 for n, _, _ in running]
    if query_cosines is not None and running:
        scores = query_cosines([n for n, _, _ in running])
    for (n, bar, method), cos in zip(running, scores):
        if cos >= bar and (best_cosine is None or cos > best_cosine[0]):
            best_cosine = (cos, n.id, method)
    facts = sorted(similar.values(), key=lambda f: (-f.similarity, f.id))
    if best_jaccard is not None:
        jac, mid = best_jaccard
        rest = [f for f in facts if f.id != mid][:MAX_SIMILAR]
        return Decision("duplicate", "jaccard", mid, round(jac, 4), rest)
    if best_cosine is not None:
        cos, mid, method = best_cosine
        rest = [f for f in facts if f.id != mid][:MAX_SIMILAR]
        return Decision("duplicate", method, mid, round(cos, 4), rest)
    return Decision(similar_facts=facts[:MAX_SIMILAR])


def _neighbours(store: IndexStore, cand: Candidate, limits: Thresholds) -> dict[int, _Neighbour]:
    """Active memories of the scope that could be the same fact: FTS top-k,
    vector top-k, and (with a model) the session's own memories."""
    found: dict[int, _Neighbour] = {
        n.rowid: _Neighbour(*n) for n in store.fts_neighbours(cand.body, cand.scope, cand.supersedes, FTS_CANDIDATES)
    }
    if cand.qvec is None or not store.has_vectors():
        return found
    qvec = cand.qvec
    # One source for the whole check: SQLite's in-process copy in a
    # long-lived process, else the index (memex/store/bodies.py).
    bodies = store.body_search()
    sims: dict[int, float] = bodies.nearest_bodies(qvec, VECTOR_CANDIDATES)
    cosines = bodies.body_cosines
    if cand.session is not None:
        # The session's memories may not be among the global nearest ones.
        session_rows = store.session_rowids(cand.session, cand.scope, SESSION_CANDIDATES)
        sims.update(cosines(qvec, [r for r in session_rows if r not in sims]))
    sims.update(cosines(qvec, [r for r in found if r not in sims]))
    # Vector-only neighbours below the "similar" band can play no part.
    missing = [r for r, sim in sims.items() if r not in found and sim >= limits.cosine_similar]
    for row in store.neighbours_among(missing, cand.scope, cand.supersedes):
        found[row.rowid] = _Neighbour(*row)
    for rowid, n in found.items():
        n.cosine = sims.get(rowid)
    return found


# Kept per text, like memex.dedup.values' numbers: the same neighbours come
# back add after add (an import of notes on one topic met each stored note
# again in most later adds; docs/import.md, "Speed").
@lru_cache(maxsize=4096)
def _content_tokens(body: str) -> frozenset[str]:
    return frozenset(content_tokens(body))




def _turn_echo(store: IndexStore, cand: Candidate, tokens: frozenset[str], limits: Thresholds) -> Decision | None:
    """Layer 5: an agent restating a hook's verbatim capture of this session."""
    if (
        cand.session is None
        or cand.supersedes is not None
        or cand.source not in limits.echo_agent_sources
        or not limits.echo_capture_sources
    ):
        return None
    sources = limits.echo_capture_sources
    best: tuple[float, str] | None = None
    rows = store.session_rows(cand.session, sources, echo_cutoff(limits), ECHO_CANDIDATES, newest_first=True)
    for mid, _, _, _, body in rows:
        # A different number is a new value, not an echo: let it through;
        # so is another subject, a question, a text that says more
        # (memex.dedup.subject) or a turn that points at the talk
        # (memex.dedup.talk).
        if differs_in_number(body, cand.body) or not restates(body, cand.body) \
                or leans_on_talk(body, cand.body):
            continue
        jac = jaccard(tokens, _content_tokens(body))
        if jac >= limits.echo_jaccard and (best is None or jac > best[0]):
            best = (jac, mid)
    if best is None:
        return None
    return Decision("refused", "turn_echo", best[1], round(best[0], 4))

"""Session consolidation: fold a session's overlapping memories into one each.

At the end of a session (or on demand) memex takes the session's active
memories, one scope at a time, grouped by category, and clusters those that
say the same thing. Each cluster keeps one representative; the others get
``superseded_by: <representative>`` in their files (atomic edits, all in
one write pass: :func:`memex.meta_edit.update_meta_many`), which hides them from
default search without deleting anything. :func:`unsupersede` undoes one.

Rules (docs/consolidation.md):

- candidates: active, not in a protected category (constraint, postmortem,
  gotcha by default) and below the protected confidence (0.95); a scope
  with fewer than ``min_candidates`` (3) candidates is left alone;
- two memories are similar when their calibrated score
  (:mod:`memex.consolidation.pairscore`: a logistic model over cosine and Jaccard, per
  embedding model) reaches ``merge_threshold`` and no guard of
  :mod:`memex.dedup.values` (a changed value, polarity, opposite, relation, one
  swapped word, swapped roles; the guards dedup uses too) keeps them apart;
- clusters are complete-link: a memory joins a cluster only if it is similar
  to every member, so A~B and B~C never drag in an unrelated C;
- two memories are linked only when one says everything the other does,
  about the same subject (:mod:`memex.dedup.subject`: another speaker, a
  question against an answer, or a word the other lacks keeps them apart;
  read more strictly than dedup reads it: :func:`memex.dedup.carries.stays_apart`);
- representative: a member that says everything each member it hides says
  (else the one that carries the most, and the rest stay visible); among
  those, highest confidence, then most recalled, then newest;
- ``explain=True`` records every candidate pair (score, merged or the reason
  it was not: below the threshold, the guard that refused, complete link).

The score was fitted and the threshold chosen on labelled pairs with the
real model (``scripts/eval_consolidate.py``); see docs/consolidation.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memex.embedding import embed
from memex.config import CONFIG_RELPATH, fraction, setting, string_list
from memex.decay import parse_time
from memex.errors import ConfigError, InvalidArgument
from memex.meta_edit import update_meta, update_meta_many
from memex.consolidation.pairscore import ScoreProfile, pair_matrices, profile_for
from memex.store import SessionItem
from memex.text import preview
from memex.dedup.carries import carries, stays_apart
from memex.dedup.values import conflict_reason

if TYPE_CHECKING:
    from memex.config import Config
    from memex.vault import Memory, Vault

DEFAULT_PROTECTED = ("constraint", "postmortem", "gotcha")
DEFAULT_PROTECTED_CONFIDENCE = 0.95
DEFAULT_MIN_CANDIDATES = 3
# Pairs scoring below this are not worth explaining (nowhere near a merge).
EXPLAIN_FLOOR = 0.05


@dataclass(frozen=True)
class Settings:
    protected_categories: frozenset[str] = frozenset(DEFAULT_PROTECTED)
    protected_confidence: float = DEFAULT_PROTECTED_CONFIDENCE
    min_candidates: int = DEFAULT_MIN_CANDIDATES
    # None: the threshold of the embedding model's score profile.
    merge_threshold: float | None = None


def load_settings(config: Config) -> Settings:
    """``[consolidate]`` of the vault's config, checked."""
    where = f"{CONFIG_RELPATH} [consolidate]"
    sec = config.section("consolidate")
    for retired in ("jaccard_threshold", "cosine_threshold"):
        if retired in sec:
            # Silently ignoring a threshold the user set would merge by other
            # rules than they think; say what replaced it.
            raise ConfigError(
                f"{where}: {retired} is no longer used; consolidation merges on one calibrated "
                "score: set merge_threshold (0-1) instead, or remove the key"
            )
    merge = sec.get("merge_threshold")
    out = Settings(
        frozenset(string_list(sec, "protected_categories", DEFAULT_PROTECTED, where)),
        fraction(sec, "protected_confidence", DEFAULT_PROTECTED_CONFIDENCE, where),
        int(setting(sec, "min_candidates", DEFAULT_MIN_CANDIDATES, where)),
        None if merge is None else fraction(sec, "merge_threshold", 0.5, where),
    )
    if out.min_candidates < 2:
        raise ConfigError(f"{where}: min_candidates must be at least 2")
    return out


# One candidate memory as consolidation sees it: the store's row
# (memex/store/sqlite/queries.py), its body stripped.
Item = SessionItem


@dataclass
class Group:
    scope: str
    category: str | None
    representative: str
    superseded: list[str]
    min_similarity: float
    avg_similarity: float
    bodies: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return 1 + len(self.superseded)


@dataclass
class PairExplanation:
    """Why two candidates were or were not merged (``consolidate --explain``)."""

    a: str
    b: str
    score: float
    cosine: float
    jaccard: float
    merged: bool
    # None when merged; else "below threshold", "complete link" or a guard
    # name of memex.dedup.values.GUARDS ("value", "polarity", ...).
    reason: str | None
    a_body: str = ""
    b_body: str = ""


@dataclass
class Report:
    session: str | None
    scope: str | None
    dry_run: bool
    method: str  # "hybrid" (calibrated cosine + Jaccard) or "lexical" (no model)
    candidates: int = 0
    merged_groups: int = 0
    superseded_count: int = 0
    compression_ratio: float = 1.0
    avg_similarity: float = 0.0
    groups: list[Group] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    merge_threshold: float = 0.0
    # Filled only when explaining: every candidate pair above EXPLAIN_FLOOR.
    pairs: list[PairExplanation] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for g, out in zip(self.groups, data["groups"]):
            out["size"] = g.size
        return data


def similarity_scores(
    bodies: list[str], jac: np.ndarray, cos: np.ndarray, profile: ScoreProfile, threshold: float
) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, int], str]]:
    """(calibrated score of every pair, link matrix, guard refusals).

    The link matrix holds the score where the pair may merge (score at or
    above ``threshold`` and no guard refuses) and -inf elsewhere. Guards run
    only on pairs above the threshold: the others cannot merge anyway.
    """
    n = len(bodies)
    prob = profile.score(cos, jac)
    link = np.full((n, n), -np.inf)
    refused: dict[tuple[int, int], str] = {}
    for i, j in zip(*np.nonzero(np.triu(prob >= threshold, 1))):
        reason = conflict_reason(bodies[i], bodies[j]) or _neither_covers(bodies[i], bodies[j])
        if reason is None:
            link[i, j] = link[j, i] = prob[i, j]
        else:
            refused[(int(i), int(j))] = reason
    return prob, link, refused


def _neither_covers(a: str, b: str) -> str | None:
    """Why neither text may stand for the other (memex.dedup.subject), or
    None when one says everything the other does (read as consolidation
    reads it: :func:`memex.dedup.carries.stays_apart`). A group's representative
    must carry what each member says, so such a pair is never merged."""
    ab, ba = stays_apart(a, b), stays_apart(b, a)
    if ab is None or ba is None:
        return None
    return ab if ab != "adds" else ba


def complete_link(score: np.ndarray) -> list[list[int]]:
    """Agglomerative complete-link clusters over a pair-score matrix.

    The link between two clusters is their *weakest* pair (-inf when any pair
    is not similar); the strongest link is merged first, until none is left.
    """
    n = score.shape[0]
    s = score.astype(float).copy()
    np.fill_diagonal(s, -np.inf)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    while len(members) > 1:
        flat = int(np.argmax(s))
        i, j = divmod(flat, n)
        if not np.isfinite(s[i, j]):
            break
        i, j = min(i, j), max(i, j)
        s[i, :] = np.minimum(s[i, :], s[j, :])
        s[:, i] = s[i, :]
        s[i, i] = -np.inf
        s[j, :] = -np.inf
        s[:, j] = -np.inf
        members[i].extend(members.pop(j))
    return [sorted(m) for m in members.values()]


def _newest_key(item: Item) -> tuple[float, str]:
    moment = parse_time(item.created)
    return (moment.timestamp() if moment else 0.0, item.id)


def representative(items: list[Item]) -> Item:
    """Highest confidence, then highest access count, then newest."""
    return max(items, key=lambda it: (it.confidence, it.access_count, *_newest_key(it)))


def carrier(items: list[Item]) -> tuple[Item, list[Item]]:
    """The member that stands for the group, and the members it carries.

    The representative must say everything each member it hides says
    (:func:`memex.dedup.carries.carries`): among the members that carry all
    the others, :func:`representative` chooses; when none does, the one
    that carries the most, and the members it does not carry stay visible.
    """
    carried = {it.id: [o for o in items if o.id != it.id and carries(it.body, o.body)] for it in items}
    most = max(len(v) for v in carried.values())
    rep = representative([it for it in items if len(carried[it.id]) == most])
    return rep, carried[rep.id]


def _candidates(vault: Vault, session: str, scope: str | None) -> list[Item]:
    return [
        r._replace(body=r.body.strip())
        for r in vault.store.session_items(session, scope)
    ]


def _vectors(vault: Vault, items: list[Item]) -> np.ndarray | None:
    """Stored body vectors of these memories; None without a model or vectors."""
    if vault.embedder is None:
        return None
    vault.indexer  # vector tables must belong to the loaded model
    store = vault.store
    if not store.has_vectors():
        return None
    found: dict[int, np.ndarray] = {}
    rowids = [it.rowid for it in items]
    for start in range(0, len(rowids), 500):
        for rowid, _, blob in store.memory_vectors_of(rowids[start : start + 500]):
            found[rowid] = embed.from_blob(blob)
    if not found:
        return None
    dim = len(next(iter(found.values())))
    # A memory without a vector yet can still match lexically.
    return np.stack([found.get(r, np.zeros(dim, dtype=np.float32)) for r in rowids])


def _cluster_group(
    items: list[Item], vectors: np.ndarray | None, profile: ScoreProfile, threshold: float,
    explain: list[PairExplanation] | None = None,
) -> list[tuple[list[Item], float, float]]:
    """Groups of two or more, the representative first (:func:`carrier`),
    each with its min and mean pair score; with ``explain`` a list, every
    candidate pair's decision is appended to it."""
    bodies = [it.body for it in items]
    jac, cos = pair_matrices(bodies, vectors)
    prob, link, refused = similarity_scores(bodies, jac, cos, profile, threshold)
    at = {it.id: k for k, it in enumerate(items)}
    groups: list[list[int]] = []
    clusters = complete_link(link)
    for cluster in clusters:
        if len(cluster) < 2:
            continue
        rep, carried = carrier([items[c] for c in cluster])
        if carried:
            groups.append([at[rep.id], *(at[it.id] for it in carried)])
    out = []
    for group in groups:
        pairs = [link[a, b] for k, a in enumerate(group) for b in group[k + 1 :]]
        out.append(([items[c] for c in group], float(min(pairs)), float(np.mean(pairs))))
    if explain is not None:
        home = {m: k for k, group in enumerate(groups) for m in group}
        linked = {m: k for k, cluster in enumerate(clusters) for m in cluster}
        for i, j in zip(*np.nonzero(np.triu(prob >= EXPLAIN_FLOOR, 1))):
            i, j = int(i), int(j)
            merged = i in home and home.get(i) == home.get(j)
            reason = None if merged else refused.get((i, j)) or (
                "below threshold" if prob[i, j] < threshold
                else "not carried" if linked[i] == linked[j] else "complete link"
            )
            explain.append(PairExplanation(
                items[i].id, items[j].id, round(float(prob[i, j]), 4), round(float(cos[i, j]), 4),
                round(float(jac[i, j]), 4), merged, reason, preview(items[i].body, 80), preview(items[j].body, 80),
            ))
    return out


def plan(
    vault: Vault, session: str, scope: str | None = None, dry_run: bool = True, explain: bool = False
) -> Report:
    """What consolidating ``session`` would do (nothing is written)."""
    if not session or not session.strip():
        raise InvalidArgument("session", "must not be empty")
    scope = vault.scope_filter(scope)
    settings = load_settings(vault.config)
    items = _candidates(vault, session, scope)
    report = Report(session, scope, dry_run, "lexical" if vault.embedder is None else "hybrid")
    model_profile = profile_for(None if vault.embedder is None else vault.embedder.model_id)
    by_scope: dict[str, list[Item]] = {}
    for it in items:
        if it.category in settings.protected_categories or it.confidence >= settings.protected_confidence:
            continue
        by_scope.setdefault(it.scope, []).append(it)
    for scope_name in sorted(by_scope):
        pool = by_scope[scope_name]
        if len(pool) < settings.min_candidates:
            report.skipped.append(
                {"scope": scope_name, "candidates": len(pool),
                 "reason": f"fewer than {settings.min_candidates} candidates"}
            )
            continue
        report.candidates += len(pool)
        vectors = _vectors(vault, pool)
        # Without stored vectors only Jaccard can speak: the lexical profile.
        profile = model_profile if vectors is not None else profile_for(None)
        threshold = profile.merge_threshold if settings.merge_threshold is None else settings.merge_threshold
        report.merge_threshold = threshold
        index = {it.rowid: k for k, it in enumerate(pool)}
        by_category: dict[str | None, list[Item]] = {}
        for it in pool:
            by_category.setdefault(it.category, []).append(it)
        for category in sorted(by_category, key=lambda c: c or ""):
            members = by_category[category]
            sub = None if vectors is None else vectors[[index[it.rowid] for it in members]]
            explained = report.pairs if explain else None
            for cluster, low, mean in _cluster_group(members, sub, profile, threshold, explained):
                rep, others = cluster[0], cluster[1:]
                report.groups.append(Group(
                    scope_name, category, rep.id, [it.id for it in others], round(low, 4),
                    round(mean, 4), {it.id: preview(it.body, 120) for it in cluster},
                ))
    return _summarize(report)


def _summarize(report: Report) -> Report:
    """Fill the totals from the groups (again after an apply that skipped some)."""
    report.groups = [g for g in report.groups if g.superseded]
    report.merged_groups = len(report.groups)
    report.superseded_count = sum(len(g.superseded) for g in report.groups)
    remaining = report.candidates - report.superseded_count
    report.compression_ratio = round(report.candidates / remaining, 4) if remaining else 1.0
    # Mean over all merged pairs: each group weighs by its number of pairs.
    weights = [g.size * (g.size - 1) / 2 for g in report.groups]
    total = sum(weights)
    mean = sum(w * g.avg_similarity for w, g in zip(weights, report.groups)) / total if total else 0.0
    report.avg_similarity = round(mean, 4)
    return report


def consolidate(
    vault: Vault, session: str, scope: str | None = None, dry_run: bool = False, explain: bool = False
) -> Report:
    """Consolidate one session; with ``dry_run`` only report what would change.

    Takes the vault's write lock (not re-entrant: do not call it from code
    that already holds ``vault.write_lock()``), so an ``add`` in another
    process waits instead of racing the superseding edits.
    """
    if dry_run:
        return plan(vault, session, scope, dry_run=True, explain=explain)
    with vault.write_lock():
        report = plan(vault, session, scope, dry_run=False, explain=explain)
        # All the superseding edits in one write pass (memex/meta_edit.py):
        # a file erased or broken since the plan (the watcher, a hand edit) is
        # skipped and reported; the rest still go through.
        batch = update_meta_many(vault, {
            memory_id: {"superseded_by": group.representative}
            for group in report.groups for memory_id in group.superseded
        })
        for group in report.groups:
            for memory_id in group.superseded:
                if memory_id in batch.failed:
                    report.skipped.append({"scope": group.scope, "id": memory_id, "reason": batch.failed[memory_id]})
            group.superseded = [m for m in group.superseded if m not in batch.failed]
    return _summarize(report)


@dataclass
class AllReport:
    scope: str | None
    dry_run: bool
    sessions: list[Report] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        candidates = sum(r.candidates for r in self.sessions)
        superseded = sum(r.superseded_count for r in self.sessions)
        remaining = candidates - superseded
        return {
            "scope": self.scope,
            "dry_run": self.dry_run,
            "sessions_seen": len(self.sessions),
            "candidates": candidates,
            "merged_groups": sum(r.merged_groups for r in self.sessions),
            "superseded_count": superseded,
            "compression_ratio": round(candidates / remaining, 4) if remaining else 1.0,
            "sessions": [r.as_dict() for r in self.sessions if r.merged_groups or r.pairs],
        }


def consolidate_all(
    vault: Vault, scope: str | None = None, dry_run: bool = False, explain: bool = False
) -> AllReport:
    """Backfill: consolidate every session that has active memories (in ``scope``).

    Memories without a session (hand-written files) are never consolidated:
    a person put each of them there on purpose.
    """
    scope = vault.scope_filter(scope)
    sessions = vault.store.active_sessions(scope)
    out = AllReport(scope, dry_run)
    for session in sessions:
        out.sessions.append(consolidate(vault, session, scope, dry_run, explain))
    return out


def unsupersede(vault: Vault, memory_id: str) -> Memory:
    """Make a superseded memory active again (removes ``superseded_by``)."""
    memory = vault.get(memory_id)
    if memory.status != "superseded":
        raise InvalidArgument("ID", f"memory {memory_id} is not superseded")
    with vault.write_lock():
        return update_meta(vault, memory_id, {"superseded_by": None})

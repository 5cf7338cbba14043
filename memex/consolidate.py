"""Session consolidation: fold a session's overlapping memories into one each.

At the end of a session (or on demand) memex takes the session's active
memories, one scope at a time, grouped by category, and clusters those that
say the same thing. Each cluster keeps one representative; the others get
``superseded_by: <representative>`` in their files (an atomic edit through
:meth:`Vault.update_meta`), which hides them from default search without
deleting anything. :func:`unsupersede` undoes one.

Rules, all from issue 7:

- candidates: active, not in a protected category (constraint, postmortem,
  gotcha by default) and below the protected confidence (0.95); a scope
  with fewer than ``min_candidates`` (3) candidates is left alone;
- two memories are similar when their token Jaccard *or* their embedding
  cosine reaches its threshold, and they do not differ in a value or in
  polarity (:func:`memex.values.conflicts`, the rule dedup uses too) nor by
  one swapped word (:func:`swapped_word`);
- clusters are complete-link: a memory joins a cluster only if it is similar
  to every member, so A~B and B~C never drag in an unrelated C;
- representative: highest confidence, then most recalled, then newest.

The thresholds were chosen on labelled pairs with the real model
(``scripts/eval_consolidate.py``, data in ``tests/data/``); see README.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memex import embed, profiles
from memex.config import CONFIG_RELPATH, fraction, setting, string_list
from memex.db import has_vector_tables
from memex.decay import parse_time
from memex.errors import ConfigError, InvalidArgument, MemoryFileError, MemoryNotFound
from memex.text import content_tokens, jaccard, preview
from memex.values import conflicts

if TYPE_CHECKING:
    from memex.config import Config
    from memex.profiles import ModelProfile
    from memex.vault import Memory, Vault

DEFAULT_PROTECTED = ("constraint", "postmortem", "gotcha")
DEFAULT_PROTECTED_CONFIDENCE = 0.95
DEFAULT_MIN_CANDIDATES = 3
# Chosen with scripts/eval_consolidate.py on tests/data/consolidate_pairs.jsonl.
DEFAULT_JACCARD = 0.7
DEFAULT_COSINE = 0.75


@dataclass(frozen=True)
class Settings:
    protected_categories: frozenset[str] = frozenset(DEFAULT_PROTECTED)
    protected_confidence: float = DEFAULT_PROTECTED_CONFIDENCE
    min_candidates: int = DEFAULT_MIN_CANDIDATES
    jaccard_threshold: float = DEFAULT_JACCARD
    cosine_threshold: float = DEFAULT_COSINE


def load_settings(config: Config, profile: ModelProfile | None = None) -> Settings:
    """``[consolidate]`` of the vault's config, checked; the cosine default is
    the loaded model's (:mod:`memex.profiles`)."""
    where = f"{CONFIG_RELPATH} [consolidate]"
    sec = config.section("consolidate")
    cosine = (profile or profiles.for_model(None)).consolidate_cosine
    out = Settings(
        frozenset(string_list(sec, "protected_categories", DEFAULT_PROTECTED, where)),
        fraction(sec, "protected_confidence", DEFAULT_PROTECTED_CONFIDENCE, where),
        int(setting(sec, "min_candidates", DEFAULT_MIN_CANDIDATES, where)),
        fraction(sec, "jaccard_threshold", DEFAULT_JACCARD, where),
        fraction(sec, "cosine_threshold", cosine, where),
    )
    if out.min_candidates < 2:
        raise ConfigError(f"{where}: min_candidates must be at least 2")
    return out


@dataclass
class Item:
    """One candidate memory as consolidation sees it (from the index)."""

    rowid: int
    id: str
    body: str
    scope: str
    category: str | None
    confidence: float
    created: str
    access_count: int


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
class Report:
    session: str | None
    scope: str | None
    dry_run: bool
    method: str  # "hybrid" (Jaccard or cosine) or "lexical" (no model)
    candidates: int = 0
    merged_groups: int = 0
    superseded_count: int = 0
    compression_ratio: float = 1.0
    avg_similarity: float = 0.0
    groups: list[Group] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for g, out in zip(self.groups, data["groups"]):
            out["size"] = g.size
        return data


def pair_matrices(
    bodies: list[str], vectors: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Token Jaccard and cosine of every pair (cosine zeros without vectors)."""
    n = len(bodies)
    toks = [content_tokens(b) for b in bodies]
    jac = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            jac[i, j] = jac[j, i] = jaccard(toks[i], toks[j])
    if vectors is None:
        return jac, np.zeros((n, n))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    return jac, np.clip(unit @ unit.T, -1.0, 1.0)


def _stem(word: str) -> str:
    # Crude plural folding, enough that "deploy"/"deploys" is not a swap.
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def swapped_word(a: str, b: str) -> bool:
    """True when the texts are one sentence with a single content word exchanged.

    "prefers tabs for indentation" / "prefers spaces for indentation", or
    "dark theme" / "light theme": both Jaccard and cosine call such pairs
    near-identical, yet the swapped word is the whole fact. Consolidation
    keeps them apart (it may cost a synonym-swapped paraphrase, which stays
    visible: the safe side). Stricter than, and in addition to, the value
    rule shared with dedup.
    """
    ta = {_stem(w) for w in content_tokens(a)}
    tb = {_stem(w) for w in content_tokens(b)}
    return len(ta - tb) == 1 and len(tb - ta) == 1 and len(ta & tb) >= 2


def keep_apart(a: str, b: str) -> bool:
    """Never merge: a value or the polarity differs (dedup's rule), or a word is swapped."""
    return conflicts(a, b) or swapped_word(a, b)


def similarity_scores(
    bodies: list[str], jac: np.ndarray, cos: np.ndarray, settings: Settings
) -> np.ndarray:
    """Pair scores: max(Jaccard, cosine) where the pair is similar, else -inf.

    A pair is similar when either measure reaches its threshold and the two
    texts may be merged at all (:func:`keep_apart`); that check runs only on
    pairs above a threshold.
    """
    n = len(bodies)
    linked = (jac >= settings.jaccard_threshold) | (cos >= settings.cosine_threshold)
    score = np.full((n, n), -np.inf)
    for i, j in zip(*np.nonzero(np.triu(linked, 1))):
        if not keep_apart(bodies[i], bodies[j]):
            score[i, j] = score[j, i] = max(jac[i, j], cos[i, j])
    return score


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


def _candidates(vault: Vault, session: str, scope: str | None) -> list[Item]:
    sql = (
        "SELECT m.rowid, m.id, m.body, m.scope, m.category, m.confidence, m.created, "
        "COALESCE(u.access_count, 0) FROM memories m LEFT JOIN usage u ON u.memory_id = m.id "
        "WHERE m.session = ? AND m.status = 'active'"
    )
    params: list[Any] = [session]
    if scope is not None:
        sql += " AND m.scope = ?"
        params.append(scope)
    sql += " ORDER BY m.created, m.id"
    return [
        Item(int(r[0]), r[1], r[2].strip(), r[3], r[4], float(r[5]), r[6], int(r[7]))
        for r in vault.conn.execute(sql, params)
    ]


def _vectors(vault: Vault, items: list[Item]) -> np.ndarray | None:
    """Stored body vectors of these memories; None without a model or vectors."""
    if vault.embedder is None:
        return None
    vault.indexer  # vector tables must belong to the loaded model
    if not has_vector_tables(vault.conn):
        return None
    found: dict[int, np.ndarray] = {}
    rowids = [it.rowid for it in items]
    for start in range(0, len(rowids), 500):
        part = rowids[start : start + 500]
        for rowid, blob in vault.conn.execute(
            f"SELECT rowid, embedding FROM memory_vec WHERE rowid IN ({','.join('?' * len(part))})", part
        ):
            found[int(rowid)] = embed.from_blob(blob)
    if not found:
        return None
    dim = len(next(iter(found.values())))
    # A memory without a vector yet can still match lexically.
    return np.stack([found.get(r, np.zeros(dim, dtype=np.float32)) for r in rowids])


def _cluster_group(
    items: list[Item], vectors: np.ndarray | None, settings: Settings
) -> list[tuple[list[Item], float, float]]:
    """Clusters of two or more, each with its min and mean pair similarity."""
    bodies = [it.body for it in items]
    jac, cos = pair_matrices(bodies, vectors)
    score = similarity_scores(bodies, jac, cos, settings)
    out = []
    for cluster in complete_link(score):
        if len(cluster) < 2:
            continue
        pairs = [score[a, b] for k, a in enumerate(cluster) for b in cluster[k + 1 :]]
        out.append(([items[c] for c in cluster], float(min(pairs)), float(np.mean(pairs))))
    return out


def plan(vault: Vault, session: str, scope: str | None = None, dry_run: bool = True) -> Report:
    """What consolidating ``session`` would do (nothing is written)."""
    if not session or not session.strip():
        raise InvalidArgument("session", "must not be empty")
    embedder = vault.embedder
    settings = load_settings(vault.config, profiles.for_model(embedder.model_id if embedder else None))
    items = _candidates(vault, session, scope)
    report = Report(session, scope, dry_run, "lexical" if vault.embedder is None else "hybrid")
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
        index = {it.rowid: k for k, it in enumerate(pool)}
        by_category: dict[str | None, list[Item]] = {}
        for it in pool:
            by_category.setdefault(it.category, []).append(it)
        for category in sorted(by_category, key=lambda c: c or ""):
            members = by_category[category]
            sub = None if vectors is None else vectors[[index[it.rowid] for it in members]]
            for cluster, low, mean in _cluster_group(members, sub, settings):
                rep = representative(cluster)
                others = [it for it in cluster if it.id != rep.id]
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


def consolidate(vault: Vault, session: str, scope: str | None = None, dry_run: bool = False) -> Report:
    """Consolidate one session; with ``dry_run`` only report what would change.

    Takes the vault's write lock (not re-entrant: do not call it from code
    that already holds ``vault.write_lock()``), so an ``add`` in another
    process waits instead of racing the superseding edits.
    """
    if dry_run:
        return plan(vault, session, scope, dry_run=True)
    with vault.write_lock():
        report = plan(vault, session, scope, dry_run=False)
        for group in report.groups:
            done = []
            for memory_id in group.superseded:
                # A file erased or broken since the plan (the watcher, a hand
                # edit) is skipped and reported; the rest still go through.
                try:
                    vault.update_meta(memory_id, {"superseded_by": group.representative})
                except (MemoryNotFound, MemoryFileError) as exc:
                    report.skipped.append({"scope": group.scope, "id": memory_id, "reason": str(exc)})
                    continue
                done.append(memory_id)
            group.superseded = done
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
            "sessions": [r.as_dict() for r in self.sessions if r.merged_groups],
        }


def consolidate_all(vault: Vault, scope: str | None = None, dry_run: bool = False) -> AllReport:
    """Backfill: consolidate every session that has active memories (in ``scope``).

    Memories without a session (hand-written files) are never consolidated:
    a person put each of them there on purpose.
    """
    sql = "SELECT DISTINCT session FROM memories WHERE session IS NOT NULL AND status = 'active'"
    params: list[Any] = []
    if scope is not None:
        sql += " AND scope = ?"
        params.append(scope)
    sessions = sorted(str(r[0]) for r in vault.conn.execute(sql + " ORDER BY session", params))
    out = AllReport(scope, dry_run)
    for session in sessions:
        out.sessions.append(consolidate(vault, session, scope, dry_run))
    return out


def unsupersede(vault: Vault, memory_id: str) -> Memory:
    """Make a superseded memory active again (removes ``superseded_by``)."""
    memory = vault.get(memory_id)
    if memory.status != "superseded":
        raise InvalidArgument("ID", f"memory {memory_id} is not superseded")
    with vault.write_lock():
        return vault.update_meta(memory_id, {"superseded_by": None})

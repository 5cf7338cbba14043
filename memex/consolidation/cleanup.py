"""``memex dedup``: find exact duplicates already in a vault and retire them.

Files copied by hand, or written before dedup existed, can hold the same
body twice. Within a scope, active memories with the same body hash (the
hash ``add`` uses: provenance prefixes and injected blocks ignored) form a
group; the one with the highest confidence, then the newest, is kept and
the others get ``superseded_by`` it. Nothing is deleted. A dry run reports
the plan; ``apply`` carries out at most ``limit`` changes per run, so a
surprising plan can be looked at before it touches many files.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memex.errors import InvalidArgument
from memex.meta_edit import update_meta
from memex.text import preview

if TYPE_CHECKING:
    from memex.vault import Vault

MAX_CHANGES = 200


@dataclass
class DuplicateGroup:
    scope: str
    keep: str
    supersede: list[str]
    preview: str


@dataclass
class CleanupReport:
    applied: bool
    groups: list[DuplicateGroup] = field(default_factory=list)
    changes: int = 0  # memories marked (or, in a dry run, to be marked) superseded
    remaining: int = 0  # duplicates left for a later run because of the limit

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _plan(vault: Vault) -> list[DuplicateGroup]:
    store = vault.local_store  # it edits files: this clone's (docs/postgres.md)
    groups: list[DuplicateGroup] = []
    for scope, digest in store.duplicate_keys():
        rows = store.active_with_hash(scope, digest)
        # Highest confidence first, then the newest; the id breaks ties so
        # two runs over the same vault agree.
        rows.sort(key=lambda r: (-r.confidence, _neg(r.created), r.id))
        keep = rows[0]
        groups.append(DuplicateGroup(scope, keep.id, [r.id for r in rows[1:]], preview(keep.body, 80)))
    return groups


def _neg(stamp: str) -> tuple[int, ...]:
    """Sort key that puts later ISO stamps first."""
    return tuple(-ord(c) for c in stamp)


def dedup_existing(vault: Vault, apply: bool = False, limit: int = MAX_CHANGES) -> CleanupReport:
    """Plan (and with ``apply`` carry out) the cleanup of exact duplicates."""
    if limit < 1:
        raise InvalidArgument("limit", f"must be at least 1, got {limit}")
    limit = min(limit, MAX_CHANGES)
    report = CleanupReport(applied=apply)
    vault.reindex()  # files copied by hand may not be indexed yet
    with vault.write_lock():
        budget = limit
        for group in _plan(vault):
            if budget <= 0:
                report.remaining += len(group.supersede)
                continue
            taken = group.supersede[:budget]
            report.remaining += len(group.supersede) - len(taken)
            group.supersede = taken
            report.groups.append(group)
            report.changes += len(taken)
            budget -= len(taken)
            if apply:
                for memory_id in taken:
                    update_meta(vault, memory_id, {"superseded_by": group.keep})
    return report

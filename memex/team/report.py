"""What ``memex sync`` reports (``memex sync --json``; docs/team.md, "What a sync does")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class SyncReport:
    remote: str
    branch: str
    dry_run: bool = False
    set_up: list[str] = field(default_factory=list)
    key: str = "ok"
    local_changes: int = 0  # files memex committed before pulling
    incoming: int = 0  # commits the remote had that this clone did not
    outgoing: int = 0  # commits pushed
    attempts: int = 0
    kept_edited: list[str] = field(default_factory=list)  # deleted there, edited here: kept
    repaired: list[str] = field(default_factory=list)  # memory files that came with conflict markers
    conflicts: list[dict[str, str]] = field(default_factory=list)
    erased: list[str] = field(default_factory=list)
    deduplicated: list[dict[str, Any]] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    history: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # What the vault's settings files say that memex does not use, as the merged
    # tree has them: a teammate's command or server in the shared file, ignored
    # (memex/config_trust.py), a key memex does not know.
    config: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def timed(report: SyncReport, step: str) -> Iterator[None]:
    """Add the time the block takes to ``report.seconds[step]``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        report.seconds[step] = report.seconds.get(step, 0.0) + time.perf_counter() - started

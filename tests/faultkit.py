"""Shared checks of the fault suite: leaks of erased text, and the counts it reports.

``MEMEX_FAULT_REPORT=FILE`` makes each fault-suite test append one JSON line
(cases run, faults injected, bytes leaked) to FILE; docs/reliability.md gives
the command that sums them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.erasekit import vault_bytes


def leaked_bytes(
    root: Path, needles: set[str], allowed: frozenset[str] | set[str] = frozenset(),
    names: frozenset[str] | set[str] | None = None,
) -> dict[str, int]:
    """{file: bytes of erased needles it holds} over every file under the vault except
    .git and the ``allowed`` paths (files a user restored, which doctor names).

    The ``names`` (by default the allowed paths) are not counted either:
    memory file names are made from the body's first words, and the index
    names a restored file in its error row (that is how doctor points at it).
    """
    found: dict[str, int] = {}
    if not needles:
        return found
    raw = [n.lower().encode("utf-8") for n in needles]
    stripped = sorted((p.lower().encode("utf-8") for p in (allowed if names is None else names)),
                   key=len, reverse=True)
    for rel, data in vault_bytes(root).items():
        if rel in allowed:
            continue
        low = data.lower()
        for name in stripped:
            low = low.replace(name, b"")
        size = sum(low.count(n) * len(n) for n in raw)
        if size:
            found[rel] = size
    return found


def report(kind: str, cases: int, faults: int, leaked: int, steps: int = 0, erasures: int = 0) -> None:
    target = os.environ.get("MEMEX_FAULT_REPORT")
    if not target:
        return
    line = {"suite": kind, "cases": cases, "faults": faults, "bytes_leaked": leaked, "steps": steps,
            "erasures": erasures}
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")

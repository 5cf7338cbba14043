"""What memex keeps of an agent's sessions between two hook processes.

Each hook is a new process; these small files under
``.memex/cache/agents/`` carry what one hook tells the next:

- ``<agent>-<session>.shown.json``: the memories the session's context
  holds, so that a prompt's recall does not show them again
  (docs/agents.md, "Shown once");
- ``<agent>.left.json``: the agent's sessions with archived turns not yet
  committed to long-term memories. Codex has no session-end event, so a
  session's decisions would stay in its archive; the next session's start
  commits the sessions left behind (docs/agents.md, "What each hook does").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memex.files import permissions
from memex.files.locking import file_lock
from memex.files.names import safe_name

if TYPE_CHECKING:
    from memex.vault import Vault


# What SessionStart and the prompts injected, until a compaction takes it out.
MAX_SHOWN = 200


def _shown_path(vault: Vault, agent: str, session: str) -> Path:
    return vault.paths.agents_cache / f"{agent}-{safe_name(session)}.shown.json"


def shown(vault: Vault, agent: str, session: str) -> list[str]:
    """The memory ids injected into this session's context so far."""
    try:
        data = json.loads(_shown_path(vault, agent, session).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [i for i in data if isinstance(i, str)] if isinstance(data, list) else []


def mark_shown(vault: Vault, agent: str, session: str, ids: list[str], fresh: bool = False) -> None:
    """Add ``ids`` to what the session's context holds (``fresh``: it holds only them now)."""
    path = _shown_path(vault, agent, session)
    if not ids and (not fresh or not path.exists()):
        return
    keep = list(dict.fromkeys([*([] if fresh else shown(vault, agent, session)), *ids]))[-MAX_SHOWN:]
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    permissions.write_private(tmp, json.dumps(keep))
    tmp.replace(path)


# Sessions left with uncommitted turns, per agent: a handful at most
# (each new session commits the others), bounded all the same.
MAX_LEFT = 100


def _left_path(vault: Vault, agent: str) -> Path:
    return vault.paths.agents_cache / f"{safe_name(agent)}.left.json"


def left_sessions(vault: Vault, agent: str) -> list[str]:
    """The agent's sessions whose archived turns are not all committed."""
    try:
        data = json.loads(_left_path(vault, agent).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [s for s in data if isinstance(s, str)] if isinstance(data, list) else []


def mark_left(vault: Vault, agent: str, session: str, left: bool) -> None:
    """Note that ``session`` has uncommitted turns (``left``) or has none now."""
    path = _left_path(vault, agent)
    # Two sessions' Stop hooks may write at once: one list, one writer.
    with file_lock(path.with_suffix(".lock"), timeout=30.0):
        before = left_sessions(vault, agent)
        after = [s for s in before if s != session] + ([session] if left else [])
        if after == before:
            return
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        permissions.write_private(tmp, json.dumps(after[-MAX_LEFT:]))
        tmp.replace(path)

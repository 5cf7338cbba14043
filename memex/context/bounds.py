"""How much one commit of a session's turns may do, and at what priority.

A commit turns the user's statements into memories, each through
``Vault.add`` (embedding, dedup, an fsync'd write): about a tenth of a
second each. A normal commit (some 20,000 tokens of conversation) finds a
handful. A Stop hook given a 28 MB transcript of statements left a
background ``memex context commit`` running for over four minutes at full
priority, 390 MB large, creating more than 1,372 memories. So a commit adds
at most :data:`MAX_MEMORIES` (the most recent statements: a later decision
is the one in force) and stops adding after :data:`MAX_SECONDS`; what it
leaves is counted in its result and noted on stderr (the background commit's
log), and the session goes on. The detached commit runs at
:data:`BACKGROUND_NICENESS`, so it never competes with the agent or the
user for the CPU. (A transcript's new part is itself read in a bounded
piece: memex/agents/transcript.py.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

MAX_MEMORIES = 200  # memories one commit adds (a dense 20k-token commit: 143, docs/context-engine.md)
MAX_SECONDS = 120.0  # spent adding them
BACKGROUND_NICENESS = 10  # os.nice of the detached commit

clock: Callable[[], float] = time.monotonic  # a test sets its own

T = TypeVar("T")


def most_recent(found: Sequence[T]) -> tuple[list[T], int]:
    """At most :data:`MAX_MEMORIES` of ``found`` (its last ones, in order),
    and how many were left out."""
    kept = list(found[-MAX_MEMORIES:]) if MAX_MEMORIES > 0 else []
    return kept, len(found) - len(kept)


class Deadline:
    """:data:`MAX_SECONDS` from now, on :data:`clock`."""

    def __init__(self) -> None:
        self.end = clock() + MAX_SECONDS

    def passed(self) -> bool:
        return clock() >= self.end


def note_left(session: str, left_out: int, found: int) -> str:
    """The line a commit that left statements out writes on stderr."""
    line = (f"memex context: session {session}: {left_out} of {found} statements not stored "
            f"(a commit stores at most {MAX_MEMORIES}, within {MAX_SECONDS:.0f}s)")
    print(line, file=sys.stderr)
    return line


def lower_priority(pid: int) -> None:
    """Run ``pid`` (a detached commit) at :data:`BACKGROUND_NICENESS` at least."""
    if not hasattr(os, "setpriority"):  # pragma: no cover - Windows
        return
    with contextlib.suppress(OSError):  # a commit that ended already, or no permission: run as is
        now = os.getpriority(os.PRIO_PROCESS, pid)
        os.setpriority(os.PRIO_PROCESS, pid, max(now, BACKGROUND_NICENESS))

"""The hand-off note: what a hook already stored verbatim this turn.

A keyword hook captures the user's sentence as it is; a moment later the
agent tends to save the same fact in its own words. The note, put in the
agent's context, lists those captures (id, scope, a short preview) and asks
the agent not to save them again but to supersede instead. The turn-echo
guard in :mod:`memex.dedup.pipeline` enforces the same rule for agents that ignore it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memex.dedup.thresholds import Thresholds, echo_cutoff
from memex.errors import InvalidArgument
from memex.text import escape, preview

if TYPE_CHECKING:
    from memex.vault import Vault

PREVIEW_CHARS = 160
MAX_ITEMS = 50


@dataclass
class HandoffItem:
    id: str
    scope: str
    source: str | None
    created: str
    preview: str


@dataclass
class Handoff:
    session: str
    items: list[HandoffItem] = field(default_factory=list)
    text: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def handoff(vault: Vault, session: str) -> Handoff:
    """The note for ``session``; its ``text`` is empty when nothing was captured."""
    if not session or not session.strip():
        raise InvalidArgument("session", "must not be empty")
    limits = Thresholds.from_config(vault.config)
    sources = limits.echo_capture_sources
    note = Handoff(session)
    if not sources:
        return note
    rows = vault.store.session_rows(session, sources, echo_cutoff(limits), MAX_ITEMS, newest_first=False)
    note.items = [
        # Escaped as in the <relevant-memories> block: the note reaches the agent
        # in its context and through MCP, and a preview is memory data.
        HandoffItem(mid, scope, source, created, escape(preview(body, PREVIEW_CHARS)))
        for mid, scope, source, created, body in rows
    ]
    note.text = render(note.items)
    return note


def render(items: list[HandoffItem]) -> str:
    """The note's text naming ``items``; '' for none (a hook names only captures not named before)."""
    if not items:
        return ""
    lines = ["Already stored verbatim this turn (do not save these again, not even in other words):"]
    lines += [f"- {i.id} [{i.scope}] {i.preview}" for i in items]
    lines.append(
        "To change one of them, supersede it (`memex supersede ID \"new text\"`) "
        "instead of adding a new memory."
    )
    return "\n".join(lines)

"""The context engine: what agents see of memex, and what memex keeps of them.

The API of docs/context-engine.md; every function takes an open
:class:`memex.Vault` first and returns JSON-serializable data:

- :func:`assemble` — recalled memories into the latest user message; the
  archived summary plus the newest messages when over budget.
- :func:`after_turn` — archive a finished turn under ``sessions/``; commit
  (extract memories) when enough tokens are pending.
- :func:`compact` — commit now and report tokens before and after.
- :func:`capture_keyword` — store an explicit "remember that ..." verbatim.
- :func:`render_memories_block` — the hygienic ``<relevant-memories>`` block.
- :func:`archive_search`, :func:`archive_expand` — the raw session archive;
  :func:`check_session` — refuse a session with no archive (a typed typo).
- :func:`session_id`, :func:`agent_id` — canonical ids from runtime ids.
"""

from memex.context.archive import archive_expand, archive_search, check_session
from memex.context.assemble import assemble
from memex.context.budget import budget_plan
from memex.context.capture import after_turn, capture_keyword, commit_session, compact
from memex.context.inject import render_memories_block
from memex.context.sessions import agent_id, session_id
from memex.context.settings import ContextSettings, load_settings

__all__ = [
    "ContextSettings",
    "after_turn",
    "agent_id",
    "archive_expand",
    "archive_search",
    "assemble",
    "budget_plan",
    "capture_keyword",
    "check_session",
    "commit_session",
    "compact",
    "load_settings",
    "render_memories_block",
    "session_id",
]

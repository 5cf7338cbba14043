"""Claude Code hooks: the event JSON on stdin, the documented answer on stdout.

Claude Code sends ``SessionStart``, ``UserPromptSubmit``, ``Stop``,
``PreCompact`` and ``SessionEnd`` (each with ``session_id``,
``transcript_path``, ``cwd`` and ``hook_event_name``); what memex does for
each is agent-neutral and lives in :mod:`memex.agents.hooks` (Codex sends the
same events). Here: which agent this is, and its transcript format.
Installing the hooks: memex/agents/install.py; docs/agents.md.
"""

from __future__ import annotations

from memex.agents import hooks
from memex.agents.hook_io import HookResult, Payload
from memex.vault import Vault

AGENT = "claude-code"
# Claude Code's transcript format (memex/agents/transcript.py reads it).
TRANSCRIPT_FORMAT = "claude-code"


def handle(vault: Vault, payload: Payload, agent: str = AGENT, fmt: str = TRANSCRIPT_FORMAT) -> HookResult:
    """Dispatch one Claude Code hook event to its handler (:func:`memex.agents.hooks.handle`)."""
    return hooks.handle(vault, payload, agent, fmt)

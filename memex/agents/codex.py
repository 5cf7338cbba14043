"""Codex: its lifecycle hooks, and the older ``notify`` program.

Codex hooks (``~/.codex/hooks.json`` or ``<repo>/.codex/hooks.json``) send
the same event JSON as Claude Code on stdin — ``session_id``,
``transcript_path`` (a rollout JSONL, or null), ``cwd``, ``hook_event_name``,
``model``; ``prompt`` and ``turn_id`` on UserPromptSubmit; ``source`` on
SessionStart; ``last_assistant_message`` and ``stop_hook_active`` on Stop —
and take the same ``hookSpecificOutput.additionalContext`` answer, so the
agent-neutral handlers of :mod:`memex.agents.hooks` serve them, reading
the rollout format.

``notify = ["memex", "hook", "codex"]`` in ``~/.codex/config.toml`` makes
Codex run memex after every turn with one JSON argument::

    {"type": "agent-turn-complete", "thread-id": "...", "turn-id": "...",
     "cwd": "/repo", "input-messages": ["remember that ..."],
     "last-assistant-message": "..."}

which gives keyword capture and archiving (no recall: notify cannot answer).
Use hooks or notify, not both, or each turn is archived twice.
"""

from __future__ import annotations

from typing import Any

from memex import context
from memex.agents import hooks
from memex.agents.hook_io import HookResult, Payload
from memex.errors import InvalidArgument
from memex.vault import Vault

AGENT = "codex"
NOTIFY_TYPE = "agent-turn-complete"


def _notify_turn(vault: Vault, payload: Payload) -> dict[str, Any]:
    thread = payload.get("thread-id")
    if not isinstance(thread, str) or not thread.strip():
        raise InvalidArgument("thread-id", "missing from the Codex notify payload")
    session = context.session_id(thread)
    inputs = payload.get("input-messages") or []
    if not isinstance(inputs, list) or not all(isinstance(m, str) for m in inputs):
        raise InvalidArgument("input-messages", "must be a list of strings")
    reply = payload.get("last-assistant-message")
    settings = hooks.AgentSettings.of(vault)
    captured = []
    for text in inputs:
        found = context.capture_keyword(vault, session, text, source="keyword", scope=settings.capture_scope)
        if found:
            captured.append(found)
    messages: list[dict[str, Any]] = [{"role": "user", "content": m} for m in inputs if m.strip()]
    if isinstance(reply, str) and reply.strip():
        messages.append({"role": "assistant", "content": reply})
    turn: dict[str, Any] = {"archived": 0}
    if messages:
        turn = context.after_turn(vault, session, messages, 0, source=AGENT, scope=settings.capture_scope)
    return {"captured": captured, "turn": turn}


def handle(vault: Vault, payload: Payload) -> HookResult:
    """A Codex hook event, or a notify payload (told apart by ``type``)."""
    if payload.get("type") == NOTIFY_TYPE:
        return HookResult(deferred=lambda: _notify_turn(vault, payload), vault=vault, label="notify")
    if "hook_event_name" not in payload and "type" in payload:
        return HookResult()  # other notify types (none documented yet) carry no turn
    return hooks.handle(vault, payload, agent=AGENT, fmt="codex")

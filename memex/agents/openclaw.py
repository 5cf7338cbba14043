"""OpenClaw gateway: ``message:received`` and ``message:sent`` events.

An OpenClaw hook handler forwards the gateway's event to ``memex hook
openclaw`` on stdin, as OpenClaw describes it::

    {"type": "message", "action": "received",
     "sessionKey": "agent:main:telegram:dm:42",
     "context": {"channelId": "telegram", "from": "42",
                 "content": "remember that I deploy on Fridays"}}

(``action: "sent"`` carries ``context.to`` and ``context.success``), or in the
flat form ``{"event": "message:received", "channel": "telegram",
"session": "agent:main:telegram:dm:42", "text": "..."}``.

Frames from the gateway are stored with ``source: openclaw`` and session
``openclaw-gateway:<channel>``. A received message gets keyword capture and
recall; the answer is ``{"session", "captured", "injected", "context"}`` where
``context`` is the ``<relevant-memories>`` block (empty when nothing
matched) for the handler to put in front of the agent's prompt. Both kinds
are archived in that session after the answer.

When the gateway drives Claude Code or Codex with memex hooks of their own,
the prompt is captured a second time by the backend's UserPromptSubmit; both
captures go to the same scope (``[agents] capture_scope``), where the exact
body hash (provenance ignored) makes the second one a duplicate.
"""

from __future__ import annotations

from typing import Any

from memex import context
from memex.agents import claude_code
from memex.agents.hook_io import HookResult, Payload
from memex.errors import InvalidArgument
from memex.vault import Vault

SOURCE = "openclaw"


def _frame(payload: Payload) -> tuple[str, str, str, str | None, bool]:
    """(action, channel, text, session key, delivered) from either event form."""
    ctx = payload.get("context")
    if isinstance(ctx, dict) and payload.get("type") == "message":
        action = payload.get("action")
        channel = ctx.get("channelId") or ctx.get("channel")
        text = ctx.get("content")
        key = payload.get("sessionKey") or ctx.get("sessionKey")
        delivered = ctx.get("success", True) is not False
    else:
        event = payload.get("event")
        if not isinstance(event, str) or not event.startswith("message:"):
            raise InvalidArgument("event", f"expected message:received or message:sent, got {event!r}")
        action = event.split(":", 1)[1]
        channel = payload.get("channel")
        text = payload.get("text")
        key = payload.get("session")
        delivered = payload.get("success", True) is not False
    if action not in ("received", "sent"):
        raise InvalidArgument("action", f"expected received or sent, got {action!r}")
    if not isinstance(channel, str) or not channel.strip():
        raise InvalidArgument("channel", "missing from the OpenClaw event (context.channelId)")
    if not isinstance(text, str):
        raise InvalidArgument("text", "missing from the OpenClaw event (context.content)")
    return action, channel.strip(), text, key if isinstance(key, str) else None, delivered


def gateway_session(channel: str) -> str:
    return f"openclaw-gateway:{channel}"


def _archive(vault: Vault, session: str, role: str, text: str, scope: str) -> dict[str, Any]:
    result: dict[str, Any] = context.after_turn(
        vault, session, [{"role": role, "content": text}], 0, source=SOURCE, scope=scope
    )
    return result


def handle(vault: Vault, payload: Payload) -> HookResult:
    action, channel, text, key, delivered = _frame(payload)
    session = gateway_session(channel)
    settings = claude_code.AgentSettings.of(vault)
    scope = settings.capture_scope
    if action == "sent":
        if not delivered or not text.strip():
            return HookResult({"session": session, "archived": False})
        return HookResult({"session": session, "archived": True},
                          deferred=lambda: _archive(vault, session, "assistant", text, scope),
                          vault=vault, label="message:sent")
    captured = None
    block, injected = "", []
    if claude_code.switch(vault, "auto_recall") and text.strip():
        agent = context.agent_id(key, payload.get("agentId") if isinstance(payload.get("agentId"), str) else None)
        scopes = list(dict.fromkeys([scope, "user", f"agent:{agent}"]))
        answer = context.assemble(vault, session, [{"role": "user", "content": text}],
                                  settings.context_window, scopes=scopes)
        injected = list(answer.get("injected") or [])
        block = claude_code.injected_block(answer)
    if claude_code.switch(vault, "auto_capture"):
        captured = context.capture_keyword(vault, session, text, source=SOURCE, scope=scope)
    answer_out = {"session": session, "captured": captured, "injected": injected, "context": block}
    return HookResult(answer_out, deferred=lambda: _archive(vault, session, "user", text, scope),
                      vault=vault, label="message:received")

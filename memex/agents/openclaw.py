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

Each conversation is its own memex session: the event's ``sessionKey``
(``agent:<id>:<channel>:<kind>:<peer>``) when given, else the channel plus
the peer (``from`` of a received message, ``to`` of a sent one).

Captures from a gateway go to a scope of their own, never ``user``: anyone
who can write to the bot could otherwise plant "remember that ..." memories
that every Claude Code project would later be shown. The scope is
``[openclaw] capture_scope`` (default ``agent:openclaw``; ``{channel}`` and
``{sender}`` in it are replaced, e.g. ``agent:openclaw-{channel}``), and
recall reads that scope plus ``[openclaw] recall_scopes`` (default none;
``["user"]`` for a gateway only its owner talks to).

A received message gets keyword capture and recall; the answer is
``{"session", "captured", "injected", "context"}`` where ``context`` is the
``<relevant-memories>`` block (empty when nothing matched). Both kinds are
archived before the hook exits, not in a detached child: the handler
(``install.py``) runs one hook at a time per conversation, so turns are
archived in the order they happened.
"""

from __future__ import annotations

import re
from typing import Any

from memex import context
from memex.agents import hooks
from memex.agents.hook_io import HookResult, Payload
from memex.config import CONFIG_RELPATH, setting, string_list
from memex.errors import InvalidArgument
from memex.vault import Vault

SOURCE = "openclaw"
DEFAULT_SCOPE = "agent:openclaw"
_KEY = re.compile(r"^agent:[^:]+:([^:]+):(?:.*:)?([^:]+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _where() -> str:
    return f"{CONFIG_RELPATH} [openclaw]"


def _key_parts(session_key: Any) -> tuple[str, str]:
    """(channel, peer) from ``agent:<id>:<channel>:...:<peer>``; empty when unknown."""
    if isinstance(session_key, str):
        match = _KEY.match(session_key.strip())
        if match:
            return match.group(1), match.group(2)
    return "", ""


def capture_scope(vault: Vault, session_key: Any = None, channel: str = "", sender: str = "") -> str:
    """Where the gateway's captures go: ``[openclaw] capture_scope`` with
    ``{channel}`` / ``{sender}`` filled in (from the session key when not given)."""
    template: str = setting(vault.config.section("openclaw"), "capture_scope", DEFAULT_SCOPE, _where())
    key_channel, key_peer = _key_parts(session_key)
    fill = {"channel": channel or key_channel or "unknown", "sender": sender or key_peer or "unknown"}
    scope = template
    for name, value in fill.items():
        scope = scope.replace("{" + name + "}", _UNSAFE.sub("-", value).strip("-").lower() or "unknown")
    return vault.check_scope(scope)


def recall_scopes(vault: Vault, session_key: Any = None, channel: str = "", sender: str = "") -> list[str]:
    extra = string_list(vault.config.section("openclaw"), "recall_scopes", (), _where())
    own = capture_scope(vault, session_key, channel, sender)
    return list(dict.fromkeys([own, *(vault.check_scope(s) for s in extra)]))


def _frame(payload: Payload) -> tuple[str, str, str, str | None, bool, str, str]:
    """(action, channel, text, session key, delivered, conversation, peer) from either event form.

    The peer is who the gateway talks to (``from`` of a received message,
    ``to`` of a sent one); the conversation is ``conversationId``, else the peer.
    """
    ctx = payload.get("context")
    if isinstance(ctx, dict) and payload.get("type") == "message":
        action = payload.get("action")
        channel = ctx.get("channelId") or ctx.get("channel")
        text = ctx.get("content")
        key = payload.get("sessionKey") or ctx.get("sessionKey")
        delivered = ctx.get("success", True) is not False
        peer = ctx.get("to") if action == "sent" else ctx.get("from")
        conversation = ctx.get("conversationId") or peer
    else:
        event = payload.get("event")
        if not isinstance(event, str) or not event.startswith("message:"):
            raise InvalidArgument("event", f"expected message:received or message:sent, got {event!r}")
        action = event.split(":", 1)[1]
        channel = payload.get("channel")
        text = payload.get("text")
        key = payload.get("session")
        delivered = payload.get("success", True) is not False
        peer = payload.get("to") if action == "sent" else payload.get("from")
        conversation = payload.get("conversation") or peer
    if action not in ("received", "sent"):
        raise InvalidArgument("action", f"expected received or sent, got {action!r}")
    if not isinstance(channel, str) or not channel.strip():
        raise InvalidArgument("channel", "missing from the OpenClaw event (context.channelId)")
    if not isinstance(text, str):
        raise InvalidArgument("text", "missing from the OpenClaw event (context.content)")
    key_text = key if isinstance(key, str) and key.strip() else None
    return action, channel.strip(), text, key_text, delivered, _id(conversation), _id(peer)


def _id(value: Any) -> str:
    return str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""


def gateway_session(channel: str, session_key: str | None = None, conversation: str = "") -> str:
    """One memex session per conversation: the session key's, else channel + conversation."""
    if session_key:
        return context.session_id(session_key=session_key)
    name = f"openclaw-gateway:{channel}:{conversation}" if conversation else f"openclaw-gateway:{channel}"
    return context.session_id(name)


def _archive(vault: Vault, session: str, role: str, text: str, scope: str) -> dict[str, Any]:
    result: dict[str, Any] = context.after_turn(
        vault, session, [{"role": role, "content": text}], 0, source=SOURCE, scope=scope
    )
    return result


def handle(vault: Vault, payload: Payload) -> HookResult:
    action, channel, text, key, delivered, conversation, peer = _frame(payload)
    session = gateway_session(channel, key, conversation)
    scope = capture_scope(vault, key, channel, peer)
    if action == "sent":
        if not delivered or not text.strip():
            return HookResult({"session": session, "archived": False})
        # Archived now, before the hook exits: the handler waits for it, so
        # the next message of this conversation comes after (docs/openclaw.md).
        _archive(vault, session, "assistant", text, scope)
        return HookResult({"session": session, "archived": True})
    captured = None
    block, injected = "", []
    # The installed handler cannot use recall (OpenClaw does not wait for it)
    # and says so with "recall": false, sparing a model load per message.
    wanted = payload.get("recall") is not False
    if wanted and hooks.switch(vault, "auto_recall") and text.strip():
        window = hooks.AgentSettings.of(vault).context_window
        answer = context.assemble(vault, session, [{"role": "user", "content": text}],
                                  window, scopes=recall_scopes(vault, key, channel, peer))
        injected = list(answer.get("injected") or [])
        block = hooks.injected_block(answer)
    if hooks.switch(vault, "auto_capture"):
        captured = context.capture_keyword(vault, session, text, source=SOURCE, scope=scope)
    _archive(vault, session, "user", text, scope)
    return HookResult({"session": session, "captured": captured, "injected": injected, "context": block})

"""Chat messages as the agent runtimes pass them, and the rules for trimming them.

A message is ``{"role": "user"|"assistant"|"system"|"tool", "content": str |
list[block]}`` with Anthropic-style blocks (``text``, ``tool_use``,
``tool_result``) or OpenAI-style ``tool_calls`` / ``role: "tool"``. Trimming
works on *units*, not messages, so that a tool call is never separated from
its result: an API rejects a ``tool_result`` whose ``tool_use`` was dropped.
"""

from __future__ import annotations

import copy
from typing import Any

from memex.errors import InvalidArgument
from memex.text import without_lone_surrogates

ROLES = frozenset({"user", "assistant", "system", "tool"})


def check_messages(messages: Any, argument: str = "messages") -> list[dict[str, Any]]:
    """Validate the shape of a message list; the error names the bad item.
    Returns the messages to use: a lone surrogate in any string (JavaScript
    runtimes cut an emoji in half that way, and JSON carries it as "\\ud83d")
    reads as U+FFFD, since no tokenizer, hash or UTF-8 file can take it."""
    if not isinstance(messages, list):
        raise InvalidArgument(argument, f"must be a list of messages, got {type(messages).__name__}")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidArgument(f"{argument}[{i}]", "must be an object with role and content")
        if msg.get("role") not in ROLES:
            raise InvalidArgument(f"{argument}[{i}].role", f"must be one of {sorted(ROLES)}, got {msg.get('role')!r}")
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InvalidArgument(f"{argument}[{i}].content", "must be a string or a list of blocks")
    cleaned: list[dict[str, Any]] = without_lone_surrogates(messages)
    return cleaned


def _blocks(msg: dict[str, Any]) -> list[Any]:
    content = msg.get("content")
    return content if isinstance(content, list) else []


def tool_use_ids(msg: dict[str, Any]) -> set[str]:
    """Ids of the tool calls this message makes."""
    ids = {str(b.get("id")) for b in _blocks(msg) if isinstance(b, dict) and b.get("type") == "tool_use"}
    for call in msg.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id"):
            ids.add(str(call["id"]))
    return ids


def tool_result_ids(msg: dict[str, Any]) -> set[str]:
    """Ids of the tool calls this message answers."""
    ids = {
        str(b.get("tool_use_id"))
        for b in _blocks(msg)
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }
    if msg.get("role") == "tool" and msg.get("tool_call_id"):
        ids.add(str(msg["tool_call_id"]))
    return ids


def units(messages: list[dict[str, Any]]) -> list[list[int]]:
    """Indices grouped so that every tool call travels with its results.

    A message that answers a call opened earlier joins the unit of that call
    (and so does everything between them).
    """
    groups: list[list[int]] = []
    open_calls: dict[str, int] = {}  # call id -> index of its group
    for i, msg in enumerate(messages):
        answers = tool_result_ids(msg)
        owners = [open_calls[c] for c in answers if c in open_calls]
        if owners:
            first = min(owners)
            merged = [j for g in groups[first:] for j in g] + [i]
            del groups[first:]
            groups.append(merged)
            target = len(groups) - 1
            for call, owner in list(open_calls.items()):
                if owner >= first:
                    open_calls[call] = target
            for call in answers:
                open_calls.pop(call, None)
        else:
            groups.append([i])
            target = len(groups) - 1
        for call in tool_use_ids(msg):
            open_calls[call] = target
    return groups


def is_tool_result_only(msg: dict[str, Any]) -> bool:
    blocks = _blocks(msg)
    return bool(blocks) and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if content is None or content == "":
        return []
    return [{"type": "text", "text": str(content)}]


def merge_content(a: Any, b: Any) -> Any:
    """Content of two messages joined; strings stay strings."""
    if isinstance(a, str) and isinstance(b, str):
        return f"{a}\n\n{b}" if a and b else a or b
    return _as_blocks(a) + _as_blocks(b)


def normalize_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge consecutive user (and consecutive assistant) messages; start with a user.

    Tool-result-only user messages are merged like any user message, which
    keeps them right after the assistant message that made the calls.
    System messages are kept in place and do not break a run.
    """
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        prev = next((m for m in reversed(out) if m.get("role") != "system"), None)
        if (
            prev is not None
            and role == prev.get("role")
            and role in ("user", "assistant")
            and out[-1] is prev
            and not prev.get("tool_calls")
            and not msg.get("tool_calls")
        ):
            prev["content"] = merge_content(prev.get("content"), msg.get("content"))
            continue
        out.append(copy.deepcopy(msg))
    # An API wants the conversation to open with the user; an assistant
    # message left first by trimming has lost its question and goes.
    while out and out[0].get("role") == "assistant" and not tool_use_ids(out[0]):
        out.pop(0)
    return out


def latest_index(messages: list[dict[str, Any]], role: str = "user") -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == role:
            return i
    return None

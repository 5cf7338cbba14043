"""JSON sources: ChatGPT and Claude.ai conversation exports, mem0-style lists.

A conversation is not a list of memories: most of it is questions, drafts
and answers. What an import keeps of it is what the user stated about
themselves and their work, found by the same rules the context engine uses
at the end of a session (memex/context/extract.py): explicit preferences,
decisions, constraints and "always"/"never" rules of the *user's* messages,
and what the user asked to be remembered ("remember that ..."). Assistant
messages are never mined: an assistant's suggestion is not the user's fact.

A mem0-style list is already a list of memories: each ``memory`` string is
one memory (its first ``categories`` entry, when there is one, becomes the
category).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memex.context.extract import (
    extract_rules,
    is_remember_request,
    remember_excerpt,
)
from memex.errors import InvalidArgument
from memex.importers.markdown import Block

def detect(data: Any) -> str | None:
    """Which JSON export this is: chatgpt, claude-ai, mem0 or None."""
    items = _items(data)
    first = next((i for i in items if isinstance(i, dict)), None)
    if first is None:
        return None
    if "mapping" in first:
        return "chatgpt"
    if "chat_messages" in first:
        return "claude-ai"
    if "memory" in first:
        return "mem0"
    return None


def _items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "memories", "conversations"):
            if isinstance(data.get(key), list):
                return list(data[key])
        return [data]
    return []


def user_statements(texts: list[tuple[str, str]]) -> Iterator[Block]:
    """Blocks from (message id, user text) pairs of one conversation."""
    for message_id, text in texts:
        if not text.strip():
            continue
        if is_remember_request(text):
            yield Block(remember_excerpt(text).strip(), message_id)  # stored as said, default confidence
            continue
        for found in extract_rules([{"role": "user", "content": text}]):
            yield Block(found.text, message_id, category=found.category, confidence=found.confidence)


def chatgpt_blocks(data: Any, origin: str) -> Iterator[Block]:
    for n, conv in enumerate(_conversations(data, origin, "mapping")):
        conv_id = str(conv.get("conversation_id") or conv.get("id") or f"conversation-{n + 1}")
        texts = [(f"{conv_id}#{mid}", text) for mid, text in _chatgpt_user_messages(conv)]
        yield from _title(user_statements(texts), conv.get("title"))


def _chatgpt_user_messages(conv: dict[str, Any]) -> list[tuple[str, str]]:
    """The user's messages on the branch the conversation shows (its current node
    back to the root), oldest first; without a current node, every message by time."""
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        return []
    chain: list[dict[str, Any]] = []
    node_id = conv.get("current_node")
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id] if isinstance(mapping[node_id], dict) else {}
        chain.append(node)
        node_id = node.get("parent")
    if not chain:
        chain = sorted(
            (n for n in mapping.values() if isinstance(n, dict)),
            key=lambda n: _number(n["message"].get("create_time") if isinstance(n.get("message"), dict) else None),
            reverse=True,
        )
    found: list[tuple[str, str]] = []
    for node in reversed(chain):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        author = message.get("author")
        if not isinstance(author, dict) or author.get("role") != "user":
            continue
        content = message.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        text = "\n".join(p for p in parts if isinstance(p, str)) if isinstance(parts, list) else ""
        found.append((str(message.get("id") or node.get("id") or len(found)), text))
    return found


def claude_ai_blocks(data: Any, origin: str) -> Iterator[Block]:
    for n, conv in enumerate(_conversations(data, origin, "chat_messages")):
        conv_id = str(conv.get("uuid") or f"conversation-{n + 1}")
        texts = []
        messages = conv.get("chat_messages")
        for m, message in enumerate(messages if isinstance(messages, list) else []):
            if not isinstance(message, dict) or message.get("sender") not in ("human", "user"):
                continue
            text = message.get("text")
            blocks = message.get("content")
            if (not isinstance(text, str) or not text.strip()) and isinstance(blocks, list):
                text = "\n".join(
                    str(c.get("text", "")) for c in blocks if isinstance(c, dict) and c.get("type") == "text"
                )
            if not isinstance(text, str):
                continue
            texts.append((f"{conv_id}#{message.get('uuid') or m + 1}", text))
        yield from _title(user_statements(texts), conv.get("name"))


def mem0_blocks(data: Any, origin: str) -> Iterator[Block]:
    items = _items(data)
    if not items:
        raise InvalidArgument(origin, "holds no memories (expected a list of objects with a 'memory' field)")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("memory"), str):
            continue
        categories = item.get("categories")
        category = str(categories[0]) if isinstance(categories, list) and categories else None
        yield Block(item["memory"], str(item.get("id") or n), category=category)


def _conversations(data: Any, origin: str, marker: str) -> list[dict[str, Any]]:
    found = [c for c in _items(data) if isinstance(c, dict) and marker in c]
    if not found:
        raise InvalidArgument(origin, f"holds no conversations (expected a list of objects with '{marker}')")
    return found


def _title(blocks: Iterator[Block], title: Any) -> Iterator[Block]:
    for block in blocks:
        block.section = str(title) if isinstance(title, str) and title.strip() else None
        yield block


def _number(value: Any) -> float:
    """A timestamp to order messages by; one no float can hold (an integer
    of 400 digits) orders as the latest, instead of ending the import."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")

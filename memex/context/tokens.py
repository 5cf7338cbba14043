"""Token counts without downloading anything.

memex ships the WordPiece tokenizer of its embedding model
(``memex/model_files/tokenizer.json``) and the ``tokenizers`` package is
already installed for the model, so counts come from a real tokenizer. It is
not the chat model's tokenizer, but it tracks BPE counts far better than a
characters-divided-by-four rule, above all for Chinese, which WordPiece (like
the chat models' tokenizers) splits roughly one token per character. When the
file cannot be loaded, a heuristic is used: one token per CJK character plus
one per four other characters.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any

from memex.index.chunking import load_tokenizer
from memex.text import cjk_count

# Role, separators and framing a chat API adds around each message.
MESSAGE_OVERHEAD = 4


def _tokenizer() -> Any:
    return load_tokenizer("bundled")  # None: the documented heuristic


def heuristic_count(text: str) -> int:
    cjk = cjk_count(text)
    return cjk + (len(text) - cjk + 3) // 4


def count_text(text: str) -> int:
    """Tokens in ``text``."""
    if not text:
        return 0
    tok = _tokenizer()
    if tok is None:
        return heuristic_count(text)
    return len(tok.encode(text, add_special_tokens=False).ids)


def block_text(block: Any) -> str:
    """The text a content block contributes to the prompt."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return json.dumps(block, ensure_ascii=False, default=str)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), ensure_ascii=False, default=str)}"
    if kind == "tool_result":
        return content_text(block.get("content", ""))
    return json.dumps(block, ensure_ascii=False, default=str)


def content_text(content: Any) -> str:
    """All text of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block_text(b) for b in content)
    if content is None:
        return ""
    return block_text(content)


def _message_text(message: dict[str, Any]) -> str:
    text = content_text(message.get("content"))
    if message.get("tool_calls"):  # OpenAI style assistant tool calls
        text += "\n" + json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
    return text


# A long-lived caller (an agent runtime's plugin, the MCP server) assembles
# the same growing conversation every turn; counts of texts already seen are
# kept, keyed by a hash so that the cache holds no conversation text.
_CACHE: OrderedDict[bytes, int] = OrderedDict()
CACHE_SIZE = 8192


def count_texts(texts: list[str]) -> list[int]:
    """Tokens of each text; one batch call for those not counted before."""
    tok = _tokenizer()
    if tok is None:
        return [heuristic_count(t) for t in texts]
    counts = [0] * len(texts)
    keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() if t else b"" for t in texts]
    todo = []
    for i, key in enumerate(keys):
        if key and key in _CACHE:
            counts[i] = _CACHE[key]
            _CACHE.move_to_end(key)
        elif key:
            todo.append(i)
    if todo:
        encoded = tok.encode_batch([texts[i] for i in todo], add_special_tokens=False)
        for i, enc in zip(todo, encoded):
            counts[i] = len(enc.ids)
            _CACHE[keys[i]] = counts[i]
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return counts


def clear_count_cache() -> None:
    """Forget cached counts (benchmarks measure a fresh process this way)."""
    _CACHE.clear()


def message_costs(messages: list[dict[str, Any]]) -> list[int]:
    """Tokens of each message, framing included."""
    return [MESSAGE_OVERHEAD + n for n in count_texts([_message_text(m) for m in messages])]


def count_message(message: dict[str, Any]) -> int:
    return message_costs([message])[0]


def count_messages(messages: list[dict[str, Any]]) -> int:
    return sum(message_costs(messages))


def newest_lines(lines: list[str], max_tokens: int) -> list[str]:
    """The longest tail of ``lines`` whose joined text stays within ``max_tokens``.

    Each line is counted once (plus one token for its newline), so cutting a
    long summary is linear, not quadratic.
    """
    costs = [count_text(line) + 1 for line in lines]
    total = sum(costs)
    start = 0
    while start < len(lines) and total > max_tokens:
        total -= costs[start]
        start += 1
    return lines[start:]

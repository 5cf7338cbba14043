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

import functools
import json
import re
from importlib import resources
from typing import Any

# Role, separators and framing a chat API adds around each message.
MESSAGE_OVERHEAD = 4
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    try:
        from tokenizers import Tokenizer

        path = resources.files("memex") / "model_files" / "tokenizer.json"
        tok = Tokenizer.from_str(path.read_text(encoding="utf-8"))
        tok.no_truncation()
        tok.no_padding()
        return tok
    except Exception:  # any failure means the documented heuristic
        return None


def heuristic_count(text: str) -> int:
    cjk = len(_CJK.findall(text))
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


def count_message(message: dict[str, Any]) -> int:
    extra = ""
    if message.get("tool_calls"):  # OpenAI style assistant tool calls
        extra = json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
    return MESSAGE_OVERHEAD + count_text(content_text(message.get("content"))) + count_text(extra)


def count_messages(messages: list[dict[str, Any]]) -> int:
    return sum(count_message(m) for m in messages)


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

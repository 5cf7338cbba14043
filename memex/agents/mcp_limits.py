"""What the MCP server lets in and lets out: argument checks and answer sizes.

In: every tool's arguments are checked against its schema with unknown
arguments refused, and a refusal reads as one plain sentence naming the
argument (the SDK's own text is pydantic's, with a documentation URL).

Out: Claude Code warns when a tool answer passes 10,000 tokens and cuts it
at 25,000 (``MAX_MCP_OUTPUT_TOKENS``); other clients have smaller windows.
Every answer is kept within :data:`MAX_ANSWER_CHARS` characters and
:data:`MAX_ANSWER_TOKENS` tokens (memex's tokenizer); what is left out is
said in a ``truncated`` entry that tells the agent how to ask for the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError


MAX_ANSWER_CHARS = 20_000
MAX_ANSWER_TOKENS = 8_000
Answer = dict[str, Any]


def size_ok(answer: Answer) -> bool:
    text = json.dumps(answer, ensure_ascii=False)
    from memex.context.tokens import count_text  # the tokenizer: not before a tool answers (server start-up)

    return len(text) <= MAX_ANSWER_CHARS and count_text(text) <= MAX_ANSWER_TOKENS


def _longest_string(obj: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], int]:
    best: tuple[tuple[Any, ...], int] = ((), -1)
    if isinstance(obj, str):
        return path, len(obj)
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        found = _longest_string(value, (*path, key))
        if found[1] > best[1]:
            best = found
    return best


def clip_strings(answer: Answer) -> Answer:
    """Shorten the longest texts of ``answer`` (a copy) until it fits."""
    out: Answer = json.loads(json.dumps(answer))
    while not size_ok(out):
        path, length = _longest_string(out)
        if length < 20 or not path:
            break
        holder: Any = out
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = holder[path[-1]][: int(length * 0.7)] + "…"
        out["truncated"] = {"how_to_page": "long texts were cut to fit the answer size limit"}
    return out


def cap_list(answer: Answer, key: str, how_to_page: Callable[[int], str]) -> Answer:
    """``answer`` with its ``key`` list cut from the end until the whole fits."""
    if size_ok(answer):
        return answer
    items = list(answer[key])
    shown = list(items)
    while len(shown) > 1 and not size_ok({**answer, key: shown}):
        shown.pop()
    out = {**answer, key: shown,
           "truncated": {"shown": len(shown), "of": len(items), "how_to_page": how_to_page(len(shown))}}
    return out if size_ok(out) else clip_strings(out)


def _where(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "arguments"


def validation_text(tool: str, exc: ValidationError, accepted: list[str]) -> str:
    """One sentence per problem, naming the argument; no values echoed, no URL."""
    problems = []
    for err in exc.errors(include_url=False):
        where = _where(err["loc"])
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r} (accepted: {', '.join(accepted)})")
        elif err["type"] == "missing":
            problems.append(f"{where} is required")
        else:
            message = str(err["msg"])
            problems.append(f"{where}: {message[:1].lower()}{message[1:]}")
    return f"{tool}: " + "; ".join(problems)

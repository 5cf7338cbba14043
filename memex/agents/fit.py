"""Fitting a hook's added context within what its agent keeps whole.

An agent that receives more than its documented limit does not fail: it
saves the text to a file or shows a preview, so the memories quietly stop
reaching the model (limits in :mod:`memex.agents.hook_io`, sources in
docs/agents.md). Every hook answer therefore goes through :func:`fit_context`,
which gives the fixed parts (session note, hand-off note) a bounded share and
the ``<relevant-memories>`` block the rest, dropping its last (least relevant)
memories until the whole fits — never cutting the block open, so no tag is
left unclosed.
"""

from __future__ import annotations

from memex.agents import hook_io
from memex.context.inject import trim_block
from memex.context.tokens import count_text

SEPARATOR = "\n\n"


def clip(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, an ellipsis marking a cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def join(*parts: str) -> str:
    return SEPARATOR.join(p for p in parts if p and p.strip())


def block_room(agent: str, head: str = "", tail: str | None = None) -> int:
    """Characters left for the memories block beside ``head`` and ``tail``
    (``None``: a tail not known yet, given the largest share it may take)."""
    chars, _ = hook_io.context_limits(agent)
    tail_chars = chars // 4 if tail is None else len(clip(tail, chars // 4))
    return max(0, chars - len(clip(head, chars // 4)) - tail_chars - 2 * len(SEPARATOR))


def fit_context(agent: str, head: str, block: str, tail: str = "") -> str:
    """``head``, ``block`` and ``tail`` joined, within the agent's limits."""
    chars, tokens = hook_io.context_limits(agent)
    head, tail = clip(head, chars // 4), clip(tail, chars // 4)

    def fits(text: str) -> bool:
        return len(text) <= chars and (tokens is None or count_text(text) <= tokens)

    block = trim_block(block, lambda b: fits(join(head, b, tail)))
    text = join(head, block, tail)
    while not fits(text) and text:
        # Only the plain notes are left (the block is gone): shorten them.
        text = clip(text, int(len(text) * 0.8))
    return text

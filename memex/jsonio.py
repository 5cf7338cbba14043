"""Reading JSON that comes from outside memex: agents' hook payloads and
transcripts, the context engine's and OpenClaw's requests, files a person
or a crash may have left half written.

Such JSON can hold two things Python's json module does not answer with a
``ValueError``: nesting past Python's stack (a ``RecursionError``), and,
from JavaScript programs (Claude Code, Codex, OpenClaw), half an emoji: a
string cut between the two halves of a surrogate pair arrives as a lone
``"\\ud83d"``, which no UTF-8 file, hash or tokenizer takes. :func:`loads`
answers both the same way for every reader: the first as a ``ValueError``,
the second read as U+FFFD.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memex.text import without_lone_surrogates

NESTED = "nested too deeply to read"
# A surrogate escape in the raw text: only then can a string hold a lone
# half, so only then are the decoded strings looked at (a transcript line
# can be megabytes).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads(raw: str | bytes) -> Any:
    """``json.loads(raw)``; a ``ValueError`` for anything it cannot read (nesting
    past the stack included), and each lone surrogate in its strings as U+FFFD."""
    try:
        value = json.loads(raw)
    except RecursionError as exc:
        raise ValueError(NESTED) from exc
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw
    return without_lone_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value

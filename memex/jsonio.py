"""Reading JSON that comes from outside memex: agents' hook payloads and
transcripts, the context engine's and OpenClaw's requests, files a person
or a crash may have left half written.

Such JSON can hold two things Python's json module does not answer with a
``ValueError``: nesting past Python's stack (a ``RecursionError``), and,
from JavaScript programs (Claude Code, Codex, OpenClaw), half an emoji: a
string cut between the two halves of a surrogate pair arrives as a lone
``"\\ud83d"`` (or, in bytes, as that half's own three bytes), which no
UTF-8 file, hash or tokenizer takes. :func:`loads`
answers both the same way for every reader: the first as a ``ValueError``,
the second read as U+FFFD.
"""

from __future__ import annotations

import json
import re
from typing import Any

NESTED = "nested too deeply to read"
# A surrogate escape in the raw text: only then can a string hold a lone
# half, so only then are the decoded strings looked at (a transcript line
# can be megabytes).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# In bytes also the surrogate's own three bytes (ED A0-BF ..): json.loads
# decodes bytes with "surrogatepass", so they read as a lone half too.
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def read(raw: str | bytes) -> tuple[Any, bool]:
    """:func:`loads`, and whether a lone surrogate was read as U+FFFD (a
    reader passing the raw line on then sends the value instead)."""
    try:
        value = json.loads(raw)
    except RecursionError as exc:
        raise ValueError(NESTED) from exc
    # Bytes are searched as they are: decoding a megabyte line only to look is work json.loads did.
    escaped = _SURROGATE_ESCAPE_BYTES.search(raw) if isinstance(raw, (bytes, bytearray)) else _SURROGATE_ESCAPE.search(raw)
    if not escaped:
        return value, False
    from memex.text import without_lone_surrogates  # the rare line: kept off the MCP front's start-up

    clean = without_lone_surrogates(value)
    return clean, clean is not value


def loads(raw: str | bytes) -> Any:
    """``json.loads(raw)``; a ``ValueError`` for anything it cannot read (nesting
    past the stack included), and each lone surrogate in its strings as U+FFFD."""
    return read(raw)[0]

"""Session and agent ids as the adapters receive them from agent runtimes.

A session id must be usable as a folder name (``sessions/<id>/``) and be the
same for every writer of one conversation, so ids are canonicalized here
before anything else sees them.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import uuid

from memex.errors import InvalidArgument

# Characters no file system accepts in a name (Windows is the strictest),
# plus whitespace, which hooks pass around unquoted.
_ILLEGAL = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f\s]')
_AGENT_KEY = re.compile(r"^agent:([^:]+):.+$")
# A runtime's own id that is already safe is kept readable, within this size.
MAX_PLAIN = 128


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def session_id(raw: str | None = None, session_key: str | None = None) -> str:
    """The canonical session id.

    - with ``session_key``: sha256 of the key (a key names a conversation
      across restarts, which the runtime's raw id may not);
    - a UUID: lower-cased, so ``ABC-...`` and ``abc-...`` are one session;
    - an id with characters illegal in file names (or ``.``/``..``, or too
      long): sha256 of ``"openclaw-session:" + id``;
    - anything else unchanged.
    """
    if session_key is not None and session_key.strip():
        return _sha(session_key.strip())
    if raw is None or not raw.strip():
        raise InvalidArgument("session", "give a session id or a session key")
    raw = raw.strip()
    try:
        return str(uuid.UUID(raw)).lower() if len(raw) in (32, 36, 38) else _plain(raw)
    except ValueError:
        return _plain(raw)


def _plain(raw: str) -> str:
    if _ILLEGAL.search(raw) or raw in {".", ".."} or len(raw) > MAX_PLAIN:
        return _sha("openclaw-session:" + raw)
    return raw


def agent_id(session_key: str | None, runtime_agent_id: str | None) -> str:
    """``<id>`` from keys ``agent:<id>:<rest>``, else the runtime's id, else ``main``."""
    if session_key:
        match = _AGENT_KEY.match(session_key.strip())
        if match and match.group(1).strip():
            return match.group(1).strip()
    if runtime_agent_id and runtime_agent_id.strip():
        return runtime_agent_id.strip()
    return "main"


def bypassed(session: str, patterns: tuple[str, ...] | list[str]) -> str | None:
    """The first glob pattern ``session`` matches (case-sensitive), or None."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(session, pattern):
            return pattern
    return None

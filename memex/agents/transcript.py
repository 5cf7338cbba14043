"""Agent transcripts (JSON lines) read into context-engine messages.

Claude Code writes one JSON object per line: ``{"type": "user" | "assistant",
"message": {"role": ..., "content": str | [blocks]}, ...}`` among other line
types (summaries, snapshots, system lines) that are not conversation. An
assistant reply is streamed as several lines sharing ``message.id``, one per
content block; they are joined back into one message.

Codex writes "rollout" lines ``{"type": "response_item", "payload": {"type":
"message", "role": ..., "content": [{"type": "input_text" | "output_text",
"text": ...}]}}``; the harness's own context (environment, AGENTS.md) is sent
as user messages and is skipped here.

Only lines after the last one already archived are read: a per-session
offset kept under ``.memex/cache/agents/`` (derived state, git-ignored)
makes a Stop hook cost the size of the turn, not of the whole session.
"""

from __future__ import annotations

import hashlib
import json
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memex import jsonio
from memex.files import permissions
from memex.errors import InvalidArgument
from memex.files.locking import file_lock
from memex.files.names import safe_name
from memex.vault import Vault

Message = dict[str, Any]
_CODEX_HARNESS_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


def _claude_message(line: dict[str, Any]) -> tuple[str | None, Message] | None:
    kind = line.get("type")
    msg = line.get("message")
    if kind not in ("user", "assistant") or not isinstance(msg, dict):
        return None
    if line.get("isMeta") or line.get("isSidechain"):
        return None  # slash-command plumbing and sub-agent turns are not the conversation
    role = msg.get("role", kind)
    content = msg.get("content")
    if role not in ("user", "assistant") or not isinstance(content, (str, list)):
        return None
    msg_id = msg.get("id") if role == "assistant" else None
    return (msg_id if isinstance(msg_id, str) else None), {"role": role, "content": content}


def _codex_message(line: dict[str, Any]) -> Message | None:
    payload = line.get("payload")
    if line.get("type") != "response_item" or not isinstance(payload, dict):
        return None
    role = payload.get("role")
    if payload.get("type") != "message" or role not in ("user", "assistant"):
        return None
    texts = [
        b["text"] for b in payload.get("content") or []
        if isinstance(b, dict) and b.get("type") in ("input_text", "output_text", "text")
        and isinstance(b.get("text"), str)
    ]
    text = "\n".join(texts).strip()
    if not text or (role == "user" and text.startswith(_CODEX_HARNESS_PREFIXES)):
        return None
    return {"role": role, "content": text}


def parse_lines(lines: list[str], fmt: str) -> list[Message]:
    """Messages from transcript lines; ``fmt`` is "claude-code" or "codex"."""
    out: list[Message] = []
    last_id: str | None = None
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = jsonio.loads(raw)  # half an emoji, as a JavaScript client may cut one, reads as U+FFFD
        except ValueError:  # a JSON number past int()'s digits, nesting past the stack too
            # A line being written while we read is cut short; the rest is
            # still worth archiving, and the next Stop re-reads from here.
            continue
        if not isinstance(line, dict):
            continue
        if fmt == "codex":
            msg = _codex_message(line)
            if msg is not None:
                out.append(msg)
            continue
        parsed = _claude_message(line)
        if parsed is None:
            continue
        msg_id, msg = parsed
        if msg_id is not None and msg_id == last_id and out and out[-1]["role"] == "assistant":
            out[-1]["content"] = _blocks(out[-1]["content"]) + _blocks(msg["content"])
        else:
            out.append(msg)
        last_id = msg_id
    return out


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": str(content)}]


@dataclass
class NewMessages:
    messages: list[Message]
    offset: int  # byte offset of the first line not read yet
    # Keys (text_key) of assistant replies archived from a hook's
    # last_assistant_message before the transcript held them.
    echoed: list[str] = field(default_factory=list)


# How many such replies to remember per session (a transcript that never
# catches up must not grow the state without end).
MAX_ECHOED = 20


def text_key(text: str) -> str:
    """A reply's identity across the hook field and the transcript (whitespace aside)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:32]


def _load_state(vault: Vault, agent: str, session: str) -> dict[str, Any]:
    state = _state_path(vault, agent, session)
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


def _state_path(vault: Vault, agent: str, session: str) -> Path:
    return vault.paths.agents_cache / f"{agent}-{safe_name(session)}.json"


def read_new(vault: Vault, agent: str, session: str, transcript: str, fmt: str) -> NewMessages:
    """Messages of ``transcript`` written since the last call for this session."""
    path = Path(transcript).expanduser()
    if not path.is_file():
        raise InvalidArgument("transcript_path", f"{path} is not a readable file")
    state = _load_state(vault, agent, session)
    try:
        offset = int(state.get("offset", 0))
    except (TypeError, ValueError):
        offset = 0
    echoed = read_echoed(vault, agent, session)
    size = path.stat().st_size
    if offset > size:
        offset = 0  # the transcript was replaced (e.g. /clear): start over
    start = _bounded_start(path, offset, size)
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(size - start)
    # Only whole lines: a half-written last line is read next time.
    end = data.rfind(b"\n") + 1
    chunk = data[:end].decode("utf-8", errors="replace")
    return NewMessages(parse_lines(chunk.splitlines(), fmt), start + end, echoed)


# New transcript read by one hook at most: a turn is some kilobytes to a few
# MB; a transcript met for the first time in a long session (memex installed
# mid-session), or a hostile one, can be tens of MB, and every byte read is
# archived and mined by a commit (memex/context/bounds.py).
MAX_NEW_BYTES = 8 << 20


def _bounded_start(path: Path, offset: int, size: int) -> int:
    """Where to start reading: ``offset``, or when more than
    :data:`MAX_NEW_BYTES` are new, the first whole line of the last
    MAX_NEW_BYTES (the latest turns); the older part is skipped with a note."""
    if size - offset <= MAX_NEW_BYTES:
        return offset
    start = size - MAX_NEW_BYTES
    with open(path, "rb") as fh:
        fh.seek(start - 1)
        while True:  # to the start of the next line (a line longer than the piece: skipped too)
            block = fh.read(1 << 16)
            cut = block.find(b"\n")
            if cut >= 0 or not block:
                start = fh.tell() - len(block) + cut + 1 if cut >= 0 else size
                break
    print(f"memex: {path}: {start - offset} bytes of older transcript not archived "
          f"(one hook reads at most the last {MAX_NEW_BYTES >> 20} MiB)", file=sys.stderr)
    return start


def read_echoed(vault: Vault, agent: str, session: str) -> list[str]:
    """The echoed keys alone (a Stop before the transcript file exists)."""
    keys = _load_state(vault, agent, session).get("echoed", [])
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def mark_read(vault: Vault, agent: str, session: str, offset: int | None, echoed: list[str] | None = None) -> None:
    """Save the offset read up to (None: keep it) and the echoed keys (None: keep them)."""
    data = _load_state(vault, agent, session)
    if offset is not None:
        data["offset"] = offset
    if echoed is not None:
        data["echoed"] = echoed[-MAX_ECHOED:]
    state = _state_path(vault, agent, session)
    tmp = state.with_suffix(".tmp")
    permissions.write_private(tmp, json.dumps(data))
    tmp.replace(state)


def session_lock(vault: Vault, agent: str, session: str) -> AbstractContextManager[IO[bytes]]:
    """Serializes two Stop hooks of one session (each must archive distinct lines)."""
    return file_lock(_state_path(vault, agent, session).with_suffix(".lock"), timeout=60.0)


def text_of(content: Any) -> str:
    """The plain text of a message's content (text blocks only)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def estimate_tokens(messages: list[Message]) -> int:
    """Rough token count (4 characters a token) when the context engine gives none."""
    return sum(len(json.dumps(m.get("content"), ensure_ascii=False)) for m in messages) // 4

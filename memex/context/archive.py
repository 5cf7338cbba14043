"""The session archive: ``sessions/<session>/`` in the vault.

- ``turns.jsonl`` — one line per archived turn (append-only, fsynced; a torn
  last line from a crash is skipped when read): id, sequence number, time,
  source and scope (for the memories a commit extracts), token count, the
  turn's messages with injected blocks removed, and the runtime's key for
  the turn when it gave one (``key``: a retried turn is archived once).
- ``state.json`` — counters (written atomically): turns archived, messages
  seen, the last committed turn, tokens pending a commit, and how many
  leading messages of the conversation the summary stands for.
- ``summary.md`` — the rolling summary of committed turns (atomic write).

An archive id is ``<session folder>#<sequence>``, so it names its session
and can be expanded without a search. Archived turns are raw conversation,
not memories: they are never indexed, and erasing a session deletes its folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex import jsonio
from memex.files import permissions
from memex.context.tokens import content_text
from memex.errors import InvalidArgument
from memex.files.locking import file_lock
from memex.files.memory_file import atomic_write
from memex.files.names import safe_name
from memex.layout import SESSIONS_DIR
from memex.records import now_iso
from memex.text import content_tokens, preview

if TYPE_CHECKING:
    from memex.vault import Vault

TURNS = "turns.jsonl"
STATE = "state.json"
SUMMARY = "summary.md"


@dataclass
class State:
    session: str = ""
    turns: int = 0  # sequence number of the last archived turn
    messages_seen: int = 0  # length of the conversation at the last after_turn
    committed_seq: int = 0  # last turn whose memories were extracted
    pending_tokens: int = 0  # tokens archived since the last commit
    compacted_upto: int = 0  # leading messages the summary replaces
    summary_tokens: int = 0
    commits: int = 0


def folder_name(session: str) -> str:
    if not session or not session.strip():
        raise InvalidArgument("session", "must not be empty")
    return safe_name(session.strip())


def session_dir(vault: Vault, session: str) -> Path:
    return vault.paths.session_dir(folder_name(session))


def has_archive(vault: Vault, session: str) -> bool:
    """Whether anything was ever archived for ``session`` (its folder is there)."""
    return session_dir(vault, session).is_dir()


def check_session(vault: Vault, session: str) -> None:
    """A session named by a person must have an archive: a typo otherwise
    answers "0 turns" or "no matches" as if the session were there (found
    from outside: `memex context commit --session TYPO` also made its folder)."""
    if not has_archive(vault, session):
        raise InvalidArgument("session", (
            f"{session!r} has no archive in this vault ({SESSIONS_DIR}/{folder_name(session)}/ does not exist): "
            "sessions are archived by `memex context after-turn` and the agents' hooks"
        ))


@contextmanager
def session_lock(vault: Vault, session: str, timeout: float = 30.0) -> Iterator[None]:
    """Serialize writers of one session (hooks of two agents may overlap)."""
    with file_lock(vault.paths.session_lock(folder_name(session)), timeout):
        yield


def load_state(vault: Vault, session: str) -> State:
    path = session_dir(vault, session) / STATE
    if not path.exists():
        return State(session=session)
    try:
        raw = jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidArgument("session", f"{path}: unreadable archive state ({type(exc).__name__}: {exc})") from exc
    known = {f.name for f in fields(State)}
    return State(**{k: v for k, v in raw.items() if k in known})


def save_state(vault: Vault, state: State) -> None:
    path = session_dir(vault, state.session) / STATE
    atomic_write(path, json.dumps(asdict(state), ensure_ascii=False, indent=1) + "\n")


def append_turn(
    vault: Vault, state: State, messages: list[dict[str, Any]], tokens: int, source: str,
    scope: str | None = None, key: str | None = None,
) -> dict[str, Any]:
    """Append one turn (caller holds the session lock and saves ``state``).

    The line is the commit point: a turn with ``key`` is archived exactly
    when its line is in the file (:func:`turn_with_key`).
    """
    folder = session_dir(vault, state.session)
    permissions.private_dir(folder)
    # A crash between a line's append and the state's save leaves the
    # counter behind the file: never hand out a sequence number twice.
    state.turns = max(state.turns, _last_seq(folder / TURNS))
    state.turns += 1
    record = {
        "id": f"{folder.name}#{state.turns}",
        "seq": state.turns,
        "at": now_iso(),
        "source": source,
        "scope": scope,
        "tokens": tokens,
        "messages": messages,
    }
    if key is not None:
        record["key"] = key
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    with permissions.open_append(folder / TURNS) as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    return record


def read_turns(vault: Vault, session: str, after_seq: int = 0) -> list[dict[str, Any]]:
    """Archived turns with a sequence number above ``after_seq``, oldest first."""
    path = session_dir(vault, session) / TURNS
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                record = jsonio.loads(line)
            except ValueError:  # a line torn by a crash mid-append, or not memex's
                continue
            if isinstance(record, dict) and int(record.get("seq", 0)) > after_seq:
                out.append(record)
    return out


def _last_seq(path: Path) -> int:
    """The sequence number of the file's last whole line (read from the end)."""
    if not path.exists():
        return 0
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        tail, pos = b"", end
        while pos > 0:
            step = min(64 * 1024, pos)
            pos -= step
            handle.seek(pos)
            tail = handle.read(step) + tail
            lines = tail.split(b"\n")
            # lines[0] may be cut by the chunk boundary: parse it only at the start of the file.
            for raw in reversed(lines if pos == 0 else lines[1:]):
                try:
                    record = jsonio.loads(raw)
                except ValueError:  # empty, torn by a crash, or not memex's
                    continue
                if isinstance(record, dict):
                    return int(record.get("seq", 0))
    return 0


def turn_with_key(vault: Vault, session: str, key: str) -> dict[str, Any] | None:
    """The archived turn a runtime gave ``key`` (its id for one turn), if any."""
    path = session_dir(vault, session) / TURNS
    if not path.exists():
        return None
    needle = json.dumps(key, ensure_ascii=False)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if needle not in line:  # most lines: no JSON parse
                continue
            try:
                record = jsonio.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("key") == key:
                return record
    return None


def read_summary(vault: Vault, session: str) -> str:
    path = session_dir(vault, session) / SUMMARY
    return path.read_text(encoding="utf-8") if path.exists() else ""


def write_summary(vault: Vault, session: str, summary: str) -> None:
    atomic_write(session_dir(vault, session) / SUMMARY, summary.rstrip() + "\n")


def archive_search(vault: Vault, session: str, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Keyword search over one session's archived messages, best first.

    Score = share of the query's content words (CJK bigrams included) that a
    message contains; ties go to the newer message.
    """
    if not query.strip():
        raise InvalidArgument("query", "must not be empty")
    if limit < 1:
        raise InvalidArgument("limit", "must be at least 1")
    wanted = content_tokens(query)
    if not wanted:
        return []
    scored: list[tuple[float, int, int, dict[str, Any]]] = []
    for record in read_turns(vault, session):
        for i, msg in enumerate(record.get("messages", [])):
            text = content_text(msg.get("content"))
            share = len(wanted & content_tokens(text)) / len(wanted)
            if share <= 0:
                continue
            hit = {
                "archive_id": record["id"],
                "seq": record["seq"],
                "message": i,
                "role": msg.get("role"),
                "at": record.get("at"),
                "score": round(share, 4),
                "text": preview(text, 300),
            }
            scored.append((share, int(record["seq"]), i, hit))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    return [t[3] for t in scored[:limit]]


def source_ref(record: dict[str, Any]) -> str:
    """The ``source_ref`` of a memory extracted from an archived turn.

    It is the archive file's vault path plus ``#<seq>``, the form subject
    erasure follows (memex.erase.select): erasing the archive erases the
    memories extracted from it. :func:`archive_expand` accepts it too.
    """
    folder, _, seq = str(record["id"]).rpartition("#")
    return f"{SESSIONS_DIR}/{folder}/{TURNS}#{seq}"


def archive_expand(vault: Vault, archive_id: str) -> list[dict[str, Any]]:
    """The archived messages of one turn, as they were stored.

    ``archive_id`` is ``<session folder>#<n>`` or a memory's ``source_ref``
    (``sessions/<session folder>/turns.jsonl#<n>``).
    """
    ref = archive_id.strip()
    prefix, suffix = f"{SESSIONS_DIR}/", f"/{TURNS}#"
    if ref.startswith(prefix) and suffix in ref:
        ref = ref[len(prefix):].replace(suffix, "#", 1)
    folder, sep, seq_text = ref.rpartition("#")
    if not sep or not folder or not seq_text.isdigit() or safe_name(folder) != folder:
        raise InvalidArgument("archive_id", f"{archive_id!r} is not an archive id (<session>#<n>)")
    seq = int(seq_text)
    for record in read_turns(vault, folder, after_seq=seq - 1):
        if record.get("seq") == seq:
            messages: list[dict[str, Any]] = record.get("messages", [])
            return messages
    raise InvalidArgument("archive_id", f"{archive_id!r}: no such archived turn")

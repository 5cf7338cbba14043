"""after_turn, commit and compact: from a finished turn to long-term memories.

after_turn archives the turn at once (cheap, inside a hook's time budget) and
leaves the expensive part, extraction through ``Vault.add`` with its
embedding and dedup, to a commit that runs when enough tokens are pending:
in a detached ``memex context commit`` process by default (a hook's process
exits right after answering, which would kill a thread), synchronously when
asked, as ``compact`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any

from memex.files import permissions
from memex.context import archive, bounds, extract
from memex.context.budget import budget_plan
from memex.context.inject import strip_blocks, strip_message
from memex.context.messages import check_messages
from memex.context.settings import load_settings
from memex.context.tokens import count_messages, count_text
from memex.errors import InvalidArgument, LockTimeout, MemexError

if TYPE_CHECKING:
    from memex.vault import Vault

COMMIT_MODES = ("background", "sync", "none")


def after_turn(
    vault: Vault,
    session: str,
    messages: list[dict[str, Any]],
    pre_prompt_count: int,
    *,
    source: str = "agent",
    scope: str | None = None,
    commit: str = "background",
    key: str | None = None,
) -> dict[str, Any]:
    """Archive the new messages (index >= ``pre_prompt_count``) of a finished turn.

    ``commit`` says what happens when pending tokens pass
    ``commit_token_threshold``: "background" (a detached process), "sync"
    (now, memories returned), or "none" (leave it pending).

    ``key`` is the runtime's id for this turn, for a runtime that may hand
    the same turn over again (OpenClaw retries ``commitTurn``): a turn whose
    key is archived already is not archived again, and the answer says
    ``duplicate``. Such a runtime passes the turn alone, not the whole
    conversation: the conversation grew by its length.
    """
    messages = check_messages(messages)
    if not isinstance(pre_prompt_count, int) or not 0 <= pre_prompt_count <= len(messages):
        raise InvalidArgument("pre_prompt_count", f"must be from 0 to {len(messages)}, got {pre_prompt_count!r}")
    if commit not in COMMIT_MODES:
        raise InvalidArgument("commit", f"must be one of {COMMIT_MODES}, got {commit!r}")
    if scope is not None and not isinstance(scope, str):
        raise InvalidArgument("scope", f"must be a string, got {scope!r}")
    if key is not None and (not isinstance(key, str) or not key.strip()):
        raise InvalidArgument("key", f"must be a non-empty string, got {key!r}")
    if scope:  # now, not in the detached commit that would store the turn's memories
        scope = vault.check_scope(scope)
    settings = load_settings(vault)
    result: dict[str, Any] = {
        "archived": 0, "archive_id": None, "pending_tokens": 0, "committed": False, "memories": [],
    }
    if not settings.auto_capture:
        result["reason"] = "auto_capture is off"
        return result
    fresh = [m for m in (strip_message(m) for m in messages[pre_prompt_count:]) if m is not None]
    with archive.session_lock(vault, session):
        done = archive.turn_with_key(vault, session, key) if key is not None else None
        if done is not None:
            result.update(duplicate=True, archive_id=done["id"])
            return result
        state = archive.load_state(vault, session)
        state.messages_seen = len(messages) if key is None else state.messages_seen + len(messages)
        if fresh:
            tokens = count_messages(fresh)
            record = archive.append_turn(vault, state, fresh, tokens, source, scope, key)
            state.pending_tokens += tokens
            result["archived"] = len(fresh)
            result["archive_id"] = record["id"]
        archive.save_state(vault, state)
    result["pending_tokens"] = state.pending_tokens
    if state.pending_tokens >= settings.commit_token_threshold:
        if commit == "sync":
            done = commit_session(vault, session)
            result.update(committed=True, memories=done["memories"], pending_tokens=0)
        elif commit == "background":
            result["commit_pid"] = spawn_commit(vault, session)
    return result


def commit_session(
    vault: Vault,
    session: str,
    *,
    source: str | None = None,
    scope: str | None = None,
    keep_recent: int | None = None,
) -> dict[str, Any]:
    """Extract memories from the uncommitted turns and roll them into the summary.

    A memory's source and scope are ``source`` / ``scope`` when given, else
    those of the turn it came from (what the adapter passed to after_turn).

    ``keep_recent`` (compact) marks all but that many of the conversation's
    latest messages as replaced by the summary.
    """
    if not archive.has_archive(vault, session):
        # Nothing archived, so nothing to commit: no lock file, no state.json
        # made for a session that does not exist (a typo, a compact before any turn).
        return {"session": session, "turns": 0, "memories": [], "summary": "", "extractor": "rules"}
    settings = load_settings(vault)
    memories: list[dict[str, Any]] = []
    with archive.session_lock(vault, session, timeout=120.0):
        state = archive.load_state(vault, session)
        turns = archive.read_turns(vault, session, after_seq=state.committed_seq)
        previous = archive.read_summary(vault, session)
        found, summary, extractor = _extract(settings.extract_command, session, turns, previous)
        kept, left_out = bounds.most_recent(found)
        deadline = bounds.Deadline()
        said = _said(turns) if kept else []
        for n, item in enumerate(kept):
            if deadline.passed():
                left_out += len(kept) - n
                break
            turn = _origin(turns, item.text, said)
            try:
                added = vault.add(
                    item.text, scope=scope or (turn or {}).get("scope"),
                    source=source or (turn or {}).get("source") or "agent",
                    session=session, source_ref=archive.source_ref(turn) if turn else None,
                    category=item.category, confidence=item.confidence,
                )
            except MemexError as exc:  # one bad item must not lose the others
                memories.append({"status": "error", "text": item.text, "error": str(exc)})
                continue
            memories.append(added.as_dict())
        if turns:
            archive.write_summary(vault, session, summary)
            state.committed_seq = int(turns[-1]["seq"])
            state.commits += 1
        state.pending_tokens = 0
        state.summary_tokens = count_text(summary) if turns else state.summary_tokens
        if keep_recent is not None:
            state.compacted_upto = max(state.compacted_upto, state.messages_seen - keep_recent)
        archive.save_state(vault, state)
    answer = {
        "session": session, "turns": len(turns), "memories": memories, "summary": summary if turns else previous,
        "extractor": extractor,
    }
    if left_out:
        answer["not_stored"] = left_out
        answer["note"] = bounds.note_left(session, left_out, len(found))
    return answer


def _extract(
    command: str, session: str, turns: list[dict[str, Any]], previous: str
) -> tuple[list[extract.Extracted], str, str]:
    messages = [m for t in turns for m in t.get("messages", [])]
    if command.strip() and turns:
        request = {"task": "commit", "session": session, "previous_summary": previous, "messages": messages}
        try:
            found, summary = extract.parse_command_answer(extract.run_command(command, request))
            return found, summary if summary is not None else extract.summarize_rules(previous, turns), "command"
        except InvalidArgument as exc:
            print(f"memex context: {exc}; using the rule-based extractor", file=sys.stderr)
            return extract.extract_rules(messages), extract.summarize_rules(previous, turns), f"rules ({exc})"
    return extract.extract_rules(messages), extract.summarize_rules(previous, turns), "rules"


def _origin(turns: list[dict[str, Any]], text: str, said: list[tuple[dict[str, Any], str]]) -> dict[str, Any] | None:
    """The archived turn a memory came from: it gives the memory's source_ref
    (for subject erasure), source and scope. ``said``: :func:`_said` of ``turns``."""
    needle = " ".join(text.split()).casefold()
    for turn, content in said:
        if needle in content:
            return turn
    return turns[-1] if turns else None


def _said(turns: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """Each archived message's text as :func:`_origin` compares it, made once
    per commit (per memory, it was most of a large commit's time)."""
    return [(turn, " ".join(str(msg.get("content", "")).split()).casefold())
            for turn in turns for msg in turn.get("messages", [])]


def spawn_commit(vault: Vault, session: str, *, source: str | None = None, scope: str | None = None) -> int:
    """Run ``memex context commit`` detached, so the caller can answer at once."""
    argv = [
        sys.executable, "-m", "memex.cli", "--vault", str(vault.root), "context", "commit",
        "--session", session,
    ]
    if source:
        argv += ["--source", source]
    if scope:
        argv += ["--scope", scope]
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0)
    log_path = vault.paths.context_commit_log
    with permissions.open_append(log_path, binary=True) as log:  # the child keeps its own copy of the handle
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, **kwargs
        )
    bounds.lower_priority(proc.pid)
    # Reap the child when it ends, so a long-lived caller (the MCP server)
    # collects no zombies; a daemon thread never delays the caller's exit.
    threading.Thread(target=proc.wait, name="memex-commit-reaper", daemon=True).start()
    return proc.pid


def compact(vault: Vault, session: str, token_budget: int, current_tokens: int) -> dict[str, Any]:
    """Commit now; the summary then stands for all but the most recent messages."""
    if not isinstance(token_budget, int) or token_budget < 1:
        raise InvalidArgument("token_budget", f"must be a positive integer, got {token_budget!r}")
    if not isinstance(current_tokens, int) or current_tokens < 0:
        raise InvalidArgument("current_tokens", f"must be a non-negative integer, got {current_tokens!r}")
    settings = load_settings(vault)
    done = commit_session(vault, session, keep_recent=settings.commit_keep_recent_count)
    state = archive.load_state(vault, session)
    plan = budget_plan(token_budget)
    recent = _recent_tokens(vault, session, settings.commit_keep_recent_count)
    summary_tokens = min(state.summary_tokens, plan["archive"])
    # Nothing is replaced until the session has more than the recent messages.
    after = min(current_tokens, summary_tokens + recent) if state.compacted_upto > 0 else current_tokens
    return {
        "summary": done["summary"],
        "tokens_before": current_tokens,
        "tokens_after": after,
        "memories": done["memories"],
        "compacted_upto": state.compacted_upto,
        "extractor": done["extractor"],
    }


def _recent_tokens(vault: Vault, session: str, keep: int) -> int:
    """Tokens of the latest ``keep`` archived messages (what stays active)."""
    if keep <= 0:
        return 0
    kept: list[dict[str, Any]] = []
    for turn in reversed(archive.read_turns(vault, session)):
        for msg in reversed(turn.get("messages", [])):
            kept.append(msg)
            if len(kept) >= keep:
                return count_messages(kept)
    return count_messages(kept)


def capture_keyword(
    vault: Vault, session: str, prompt: str, *, source: str = "keyword", scope: str | None = None
) -> dict[str, Any] | None:
    """Store what an explicit request to remember asks for; None when there is none.

    The memory is the request's fact, word for word, not the whole prompt:
    "We decided to use pnpm. Also, remember that integration tests need
    docker." stores "integration tests need docker"
    (:func:`memex.context.extract.remember_facts`); the rest of the prompt
    reaches the long-term memories through the session's extraction, as
    every turn does. Each request of the prompt is stored; the answer is the
    first one's, with the others under ``"more"``.
    """
    if not isinstance(prompt, str):
        raise InvalidArgument("prompt", "must be a string")
    text = strip_blocks(prompt)
    if not text or not extract.is_remember_request(text) or not load_settings(vault).auto_capture:
        return None
    results = [_store_fact(vault, session, fact, source, scope) for fact in extract.remember_facts(text)]
    if not results:
        return None
    return {**results[0], "more": results[1:]} if len(results) > 1 else results[0]


def _store_fact(vault: Vault, session: str, fact: str, source: str, scope: str | None) -> dict[str, Any]:
    try:
        added = vault.add(
            fact, scope=scope, source=source, session=session, category=extract.classify(fact) or "observation",
            confidence=0.9,
        )
    except (InvalidArgument, LockTimeout) as exc:
        # Too big for the index or binary: a hook skips it, says so, and the
        # turn goes on (recall and the hand-off note still answer).
        print(f"memex: not captured: {exc}", file=sys.stderr)
        return {"status": "skipped", "reason": str(exc)}
    return added.as_dict()

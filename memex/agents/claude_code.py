"""Claude Code hooks: the event JSON on stdin, the documented answer on stdout.

Every event carries ``session_id``, ``transcript_path``, ``cwd`` and
``hook_event_name``; the handlers here (shared with Codex, whose hooks use
the same schema) do:

- ``SessionStart`` (``source``: startup | resume | clear | compact): the
  project's and the user's most relevant memories, plus the hand-off note on
  resume/compact, as ``hookSpecificOutput.additionalContext``.
- ``UserPromptSubmit`` (``prompt``): auto-recall for the prompt, keyword
  capture ("remember that …" is stored verbatim, ``source: keyword``), and
  the hand-off note naming what was captured, as additional context.
- ``Stop``: the turn's new transcript lines go to the context engine's
  ``after_turn`` (archive; commit when due) — after the answer.
- ``PreCompact``: archive what is pending, then ``compact`` — after the answer.
- ``SessionEnd``: archive what is pending, then consolidate the session.

Captures land in one scope for every agent (``[agents] capture_scope``,
default ``user``) because dedup compares bodies within a scope: the same
turn seen by an OpenClaw gateway and by the Claude Code behind it must meet
in one scope to be stored once. Recall covers that scope and the project's.
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from memex import context
from memex.agents import hook_io, transcript, warm
from memex.agents.hook_io import HookResult, Payload
from memex.config import setting
from memex.errors import InvalidArgument
from memex.search import Hit
from memex.vault import Vault

_BLOCK = re.compile(r"<relevant-memories\b.*?</relevant-memories\s*>", re.DOTALL | re.IGNORECASE)
_CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")


@dataclass(frozen=True)
class AgentSettings:
    """The ``[agents]`` table of the vault config (documented in the template)."""

    capture_scope: str
    context_window: int
    session_start_limit: int

    @classmethod
    def of(cls, vault: Vault) -> AgentSettings:
        table = vault.config.section("agents")
        where = f"{vault.root}/.memex/config.toml [agents]"
        window = setting(table, "context_window", 200_000, where)
        limit = setting(table, "session_start_limit", 6, where)
        if window < 1000:
            raise InvalidArgument("agents.context_window", f"must be at least 1000 tokens, got {window}")
        if limit < 0:
            raise InvalidArgument("agents.session_start_limit", f"must be 0 or more, got {limit}")
        return cls(setting(table, "capture_scope", "user", where), window, limit)


def switch(vault: Vault, key: str) -> bool:
    value: bool = setting(vault.config.section("context"), key, True, "[context]")
    return value


def recall_scopes(settings: AgentSettings, cwd: str | None) -> list[str]:
    scopes = [settings.capture_scope, "user"]
    project = hook_io.project_scope(cwd)
    if project:
        scopes.insert(0, project)
    return list(dict.fromkeys(scopes))


def _handoff_text(vault: Vault, session: str) -> str:
    handoff = getattr(vault, "handoff", None)
    if handoff is None:
        return ""
    note = handoff(session)
    return str(getattr(note, "text", note) or "")


def _join(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p and p.strip())


def injected_block(answer: dict[str, Any]) -> str:
    """The ``<relevant-memories>`` block ``assemble`` put in the latest message."""
    if not answer.get("injected") or not answer.get("messages"):
        return ""
    found = _BLOCK.search(transcript.text_of(answer["messages"][-1].get("content")))
    return found.group(0) if found else ""


def session_note(session: str) -> str:
    return (
        f"memex session id: {session} (pass it as `session` to the memex MCP tools "
        "memory_handoff and memory_archive_search)."
    )


def start_memories(vault: Vault, scopes: list[str], limit: int) -> list[Hit]:
    """The memories a new session starts with: project first, then the user's.

    There is no prompt yet to search for, so within each scope the most
    confident and then the newest active memories win.
    """
    hits: list[Hit] = []
    for scope in scopes:
        found = vault.list(scope=scope, limit=max(limit * 4, 20))
        found.sort(key=lambda h: (h.confidence, h.created), reverse=True)
        hits.extend(found)
    unique = {h.id: h for h in reversed(hits)}  # first occurrence wins
    return sorted(unique.values(), key=hits.index)[:limit]


def session_start(vault: Vault, payload: Payload, agent: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    settings = AgentSettings.of(vault)
    source = hook_io.text_field(payload, "source") or "startup"
    hook_io.remember_session(vault, agent, session, hook_io.text_field(payload, "cwd"))
    warm.start(vault)  # so that this session's prompts do not each load the model
    parts = [session_note(session)]
    if switch(vault, "auto_recall") and settings.session_start_limit:
        hits = start_memories(vault, recall_scopes(settings, hook_io.text_field(payload, "cwd")),
                              settings.session_start_limit)
        if hits:
            vault.record_access([h.id for h in hits])
            parts.append(context.render_memories_block(hits))
    if source in ("resume", "compact"):
        parts.append(_handoff_text(vault, session))
    return HookResult(hook_io.context_output("SessionStart", _join(*parts)))


def user_prompt(vault: Vault, payload: Payload, agent: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    prompt = hook_io.text_field(payload, "prompt", required=True) or ""
    settings = AgentSettings.of(vault)
    hook_io.remember_session(vault, agent, session, hook_io.text_field(payload, "cwd"))
    # Recall runs before the capture: otherwise the memory just captured from
    # this very prompt would be recalled into it, echoing the user's words.
    # The hand-off note, read after the capture, names what was stored.
    block = ""
    if switch(vault, "auto_recall") and prompt.strip():
        scopes = recall_scopes(settings, hook_io.text_field(payload, "cwd"))
        answer = context.assemble(
            vault, session, [{"role": "user", "content": prompt}], settings.context_window, scopes=scopes
        )
        block = injected_block(answer)
    if switch(vault, "auto_capture"):
        context.capture_keyword(vault, session, prompt, source="keyword", scope=settings.capture_scope)
    text = _join(block, _handoff_text(vault, session))
    return HookResult(hook_io.context_output("UserPromptSubmit", text))


def archive_pending(vault: Vault, payload: Payload, agent: str, fmt: str, session: str) -> dict[str, Any]:
    """Hand the transcript lines not archived yet to ``after_turn``."""
    path = hook_io.text_field(payload, "transcript_path")
    settings = AgentSettings.of(vault)
    if not path:
        last = hook_io.text_field(payload, "last_assistant_message")  # Codex Stop without a transcript
        if not last:
            return {"archived": 0}
        result: dict[str, Any] = context.after_turn(
            vault, session, [{"role": "assistant", "content": last}], 0, source=agent,
            scope=settings.capture_scope,
        )
        return result
    with transcript.session_lock(vault, agent, session):
        new = transcript.read_new(vault, agent, session, path, fmt)
        result = {"archived": 0}
        if new.messages:
            result = context.after_turn(vault, session, new.messages, 0, source=agent,
                                        scope=settings.capture_scope)
        transcript.mark_read(vault, agent, session, new.offset)
    return result


def stop(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    path = hook_io.text_field(payload, "transcript_path")
    if path and not Path(path).expanduser().is_file():
        # Checked now, while stderr still reaches someone.
        raise InvalidArgument("transcript_path", f"{path} is not a readable file")
    return HookResult(
        deferred=lambda: archive_pending(vault, payload, agent, fmt, session), vault=vault, label="Stop"
    )


def _compact(vault: Vault, payload: Payload, agent: str, fmt: str, session: str) -> dict[str, Any]:
    archive_pending(vault, payload, agent, fmt, session)
    path = hook_io.text_field(payload, "transcript_path")
    current = 0
    if path:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        current = transcript.estimate_tokens(transcript.parse_lines(lines, fmt))
    result: dict[str, Any] = context.compact(vault, session, AgentSettings.of(vault).context_window, current)
    return result


def pre_compact(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    return HookResult(
        deferred=lambda: _compact(vault, payload, agent, fmt, session), vault=vault, label="PreCompact"
    )


def _end(vault: Vault, payload: Payload, agent: str, fmt: str, session: str) -> None:
    archive_pending(vault, payload, agent, fmt, session)
    consolidate = getattr(vault, "consolidate", None)
    if consolidate is not None:
        consolidate(session)


def session_end(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    return HookResult(deferred=lambda: _end(vault, payload, agent, fmt, session), vault=vault, label="SessionEnd")


def handle(vault: Vault, payload: Payload, agent: str = "claude-code", fmt: str = "claude-code") -> HookResult:
    """Dispatch one hook event (Claude Code schema) to its handler."""
    event = hook_io.text_field(payload, "hook_event_name", required=True)
    if event == "SessionStart":
        return session_start(vault, payload, agent)
    if event == "UserPromptSubmit":
        return user_prompt(vault, payload, agent)
    if event == "Stop":
        return stop(vault, payload, agent, fmt)
    if event == "PreCompact":
        return pre_compact(vault, payload, agent, fmt)
    if event == "SessionEnd":
        return session_end(vault, payload, agent, fmt)
    # Events memex does not use (PreToolUse, Notification, ...) get no answer.
    return HookResult()

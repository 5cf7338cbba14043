"""The agent-neutral hook handlers: one function per lifecycle event.

Claude Code and Codex send the same event JSON (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``) and take the same answer
(``hookSpecificOutput.additionalContext``); :func:`handle` dispatches such
an event, and the adapters (memex/agents/claude_code.py, codex.py) only say
which agent and which transcript format. OpenClaw's adapter
(memex/agents/openclaw.py) reuses the settings, recall and capture switches.

- ``SessionStart`` (``source``: startup | resume | clear | compact | fork):
  the project's memories and the user's memories relevant to the project
  (:func:`start_memories`), plus the hand-off note on resume/compact, as
  additional context.
- ``UserPromptSubmit`` (``prompt``): auto-recall for the prompt (leaving
  out what the session was shown already: docs/agents.md, "Shown once"),
  keyword capture (what "remember that …" asks to remember, word for word,
  ``source: keyword``), and the hand-off note naming what was captured and
  not named before (:func:`handoff_note`), as additional context.
- ``Stop``: the turn's new transcript lines and ``last_assistant_message``
  go to the context engine's ``after_turn`` (archive; commit when due) —
  after the answer.
- ``PreCompact``: archive what is pending, then ``compact`` — after the answer.
- ``SessionEnd``: archive what is pending, commit it (however few tokens),
  then consolidate the session.

What SessionStart and UserPromptSubmit add stays within the agent's
documented limit (:mod:`memex.agents.fit`).

Captures land in one scope for every agent (``[agents] capture_scope``,
default ``user``) because dedup compares bodies within a scope: the same
turn seen by an OpenClaw gateway and by the Claude Code behind it must meet
in one scope to be stored once. Recall covers that scope and the project's.
Details: docs/agents.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from memex import context
from memex.agents import fit, hook_io, session_marks, transcript
from memex.agents.hook_io import HookResult, Payload
from memex.config import setting
from memex.context import gate, inject
from memex.context.archive import load_state
from memex.context.assemble import recall_block
from memex.errors import InvalidArgument
from memex.search.hybrid import Hit
from memex.vault import Vault

_BLOCK = re.compile(r"<relevant-memories\b.*?</relevant-memories\s*>", re.DOTALL | re.IGNORECASE)
_CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
# SessionStart sources after which the same session goes on (its hand-off
# note applies). Claude Code also sends startup, clear, and since 2.1.214
# "fork": a new session id whose transcript starts as a copy of the parent's
# (another agent that sends "fork" means the same).
CONTINUING_SOURCES = ("resume", "compact")
RESUME_SOURCE = "resume"
FORK_SOURCE = "fork"


@dataclass(frozen=True)
class AgentSettings:
    """The ``[agents]`` table of the vault config (documented in the template)."""

    capture_scope: str
    context_window: int
    session_start_limit: int

    @classmethod
    def of(cls, vault: Vault) -> AgentSettings:
        table = vault.config.section("agents")
        where = f"{vault.paths.config} [agents]"
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


def handoff_note(vault: Vault, agent: str, session: str, whole: bool = False) -> str:
    """The hand-off note for this turn: the captures not named to the agent before.

    The note says "already stored verbatim this turn"; the captures stay in
    the dedup's echo window for minutes, and naming them again on every
    prompt repeated earlier turns' captures as this one's. ``whole`` (resume,
    compact: earlier notes may be gone from the agent's context) names every
    capture still in the window. docs/agents.md, "Hand-off note".
    """
    from memex.consolidation.handoff import handoff, render  # numpy: not on every hook's start-up path

    items = handoff(vault, session).items
    if not whole:
        told = set(hook_io.noted(vault, agent, session))
        items = [i for i in items if i.id not in told]
    hook_io.mark_noted(vault, agent, session, [i.id for i in items])
    return render(items)


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


# How much of the project's own memories the SessionStart query quotes.
START_QUERY_CHARS = 1000


def _newest(hits: list[Hit]) -> list[Hit]:
    # ids are ULIDs: within one second of ``created`` they still sort by time.
    return sorted(hits, key=lambda h: (h.created, h.id), reverse=True)


def start_memories(vault: Vault, settings: AgentSettings, cwd: str | None, limit: int) -> list[Hit]:
    """The memories a new session starts with, best first.

    There is no prompt yet, so the session's project stands for it: first
    the project's own memories (``project:NAME`` from ``cwd``), newest
    first; then the user's memories relevant to the project (searched with
    the project's name and its memories, kept by prompt recall's gate,
    memex/context/gate.py); then,
    in at most half the places (all of them without a project), the user's
    newest memories. Confidence plays no part: a confident memory about
    another project is neither relevant to this one nor newer for it.
    """
    if limit < 1:
        return []
    project = hook_io.project_scope(cwd)
    others = [s for s in recall_scopes(settings, cwd) if s != project]
    chosen: dict[str, Hit] = {}
    if project:
        for hit in _newest(vault.list(scope=project, limit=limit * 4))[:limit]:
            chosen[hit.id] = hit
    if project and len(chosen) < limit:  # the search embeds a query: only when there is room
        query = " ".join([project.split(":", 1)[1], *(h.body for h in chosen.values())])[:START_QUERY_CHARS]
        # Prompt recall's gate (fused score, or a clear calibrated cosine): measured
        # for this query in docs/context-engine.md, "SessionStart".
        keep = gate.for_vault(vault, query, context.load_settings(vault))
        for hit in keep(vault.search(query, limit=limit * 3, scope=others)):
            if len(chosen) >= limit:
                break
            chosen.setdefault(hit.id, hit)
    # Without a project nothing can be judged relevant: recency fills every place.
    recent, most_recent = 0, max(1, limit // 2) if project else limit
    newest = _newest([h for scope in others for h in vault.list(scope=scope, limit=limit * 4)])
    for hit in newest:
        if len(chosen) >= limit or recent >= most_recent:
            break
        if hit.id not in chosen:
            chosen[hit.id] = hit
            recent += 1
    return list(chosen.values())


def _skip_copied_history(vault: Vault, payload: Payload, agent: str, session: str) -> None:
    """A fork's transcript begins with the parent's conversation, archived
    already under the parent's id: its Stop hooks read only what follows."""
    path = hook_io.text_field(payload, "transcript_path")
    if not path or not Path(path).expanduser().is_file():
        return
    with transcript.session_lock(vault, agent, session):
        transcript.mark_read(vault, agent, session, Path(path).expanduser().stat().st_size)


def session_start(vault: Vault, payload: Payload, agent: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    settings = AgentSettings.of(vault)
    source = hook_io.text_field(payload, "source") or "startup"
    cwd = hook_io.text_field(payload, "cwd")
    hook_io.remember_session(vault, agent, session, cwd)
    head = session_note(session)
    if source == FORK_SOURCE:
        _skip_copied_history(vault, payload, agent, session)
    tail = handoff_note(vault, agent, session, whole=True) if source in CONTINUING_SOURCES else ""
    block = ""
    if switch(vault, "auto_recall") and settings.session_start_limit:
        hits = start_memories(vault, settings, cwd, settings.session_start_limit)
        room = fit.block_room(agent, head, tail)
        block = context.render_memories_block(hits, max_block_chars=room)
    text = fit.fit_context(agent, head, block, tail)
    ids = inject.block_ids(text)
    vault.record_access(ids)
    # A resumed session's context still holds what was shown before; after
    # a compaction or a clear it holds only what this answer adds.
    session_marks.mark_shown(vault, agent, session, ids, fresh=source not in (RESUME_SOURCE,))
    answer = hook_io.context_output("SessionStart", text)
    left = [s for s in session_marks.left_sessions(vault, agent) if s != session]
    if not left or source in CONTINUING_SOURCES:
        return HookResult(answer)
    # A new session: the ones this agent left behind get their session end now,
    # after the answer (docs/agents.md, "What each hook does").
    return HookResult(answer, deferred=lambda: commit_left(vault, agent, left), vault=vault, label="SessionStart")


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
        # The hand-off note is read after the capture below: keep its share free.
        block, _ = recall_block(
            vault, session, prompt, scopes=scopes, max_block_chars=fit.block_room(agent, tail=None),
            exclude=session_marks.shown(vault, agent, session),
        )
        session_marks.mark_shown(vault, agent, session, inject.block_ids(block))
    if switch(vault, "auto_capture"):
        context.capture_keyword(vault, session, prompt, source="keyword", scope=settings.capture_scope)
    text = fit.fit_context(agent, "", block, handoff_note(vault, agent, session))
    return HookResult(hook_io.context_output("UserPromptSubmit", text))


def _with_reply(messages: list[dict[str, Any]], reply: str | None, echoed: list[str]) -> list[str]:
    """Drop transcript replies archived before from the hook field; add the
    field's reply when the transcript does not hold it yet. Returns the keys
    of replies archived from the field and not yet seen in the transcript."""
    pending = list(echoed)
    kept = []
    for msg in messages:
        key = transcript.text_key(transcript.text_of(msg.get("content")))
        if msg.get("role") == "assistant" and key in pending:
            pending.remove(key)  # archived already, when the transcript lagged
            continue
        kept.append(msg)
    messages[:] = kept
    if reply and reply.strip():
        key = transcript.text_key(reply)
        seen = any(m.get("role") == "assistant" and transcript.text_key(transcript.text_of(m.get("content"))) == key
                   for m in kept)
        if not seen and key not in echoed:
            messages.append({"role": "assistant", "content": reply})
            pending.append(key)
    return pending


def archive_pending(vault: Vault, payload: Payload, agent: str, fmt: str, session: str) -> dict[str, Any]:
    """Hand the turn's messages not archived yet to ``after_turn``.

    They come from the transcript (lines after the last one read) and from
    ``last_assistant_message`` (Claude Code and Codex Stop): the docs warn
    that the transcript may lag behind the reply, and its file may not exist
    yet. A reply taken from the field is remembered, so that the transcript
    line that later shows it is not archived twice.
    """
    path = hook_io.text_field(payload, "transcript_path")
    reply = hook_io.text_field(payload, "last_assistant_message")
    settings = AgentSettings.of(vault)
    result: dict[str, Any] = {"archived": 0}
    with transcript.session_lock(vault, agent, session):
        if path and Path(path).expanduser().is_file():
            new = transcript.read_new(vault, agent, session, path, fmt)
            messages, offset, echoed = new.messages, new.offset, new.echoed
        else:
            messages, offset, echoed = [], None, transcript.read_echoed(vault, agent, session)
        pending = _with_reply(messages, reply, echoed)
        if messages:
            result = context.after_turn(vault, session, messages, 0, source=agent, scope=settings.capture_scope)
        transcript.mark_read(vault, agent, session, offset, pending)
    if messages:
        session_marks.mark_left(vault, agent, session, load_state(vault, session).pending_tokens > 0)
    return result


def stop(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    hook_io.text_field(payload, "transcript_path")  # checked now, while stderr still reaches someone
    hook_io.text_field(payload, "last_assistant_message")
    return HookResult(
        deferred=lambda: archive_pending(vault, payload, agent, fmt, session), vault=vault, label="Stop"
    )


def _compact(vault: Vault, payload: Payload, agent: str, fmt: str, session: str) -> dict[str, Any]:
    # The compaction takes the injected memories out of the agent's context:
    # the next prompts may show them again (docs/agents.md, "Shown once").
    session_marks.mark_shown(vault, agent, session, [], fresh=True)
    archive_pending(vault, payload, agent, fmt, session)
    path = hook_io.text_field(payload, "transcript_path")
    current = 0
    if path and Path(path).expanduser().is_file():
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        current = transcript.estimate_tokens(transcript.parse_lines(lines, fmt))
    result: dict[str, Any] = context.compact(vault, session, AgentSettings.of(vault).context_window, current)
    session_marks.mark_left(vault, agent, session, load_state(vault, session).pending_tokens > 0)
    return result


def pre_compact(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    return HookResult(
        deferred=lambda: _compact(vault, payload, agent, fmt, session), vault=vault, label="PreCompact"
    )


def finish_session(vault: Vault, session: str) -> dict[str, Any]:
    """What an agent's session-end event does once its turns are archived:
    commit what is pending, then consolidate the session.

    A commit waits for commit_token_threshold pending tokens, which a short
    session never reaches; what its user decided must not stay in the
    archive only (docs/agents.md, SessionEnd). Claude Code's SessionEnd and
    OpenClaw's ``session_end`` (memex/agents/openclaw_engine.py) come here.
    """
    committed = 0
    if load_state(vault, session).pending_tokens > 0:
        committed = len(context.commit_session(vault, session).get("memories", []))
    from memex.consolidation.consolidate import consolidate  # numpy: not on every hook's start-up path

    consolidate(vault, session)
    return {"committed": committed}


def _end(vault: Vault, payload: Payload, agent: str, fmt: str, session: str) -> None:
    archive_pending(vault, payload, agent, fmt, session)
    finish_session(vault, session)
    session_marks.mark_left(vault, agent, session, False)


def commit_left(vault: Vault, agent: str, sessions: list[str]) -> None:
    """Finish the agent's sessions left with uncommitted turns, as their
    session end would have (Codex has none): their decisions become memories."""
    for session in sessions:
        finish_session(vault, session)
        session_marks.mark_left(vault, agent, session, False)


def session_end(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    session = context.session_id(hook_io.text_field(payload, "session_id", required=True))
    return HookResult(deferred=lambda: _end(vault, payload, agent, fmt, session), vault=vault, label="SessionEnd")


def handle(vault: Vault, payload: Payload, agent: str, fmt: str) -> HookResult:
    """Dispatch one hook event (the schema Claude Code and Codex share) to its handler.

    ``agent`` names the agent in the archive and the hook state; ``fmt`` is
    its transcript format (memex/agents/transcript.py).
    """
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

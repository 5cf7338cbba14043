"""memex as an OpenClaw context engine: the Python side of the plugin.

OpenClaw's plugin (``memex/agents/openclaw_plugin/``) registers a context
engine whose ``ingest`` / ``assemble`` / ``afterTurn`` / ``compact`` (and a
``session_end`` plugin hook: ``sessionEnd``) forward
their arguments, as OpenClaw passes them, to ONE long-lived process per
gateway (:mod:`memex.agents.openclaw_server`). This module turns those
arguments into :mod:`memex.context` calls and the answers back into
OpenClaw's result types (``AssembleResult``, ``IngestResult``,
``CompactResult``), so no Python starts per turn and the budget rules live in
one place (:mod:`memex.context.budget`, :mod:`memex.context.settings`).

OpenClaw's messages (``AgentMessage``) are ``{role: "user", content}``,
``{role: "assistant", content: [text | thinking | toolCall]}`` and
``{role: "toolResult", toolCallId, content}``; memex's are Anthropic-style.
:func:`to_memex` converts them with their index; the model still gets
OpenClaw's own messages back, unchanged except that

- the recalled ``<relevant-memories>`` block is put before the latest user
  message's text (as for every other agent), and
- when the conversation is over budget, the oldest messages are left out
  (the rule of :func:`memex.context.assemble`) and the session summary goes
  into ``systemPromptAddition``, where it cannot break a tool call/result pair.

Sessions: OpenClaw's ``sessionKey`` names a conversation across restarts and
compaction (its ``sessionId`` rotates), so it is the memex session when given
(:func:`memex.context.session_id`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memex import context
from memex.agents import hooks, openclaw, openclaw_tools
from memex.context import archive
from memex.context.assemble import fit_summary
from memex.context.budget import budget_plan
from memex.context.inject import prepend_block, render_summary
from memex.context.tokens import count_messages, count_text
from memex.errors import InvalidArgument

if TYPE_CHECKING:
    from memex.vault import Vault

SOURCE = "openclaw"
# When OpenClaw gives no token budget (it is optional in its types).
DEFAULT_BUDGET = 200_000


def memex_session(params: dict[str, Any]) -> str:
    key = params.get("sessionKey")
    raw = params.get("sessionId")
    return context.session_id(raw if isinstance(raw, str) else None, key if isinstance(key, str) else None)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


MEMEX_TOOL = "memex_"
_OPENCLAW_TOOL_ID = "openclaw:memex:"


def memex_answer(msg: dict[str, Any]) -> str | None:
    """The name of memex's tool whose answer this ``toolResult`` is, else None.

    Called directly its ``toolName`` says so; called through OpenClaw's Tool
    Search (``tool_call``) the result names it: ``{"tool": {"id":
    "openclaw:memex:memex_recall", ...}, "result": ...}``.
    """
    name = msg.get("toolName")
    if isinstance(name, str) and name.startswith(MEMEX_TOOL):
        return name
    text = _text_of(msg.get("content")).lstrip()
    if not text.startswith("{") or _OPENCLAW_TOOL_ID not in text[:500]:
        return None
    try:
        tool = json.loads(text).get("tool") or {}
    except (ValueError, AttributeError):
        return None
    tool_id = tool.get("id") if isinstance(tool, dict) else None
    if isinstance(tool_id, str) and tool_id.startswith(_OPENCLAW_TOOL_ID):
        return tool_id[len(_OPENCLAW_TOOL_ID):]
    return None


def _convert(msg: Any, index: int, archiving: bool = False) -> dict[str, Any]:
    if not isinstance(msg, dict):
        raise InvalidArgument(f"messages[{index}]", "must be an object with a role")
    role = msg.get("role")
    content = msg.get("content")
    if role == "assistant":
        blocks: list[dict[str, Any]] = []
        for block in content if isinstance(content, list) else [{"type": "text", "text": _text_of(content)}]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                blocks.append({"type": "text", "text": str(block.get("text", ""))})
            elif block.get("type") == "toolCall":
                blocks.append({"type": "tool_use", "id": str(block.get("id", "")), "name": str(block.get("name", "")),
                               "input": block.get("arguments") or {}})
        return {"role": "assistant", "content": blocks, "_oc": index}
    if role == "toolResult":
        text = _text_of(content)
        tool = memex_answer(msg) if archiving else None
        if tool:
            # memex's own answer came from the vault: archiving it would copy
            # memory text into the raw archive, where forgetting must then
            # find it again (inside JSON inside JSON, escaped twice).
            text = f"[{tool}: memex's answer, read from the vault; not archived]"
        result = {"type": "tool_result", "tool_use_id": str(msg.get("toolCallId", "")), "content": text}
        return {"role": "user", "content": [result], "_oc": index}
    if role == "system":
        return {"role": "system", "content": _text_of(content), "_oc": index}
    # user, and OpenClaw's other entries (bash executions, custom messages):
    # text the model saw from the user's side.
    return {"role": "user", "content": [{"type": "text", "text": _text_of(content)}], "_oc": index}


def to_memex(messages: Any, archiving: bool = False) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        raise InvalidArgument("messages", f"must be a list of OpenClaw messages, got {type(messages).__name__}")
    return [_convert(m, i, archiving) for i, m in enumerate(messages)]


def _budget(params: dict[str, Any]) -> int:
    budget = params.get("tokenBudget")
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        return budget
    limits = ((params.get("runtimeSettings") or {}).get("limits") or {}) if isinstance(
        params.get("runtimeSettings"), dict) else {}
    prompt_budget = limits.get("promptTokenBudget") if isinstance(limits, dict) else None
    if isinstance(prompt_budget, int) and prompt_budget > 0:
        return prompt_budget
    return DEFAULT_BUDGET


def _pending_prompt(original: list[Any], params: dict[str, Any]) -> str:
    """The user's prompt for this run when it is not among ``messages`` yet.

    OpenClaw's embedded runner passes the history before the current turn as
    ``messages`` and the new prompt as ``prompt``, appending the prompt itself
    after assembly; other hosts pass the prompt as the last message.
    """
    prompt = params.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    last = original[-1] if original else None
    already = isinstance(last, dict) and last.get("role") == "user"
    if already and _text_of(last.get("content")).strip() == prompt.strip():  # type: ignore[union-attr]
        return ""
    return prompt


def assemble(vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's ``assemble``: an ``AssembleResult``.

    Recall uses the latest user message: the pending ``prompt`` when OpenClaw
    gives one (the block then goes to ``systemPromptAddition``, since OpenClaw
    appends the prompt itself), else the last message of ``messages`` (the
    block goes before its text, as for other agents).
    """
    original = params.get("messages")
    converted = to_memex(original)
    assert isinstance(original, list)
    pending = _pending_prompt(original, params)
    if pending:
        converted.append({"role": "user", "content": [{"type": "text", "text": pending}], "_oc": len(original)})
    session = memex_session(params)
    scopes = openclaw.recall_scopes(vault, params.get("sessionKey"))
    # The "_oc" index rides along: memex copies messages it keeps, extra keys included.
    answer = context.assemble(vault, session, converted, _budget(params), scopes=scopes)
    out_msgs: list[dict[str, Any]] = answer["messages"]
    block = ""
    if answer["injected"] and out_msgs and out_msgs[-1].get("role") == "user":
        first = out_msgs[-1].get("content")
        if isinstance(first, list) and first and isinstance(first[0], dict):
            block = str(first[0].get("text", ""))
    messages: list[Any] = list(original)
    additions: list[str] = []
    if answer["mode"] == "full":
        messages, summary = _trimmed(vault, session, original, out_msgs, _budget(params), bool(pending))
        additions += [summary] if summary else []
    if block and pending:
        additions.append(block)
    elif block:
        last_user = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
                        default=None)
        if last_user is not None:
            messages[last_user] = prepend_block(messages[last_user], block)
    addition = "\n\n".join(additions)
    estimated = count_messages(to_memex_plain(messages)) + (count_text(addition) if addition else 0)
    result: dict[str, Any] = {"messages": messages, "estimatedTokens": estimated}
    if addition:
        result["systemPromptAddition"] = addition
    return result


def to_memex_plain(messages: Any, archiving: bool = False) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "_oc"} for m in to_memex(messages, archiving)]


def _trimmed(
    vault: Vault, session: str, original: list[Any], kept_by_memex: list[dict[str, Any]], budget: int,
    pending: bool,
) -> tuple[list[Any], str]:
    """The newest OpenClaw messages that fit, and the summary for the system prompt.

    ``kept_by_memex`` is what memex's own trimming kept of the converted
    messages; OpenClaw's originals are kept from the oldest ``_oc`` index
    that survived (trimming only ever drops a prefix; messages merged into
    another lie after it). With a ``pending`` prompt (converted last, not
    one of OpenClaw's) the history may be left empty: OpenClaw appends the
    prompt after it.
    """
    def is_system(i: int) -> bool:
        return isinstance(original[i], dict) and original[i].get("role") == "system"

    kept = [m["_oc"] for m in kept_by_memex
            if isinstance(m.get("_oc"), int) and m["_oc"] < len(original) and not is_system(m["_oc"])]
    end = len(original) if pending else len(original) - 1
    start = min(kept) if kept else end
    # The summary goes to the system prompt, not before the messages, so the
    # conversation itself must open with the user (a question, not a tool result).
    while start < end and not (isinstance(original[start], dict) and original[start].get("role") == "user"):
        start += 1
    pinned = [original[i] for i in range(start) if is_system(i)]
    text = fit_summary(archive.read_summary(vault, session), budget_plan(budget)["archive"])
    return pinned + list(original[start:]), render_summary(text) if text else ""


def ingest(vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's ``ingest``: an explicit "remember that ..." from the user is stored now.

    OpenClaw calls ``ingest`` only for engines without ``afterTurn``; memex
    has one, so this serves other hosts. Archiving is ``afterTurn``'s alone,
    so a message is never archived twice.
    """
    msg = params.get("message")
    if params.get("isHeartbeat") or not isinstance(msg, dict) or msg.get("role") != "user":
        return {"ingested": False}
    text = _text_of(msg.get("content"))
    scope = openclaw.capture_scope(vault, params.get("sessionKey"))
    captured = context.capture_keyword(vault, memex_session(params), text, source=SOURCE, scope=scope)
    return {"ingested": bool(captured and captured.get("status") != "skipped")}


def _capture_requests(vault: Vault, messages: list[Any], session: str, scope: str) -> list[dict[str, Any]]:
    """Store the user's explicit requests to remember among ``messages``."""
    captured = []
    for msg in messages:
        if isinstance(msg, dict) and msg.get("role") == "user":
            found = context.capture_keyword(vault, session, _text_of(msg.get("content")), source=SOURCE, scope=scope)
            if found:
                captured.append(found)
    return captured


def after_turn(vault: Vault, params: dict[str, Any], commit: str = "background") -> dict[str, Any]:
    """OpenClaw's ``afterTurn``: store the user's explicit requests to remember,
    archive the turn's new messages, commit past the threshold.

    OpenClaw calls it, instead of ``ingest``, on a turn it does not commit
    durably (:func:`commit_turn`), during the tool loop too, each time with
    the messages new since the last call.
    """
    if params.get("isHeartbeat"):
        return {"archived": 0, "reason": "heartbeat"}
    original = params.get("messages")
    messages = to_memex_plain(original, archiving=True)
    pre = params.get("prePromptMessageCount", 0)
    if not isinstance(pre, int) or isinstance(pre, bool):
        raise InvalidArgument("prePromptMessageCount", f"must be an integer, got {pre!r}")
    pre = min(max(pre, 0), len(messages))
    session = memex_session(params)
    scope = openclaw.capture_scope(vault, params.get("sessionKey"))
    captured = _capture_requests(vault, original[pre:], session, scope)  # type: ignore[index]
    result: dict[str, Any] = context.after_turn(vault, session, messages, pre, source=SOURCE, scope=scope,
                                                commit=commit)
    result["captured"] = captured
    return result


def commit_turn(vault: Vault, params: dict[str, Any], commit: str = "background") -> dict[str, Any]:
    """OpenClaw's ``commitTurn``: one accepted turn, from the user's message
    to the last answer, stored at most once per ``advancementKey``.

    OpenClaw hands a turn over once it is accepted and again after a crash
    or a failed answer, with the same key (docs/openclaw.md, "Turns").
    The archive line, which carries the key, is the commit point: a key
    already archived answers ``duplicate`` and changes nothing. Explicit
    requests to remember are stored before it, so a retry after a crash in
    between finds them stored already (dedup answers ``duplicate``).
    """
    key = params.get("advancementKey")
    if not isinstance(key, str) or not key.strip():
        raise InvalidArgument("advancementKey", f"must be a non-empty string, got {key!r}")
    original = params.get("messages")
    messages = to_memex_plain(original, archiving=True)
    assert isinstance(original, list)
    session = memex_session(params)
    if params.get("isHeartbeat"):  # a heartbeat's turn is not the user's: nothing to keep
        return {"status": "committed", "archived": 0, "reason": "heartbeat"}
    if archive.turn_with_key(vault, session, key) is not None:
        return {"status": "duplicate"}
    scope = openclaw.capture_scope(vault, params.get("sessionKey"))
    captured = _capture_requests(vault, original, session, scope)
    result = context.after_turn(vault, session, messages, 0, source=SOURCE, scope=scope, commit=commit, key=key)
    status = "duplicate" if result.pop("duplicate", False) else "committed"
    return {"status": status, **result, "captured": captured}


def compact(vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's ``compact``: commit now; a ``CompactResult``."""
    current = params.get("currentTokenCount")
    if not isinstance(current, int) or isinstance(current, bool) or current < 0:
        current = 0
    done = context.compact(vault, memex_session(params), _budget(params), current)
    compacted = bool(done["compacted_upto"] > 0 or done["memories"])
    return {
        "ok": True,
        "compacted": compacted,
        "reason": f"memex committed {len(done['memories'])} memories; summary replaces the first "
                  f"{done['compacted_upto']} messages",
        "result": {"summary": done["summary"], "tokensBefore": done["tokens_before"],
                   "tokensAfter": done["tokens_after"]},
    }


@dataclass(frozen=True)
class Later:
    """An answer sent at once, and work the process does right after it.

    OpenClaw waits for ``session_end`` handlers 2 seconds at gateway
    shutdown; a commit and a consolidation may take longer. The process
    answers first, then does the work before it reads the next request
    (so the conversation's next turn still comes after it), and before it
    exits when the gateway closes its stdin.
    """

    answer: dict[str, Any]
    work: Callable[[], object]


def session_end(vault: Vault, params: dict[str, Any]) -> Later:
    """OpenClaw's ``session_end`` plugin hook (``/new``, ``/reset``, idle or daily
    expiry, deletion, gateway shutdown): commit the conversation's pending
    turns however few, then consolidate, as Claude Code's SessionEnd does.

    The turns are archived already (``commitTurn`` / ``afterTurn``); a
    short conversation's decisions would otherwise stay in the archive
    until 20,000 tokens are pending (docs/openclaw.md, "Session end").
    Answered at once; the work follows (:class:`Later`).
    """
    session = memex_session(params)
    reason = params.get("reason")
    answer = {"session": session, "reason": reason if isinstance(reason, str) else None, "deferred": True}
    return Later(answer, lambda: hooks.finish_session(vault, session))


OPERATIONS: dict[str, Callable[[Vault, dict[str, Any]], object]] = {
    "assemble": assemble, "ingest": ingest, "afterTurn": after_turn, "commitTurn": commit_turn, "compact": compact,
    "sessionEnd": session_end,
    # The agent tools and OpenClaw's memory search (memex/agents/openclaw_tools.py).
    "tool": openclaw_tools.call_tool, "memorySearch": openclaw_tools.memory_search,
    "memoryRead": openclaw_tools.memory_read,
}

"""assemble: the messages an agent's model sees for the next call.

Two paths, and both may run for one call:

- **auto-recall** — the latest user message (its last 4,000 characters) is
  the query; memories past the recall gate (memex/context/gate.py: a fused
  score of ``recall_score_threshold``, or a calibrated cosine of
  ``recall_cosine_threshold`` growing with the vault's size; at most ``recall_limit``, at most
  ``recall_max_injected_chars`` of text) are put in a ``<relevant-memories>``
  block before that message's text.
- **full context** — when the conversation no longer fits the budget, or
  a compacted session has a summary standing for its older messages: the
  summary (within the archive share) plus the newest messages that fit,
  dropped oldest first in units that keep tool calls with their results;
  then consecutive user messages are merged so roles alternate.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from memex.context import archive, gate
from memex.context.budget import budget_plan
from memex.context.inject import has_block, prepend_block, render_memories_block, render_summary
from memex.context.messages import check_messages, is_tool_result_only, latest_index, normalize_turns, units
from memex.context.sessions import bypassed
from memex.context.settings import ContextSettings, load_settings
from memex.context.tokens import content_text, count_messages, count_text, message_costs, newest_lines
from memex.errors import InvalidArgument
from memex.text import recall_query

if TYPE_CHECKING:
    from memex.search.hybrid import Hit
    from memex.vault import Vault

# recall_max_injected_chars counts memory text before escaping; the block
# around it (header, tags, ids) and the escaping itself (``<`` becomes
# ``&lt;``) add to that. The rendered block never exceeds the setting plus
# this allowance, which holds the header and the attributes of six memories.
BLOCK_ALLOWANCE_CHARS = 1500


def assemble(
    vault: Vault,
    session: str,
    messages: list[dict[str, Any]],
    token_budget: int,
    *,
    scopes: Sequence[str] | None = None,
    max_block_chars: int | None = None,
    exclude: Collection[str] = (),
) -> dict[str, Any]:
    """The new message list plus what was done: injected ids, tokens, mode, reason.

    ``max_block_chars`` bounds the injected block further (an agent's own
    limit on injected context, see memex/agents/hook_io.py). ``exclude``:
    ids of memories the agent's context holds already (shown earlier in the
    session, docs/agents.md "Shown once"): never injected again, and the
    places they would have taken go to the next memories past the gate.
    """
    messages = check_messages(messages)
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise InvalidArgument("token_budget", f"must be a positive integer, got {token_budget!r}")
    settings = load_settings(vault)
    pattern = bypassed(session, settings.bypass_session_patterns)
    if pattern is not None:
        return _result(messages, [], "skipped", f"session matches bypass pattern {pattern!r}")
    working = list(messages)
    injected, recall_note, _ = _recall(vault, working, settings, scopes, max_block_chars, exclude)
    # Each message is counted once per call: counting dominates a long conversation.
    costs = message_costs(working)
    full_reason = _needs_full(vault, session, working, costs, token_budget)
    if full_reason is None:
        mode = "recall" if injected else "skipped"
        return _result(working, injected, mode, recall_note, sum(costs))
    trimmed, note = _full_context(vault, session, working, costs, token_budget)
    return _result(trimmed, injected, "full", f"{full_reason}; {note}; {recall_note}")


def recall_block(
    vault: Vault,
    session: str,
    prompt: str,
    *,
    scopes: Sequence[str] | None = None,
    max_block_chars: int | None = None,
    exclude: Collection[str] = (),
) -> tuple[str, list[str]]:
    """The ``<relevant-memories>`` block auto-recall would put before ``prompt``
    in :func:`assemble`, and the ids shown in it (``""``, ``[]``: none).

    For an agent's prompt hook, which adds context to a conversation the
    agent keeps itself: nothing is counted or trimmed (counting the message
    loaded a tokenizer, the largest part of a prompt hook's work that found
    no warm server).
    """
    settings = load_settings(vault)
    if bypassed(session, settings.bypass_session_patterns) is not None:
        return "", []
    working: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    injected, _, block = _recall(vault, working, settings, scopes, max_block_chars, exclude)
    return (block, injected) if injected else ("", [])


def _result(
    messages: list[dict[str, Any]], injected: list[str], mode: str, reason: str, tokens: int | None = None
) -> dict[str, Any]:
    return {
        "messages": messages, "injected": injected,
        "tokens": count_messages(messages) if tokens is None else tokens, "mode": mode, "reason": reason,
    }


def _recall(
    vault: Vault, working: list[dict[str, Any]], settings: ContextSettings, scopes: Sequence[str] | None,
    max_block_chars: int | None = None, exclude: Collection[str] = (),
) -> tuple[list[str], str, str]:
    """Inject memories into the latest user message of ``working`` (in place):
    the ids injected, why (or why not), and the block."""
    if not settings.auto_recall:
        return [], "auto_recall is off", ""
    if not working or working[-1].get("role") != "user" or is_tool_result_only(working[-1]):
        return [], "latest message is not the user's", ""
    latest = working[-1]
    text = content_text(latest.get("content"))
    if has_block(text):
        return [], "a relevant-memories block is already there", ""
    query = recall_query(text)
    if not query:
        return [], "latest user message has no text", ""
    passes = gate.for_vault(vault, query, settings)
    earlier = frozenset(exclude)
    held_back: list[str] = []

    def keep(found: Sequence[Hit]) -> list[Hit]:
        # The gate judges the whole list first: it may be relative to the best hit.
        kept = passes(found)
        held_back.extend(h.id for h in kept if h.id in earlier)
        return [h for h in kept if h.id not in earlier]

    hits = vault.recall(query, limit=settings.recall_limit, scope=list(scopes) if scopes else None, gate=keep)
    ceiling = settings.recall_max_injected_chars + BLOCK_ALLOWANCE_CHARS
    if max_block_chars is not None:
        ceiling = min(ceiling, max_block_chars)
    block = render_memories_block(hits, settings.recall_max_injected_chars, ceiling)
    if not block:
        if held_back and not hits:
            return [], f"the {len(held_back)} memories past the gate were shown earlier in the session", ""
        return [], f"no memory scored {settings.recall_score_threshold} or had a clear cosine", ""
    shown = [h.id for h in hits if f'id="{h.id}"' in block]
    working[-1] = prepend_block(latest, block)
    return shown, f"injected {len(shown)} memories", block


def _summary_in_use(vault: Vault, session: str, messages: list[dict[str, Any]]) -> int:
    """How many leading messages the session's summary replaces (0: none)."""
    state = archive.load_state(vault, session)
    if state.compacted_upto <= 0 or len(messages) < state.compacted_upto:
        return 0
    return state.compacted_upto


def _needs_full(
    vault: Vault, session: str, working: list[dict[str, Any]], costs: list[int], budget: int
) -> str | None:
    replaced = _summary_in_use(vault, session, working)
    if replaced:
        return f"the session summary replaces the first {replaced} messages"
    total = sum(costs)
    room = budget_plan(budget)["available"]
    # A single message cannot be trimmed: the runtime sees it as it is.
    if total > room and len(working) > 1:
        return f"{total} tokens exceed the {room} left after the output reserve"
    return None


def fit_summary(summary: str, cap: int) -> str:
    """The summary cut to ``cap`` tokens, dropping its oldest lines first."""
    return "\n".join(newest_lines([ln for ln in summary.splitlines() if ln.strip()], cap))


def _full_context(
    vault: Vault, session: str, working: list[dict[str, Any]], costs: list[int], budget: int
) -> tuple[list[dict[str, Any]], str]:
    plan = budget_plan(budget)
    replaced = _summary_in_use(vault, session, working)
    head: list[dict[str, Any]] = []
    summary = fit_summary(archive.read_summary(vault, session), plan["archive"])
    if summary:
        head.append({"role": "user", "content": render_summary(summary)})
    # System messages are kept wherever they were; the rest is trimmed.
    pinned = [i for i, m in enumerate(working) if m.get("role") == "system"]
    rest_idx = [i for i in range(replaced, len(working)) if working[i].get("role") != "system"]
    rest = [working[i] for i in rest_idx]
    rest_costs = [costs[i] for i in rest_idx]
    room = plan["available"] - sum(costs[i] for i in pinned) - count_messages(head)
    groups = units(rest)
    kept: list[list[int]] = []
    used = 0
    for group in reversed(groups):
        cost = sum(rest_costs[i] for i in group)
        # The latest unit always stays: without it there is nothing to answer.
        if kept and used + cost > room:
            break
        kept.insert(0, group)
        used += cost
    # Without a summary in front, the conversation must open with the user.
    while not head and len(kept) > 1 and rest[kept[0][0]].get("role") != "user":
        kept.pop(0)
    chosen = [rest[i] for g in kept for i in g]
    dropped = len(rest) - len(chosen)
    last_user = latest_index(chosen)
    out = normalize_turns([working[i] for i in pinned] + head + chosen)
    note = f"kept {len(chosen)} of {len(rest)} messages, dropped {dropped} oldest"
    if summary:
        note += f", summary {count_text(summary)} tokens"
    if last_user is None:
        note += ", no user message left"
    return out, note

"""``memex context ...``: the context engine for agent runtimes (JSON in, JSON out).

Each command reads one JSON object on standard input (see
docs/context-engine.md); ``--json`` prints the library's answer whole, otherwise a short
summary table. Session ids pass through :func:`memex.context.session_id`,
so a runtime may send its raw ``session_id`` and/or a ``session_key``.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from memex import context as engine
from memex import jsonio
from memex.cli._common import get_vault, json_option, key_values, one_scope_option, print_json, short, table
from memex.errors import InvalidArgument


def _read_input(required: tuple[str, ...]) -> dict[str, Any]:
    raw = sys.stdin.read()
    try:
        data = jsonio.loads(raw) if raw.strip() else {}  # half an emoji from a JavaScript runtime: U+FFFD
    except ValueError as exc:
        raise InvalidArgument("stdin", f"is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidArgument("stdin", "must be a JSON object")
    missing = [k for k in required if k not in data]
    if missing:
        raise InvalidArgument("stdin", f"missing key(s): {', '.join(missing)}")
    return data


def _session(data: dict[str, Any]) -> str:
    raw = data.get("session", data.get("session_id"))
    key = data.get("session_key")
    for name, value in (("session", raw), ("session_key", key)):
        if value is not None and not isinstance(value, str):
            raise InvalidArgument(name, "must be a string")
    return engine.session_id(raw, key)


def _int(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(key, f"must be an integer, got {value!r}")
    return value


def _summary(data: dict[str, Any], drop: tuple[str, ...] = ()) -> None:
    key_values({k: v for k, v in data.items() if k not in drop})


@click.group("context")
def context_group() -> None:
    """Context engine for agent runtimes: assemble, after-turn, compact (JSON on stdin)."""


@context_group.command("assemble")
@json_option
@click.pass_context
def assemble_cmd(ctx: click.Context, as_json: bool) -> None:
    """Messages for the next model call: {session, messages, token_budget[, scopes]}."""
    data = _read_input(("messages", "token_budget"))
    scopes = data.get("scopes")
    if scopes is not None and (not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes)):
        raise InvalidArgument("scopes", "must be a list of strings")
    result = engine.assemble(
        get_vault(ctx), _session(data), data["messages"], _int(data, "token_budget"), scopes=scopes
    )
    if as_json:
        print_json(result)
    else:
        _summary({**result, "messages": len(result["messages"])})


@context_group.command("after-turn")
@json_option
@click.pass_context
def after_turn_cmd(ctx: click.Context, as_json: bool) -> None:
    """Archive a finished turn: {session, messages, pre_prompt_count[, source, scope, commit]}."""
    data = _read_input(("messages", "pre_prompt_count"))
    result = engine.after_turn(
        get_vault(ctx), _session(data), data["messages"], _int(data, "pre_prompt_count"),
        source=str(data.get("source") or "agent"), scope=data.get("scope"),
        commit=str(data.get("commit") or "background"),
    )
    if as_json:
        print_json(result)
    else:
        _summary(result, drop=("memories",))
        _memories_table(result["memories"])


@context_group.command("compact")
@json_option
@click.pass_context
def compact_cmd(ctx: click.Context, as_json: bool) -> None:
    """Commit now and summarize: {session, token_budget, current_tokens}."""
    data = _read_input(("token_budget", "current_tokens"))
    result = engine.compact(
        get_vault(ctx), _session(data), _int(data, "token_budget"), _int(data, "current_tokens")
    )
    if as_json:
        print_json(result)
    else:
        _summary(result, drop=("memories", "summary"))
        _memories_table(result["memories"])
        click.echo(result["summary"])


@context_group.command("commit")
@click.option("--session", required=True, help="Session whose pending turns to commit.")
@click.option("--source", help="Source of extracted memories (default: the archived turn's source).")
@one_scope_option("Scope of extracted memories (default from config).", "extracted memories go to one scope")
@json_option
@click.pass_context
def commit_cmd(ctx: click.Context, session: str, source: str | None, scope: str | None, as_json: bool) -> None:
    """Extract memories from a session's pending turns (after-turn runs this detached)."""
    vault = get_vault(ctx)
    if scope is not None:
        vault.check_scope(scope)
    engine.check_session(vault, session)
    result = engine.commit_session(vault, session, source=source, scope=scope)
    if as_json:
        print_json(result)
    else:
        _summary(result, drop=("memories", "summary"))
        _memories_table(result["memories"])


@context_group.command("keyword")
@json_option
@click.pass_context
def keyword_cmd(ctx: click.Context, as_json: bool) -> None:
    """Store an explicit "remember that ..." verbatim: {session, prompt[, source, scope]}."""
    data = _read_input(("prompt",))
    result = engine.capture_keyword(
        get_vault(ctx), _session(data), data["prompt"], source=str(data.get("source") or "keyword"),
        scope=data.get("scope"),
    )
    if as_json:
        print_json(result)
    elif result is None:
        click.echo("no request to remember")
    else:
        _summary(result, drop=("similar_facts",))


@context_group.command("search")
@click.option("--session", required=True, help="Session whose archive to search.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="At most this many hits.")
@click.argument("query")
@json_option
@click.pass_context
def search_cmd(ctx: click.Context, session: str, limit: int, query: str, as_json: bool) -> None:
    """Keyword search over one session's archived messages."""
    vault = get_vault(ctx)
    session = engine.session_id(session)
    engine.check_session(vault, session)
    hits = engine.archive_search(vault, session, query, limit)
    if as_json:
        print_json(hits)
    elif not hits:
        click.echo("no matches")
    else:
        table(("score", "archive id", "role", "text"),
              ((f"{h['score']:.2f}", h["archive_id"], h["role"], short(h["text"])) for h in hits))


@context_group.command("expand")
@click.argument("archive_id")
@json_option
@click.pass_context
def expand_cmd(ctx: click.Context, archive_id: str, as_json: bool) -> None:
    """The original messages of an archived turn."""
    messages = engine.archive_expand(get_vault(ctx), archive_id)
    if as_json:
        print_json(messages)
    else:
        table(("role", "content"), ((m.get("role"), short(str(m.get("content")), 120)) for m in messages))


def _memories_table(memories: list[dict[str, Any]]) -> None:
    if memories:
        table(("status", "id", "method"), ((m.get("status"), m.get("id"), m.get("method")) for m in memories))


def register(main: click.Group) -> None:
    main.add_command(context_group)

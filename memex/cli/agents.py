"""Agent commands: hook, install, uninstall, mcp."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from memex.cli._common import json_option, key_values, print_json
from memex.vault import ENV_VAR

AGENTS = ("claude-code", "codex", "openclaw")


def _vault_path(ctx: click.Context) -> str | None:
    """--vault, else $MEMEX_VAULT (hooks then fall back to ~/.memex-vault, never to cwd)."""
    obj = ctx.find_root().obj or {}
    path: str | None = obj.get("vault_path") or os.environ.get(ENV_VAR) or None
    return path


@click.command("hook")
@click.argument("agent", type=click.Choice(AGENTS))
@click.argument("payload", required=False)
@click.pass_context
def hook_cmd(ctx: click.Context, agent: str, payload: str | None) -> None:
    """Answer one agent hook event (JSON on stdin, or PAYLOAD for Codex notify).

    Fails open: any error is one line on stderr and the exit status is 0.
    Vault: --vault / $MEMEX_VAULT (must exist), else ~/.memex-vault (created).
    """
    from memex.agents import hook_client  # what the `memex` program runs directly (memex/console.py)

    ctx.exit(hook_client.answer(agent, _vault_path(ctx), payload))


@click.command("mcp")
@click.pass_context
def mcp_cmd(ctx: click.Context) -> None:
    """Run the memex MCP server on stdio (for Claude Code, Codex, ...)."""
    from memex.agents import mcp_front  # what the `memex` program runs directly (memex/console.py)

    mcp_front.main(_vault_path(ctx))


@click.command("openclaw-engine")
@click.pass_context
def openclaw_engine_cmd(ctx: click.Context) -> None:
    """Serve OpenClaw's memex context-engine plugin: JSON lines on stdin/stdout.

    Started by the plugin, once per gateway; see `memex install openclaw`.
    """
    from memex.agents import hook_io, openclaw_server

    vault = hook_io.hook_vault(_vault_path(ctx))
    ctx.call_on_close(vault.close)
    openclaw_server.serve(vault)


def _scope_options(func: Any) -> Any:
    func = click.option("--user", "where", flag_value="user", default=True,
                        help="Your settings in your home folder (default): every project.")(func)
    return click.option("--project", "where", flag_value="project",
                        help="The project's settings (git root of the current folder).")(func)


def _wired_vault(ctx: click.Context) -> str:
    """The vault the installed hooks or server will use, said out loud: with
    no --vault and no $MEMEX_VAULT that is the default one, which a person
    who keeps their vault elsewhere needs to hear."""
    from memex.agents.hook_io import default_vault_path

    given = _vault_path(ctx)
    if given:
        return str(Path(given).expanduser().resolve())
    return (f"{default_vault_path()} (the default: no --vault or ${ENV_VAR} was given; "
            "created on first use; to use another, install again with --vault PATH)")


def _report(data: dict[str, Any], as_json: bool, title: str) -> None:
    """What an install or uninstall did, starting with a one-word status:
    a repeat says "unchanged", not "replaced 5" (docs/agents.md)."""
    if not data.get("changed"):
        status = "unchanged"
    elif "removed" in data:
        status = "removed"
    else:
        status = "updated" if data.get("replaced") else "installed"
    data = {"status": status, **data}
    if as_json:
        print_json(data)
        return
    if status == "unchanged":
        data.pop("replaced", None)  # entries swapped for identical ones: nothing a person needs
    key_values(data, title=title)


def _portable(agent: str, where: str) -> bool:
    """Claude Code project files are committed: no machine's paths in them."""
    return agent == "claude-code" and where == "project"


def _personal(ctx: click.Context, data: dict[str, Any], install: bool) -> dict[str, Any]:
    """The vault, a personal setting, in .claude/settings.local.json (never committed)."""
    from memex.agents import install as inst

    path = inst.local_settings()
    vault = _vault_path(ctx)
    if install:
        if vault:
            local = inst.install_local_vault(path, vault)
            data = {**data, **local, "changed": data.get("changed") or local["changed"]}
        note = inst.portable_note()
        if note:
            data["note"] = note
    elif inst.uninstall_local_vault(path):
        data = {**data, "local_file": str(path), "changed": True}
    return data


def _hooks(agent: str, where: str, ctx: click.Context, install: bool, as_json: bool) -> None:
    from memex.agents import install as inst

    path = inst.target(agent, "hooks", user=where == "user")
    events = inst.CLAUDE_EVENTS if agent == "claude-code" else inst.CODEX_EVENTS
    portable = _portable(agent, where)
    if install:
        if portable:
            cmd = [inst.PORTABLE_PROGRAM, "hook", agent]
        else:
            cmd = inst.command(inst.memex_executable(), _vault_path(ctx), "hook", agent)
        data = {**inst.install_hooks(path, agent, events, cmd), "vault": _wired_vault(ctx)}
        if agent == "codex":
            data["next"] = inst.CODEX_TRUST_NOTE
    else:
        data = inst.uninstall_hooks(path, agent)
    if portable:
        data = _personal(ctx, data, install)
    _report(data, as_json, f"memex hooks for {agent}" + ("" if install else " removed"))


def _mcp(agent: str, where: str, ctx: click.Context, install: bool, as_json: bool) -> None:
    from memex.agents import install as inst

    path = inst.target(agent, "mcp", user=where == "user")
    portable = _portable(agent, where)
    if install:
        if portable:
            cmd = [inst.PORTABLE_PROGRAM, "mcp"]
        else:
            cmd = inst.command(inst.memex_executable(), _vault_path(ctx), "mcp")
        fn = inst.install_mcp_json if agent == "claude-code" else inst.install_codex_mcp
        data = {**fn(path, cmd), "vault": _wired_vault(ctx)}
        from memex.agents import mcp_front

        # The SDK's handshake answers, cached now, so that the server lists its
        # tools at once even at the first session's start (docs/agents.md).
        mcp_front.prime_in_background()
    else:
        undo = inst.uninstall_mcp_json if agent == "claude-code" else inst.uninstall_codex_mcp
        data = undo(path)
    if portable:
        data = _personal(ctx, data, install)
    _report(data, as_json, f"memex MCP server for {agent}" + ("" if install else " removed"))


@click.group("install")
def install_group() -> None:
    """Register memex with an agent (hooks or MCP server); safe to repeat."""


@click.group("uninstall")
def uninstall_group() -> None:
    """Remove exactly what `memex install` added."""


def _agent_commands(install: bool) -> list[click.Command]:
    verb = "Install" if install else "Uninstall"

    @click.command("claude-code", help=f"{verb} memex's Claude Code hooks (settings.json).")
    @_scope_options
    @json_option
    @click.pass_context
    def claude(ctx: click.Context, where: str, as_json: bool) -> None:
        _hooks("claude-code", where, ctx, install, as_json)

    @click.command("codex", help=f"{verb} memex's Codex hooks (.codex/hooks.json).")
    @_scope_options
    @json_option
    @click.pass_context
    def codex(ctx: click.Context, where: str, as_json: bool) -> None:
        _hooks("codex", where, ctx, install, as_json)

    @click.command("mcp", help=f"{verb} the memex MCP server in an agent's MCP configuration.")
    @click.option("--agent", type=click.Choice(("claude-code", "codex")), default="claude-code",
                  show_default=True, help="Whose MCP configuration to change.")
    @_scope_options
    @json_option
    @click.pass_context
    def mcp(ctx: click.Context, agent: str, where: str, as_json: bool) -> None:
        _mcp(agent, where, ctx, install, as_json)

    @click.command("openclaw", help=f"{verb} memex as OpenClaw's context engine (plugin in openclaw.json) "
                                    "and its gateway message hook (~/.openclaw/hooks/memex/).")
    @json_option
    @click.pass_context
    def openclaw(ctx: click.Context, as_json: bool) -> None:
        from memex.agents import install as inst
        from memex.agents import install_openclaw as oc

        folder = inst.openclaw_dir()
        config = oc.config_path()
        if install:
            program, vault = inst.memex_executable(), _vault_path(ctx)
            engine = oc.install_plugin(config, inst.command(program, vault, "openclaw-engine"))
            hook = inst.install_openclaw(folder, inst.command(program, vault, "hook", "openclaw"))
            data = {**engine, "vault": _wired_vault(ctx), "hook_folder": hook["folder"], "events": hook["events"],
                    "changed": engine["changed"] or hook["changed"],
                    "next": "restart the gateway (memex is its context engine); enable the message hook "
                            f"(openclaw hooks enable {inst.OPENCLAW_HOOK}) only if you switch back to the legacy "
                            "engine, or each turn is archived twice"}
            _report(data, as_json, "memex for OpenClaw")
        else:
            engine = oc.uninstall_plugin(config)
            hook = inst.uninstall_openclaw(folder)
            _report({**engine, "hook_folder": hook["folder"], "removed": engine["removed"] + hook["removed"],
                     "changed": engine["changed"] or hook["changed"]}, as_json, "memex for OpenClaw removed")

    return [claude, codex, mcp, openclaw]


def register(main: click.Group) -> None:
    for command in _agent_commands(True):
        install_group.add_command(command)
    for command in _agent_commands(False):
        uninstall_group.add_command(command)
    for command in (hook_cmd, mcp_cmd, openclaw_engine_cmd, install_group, uninstall_group):
        main.add_command(command)


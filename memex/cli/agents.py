"""Agent commands: hook, install, uninstall, mcp."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memex.cli._common import PluginChoice, json_option, key_values, print_json
from memex.plugins import AGENTS
from memex.vault import ENV_VAR

if TYPE_CHECKING:
    from memex.agents.integrations import Setup


def _vault_path(ctx: click.Context) -> str | None:
    """--vault, else $MEMEX_VAULT (hooks then fall back to ~/.memex-vault, never to cwd)."""
    obj = ctx.find_root().obj or {}
    path: str | None = obj.get("vault_path") or os.environ.get(ENV_VAR) or None
    return path


@click.command("hook")
@click.argument("agent", type=PluginChoice(AGENTS))
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


def _setup(ctx: click.Context, where: str = "user") -> Setup:
    from memex.agents.integrations import Setup

    return Setup(_vault_path(ctx), user=where == "user", wired_vault=_wired_vault(ctx))


def _agent_command(name: str, install: bool) -> click.Command:
    """``memex install NAME`` / ``memex uninstall NAME`` for one agent integration
    (memex/agents/integrations.py: memex's own and plug-ins' alike)."""
    from memex.agents import integrations
    from memex.errors import MemexError

    entry, agent = integrations.load(name)
    verb = "Install" if install else "Uninstall"
    title = str(getattr(agent, "title", f"memex for {name}")) + ("" if install else " removed")

    @json_option
    @click.pass_context
    def run(ctx: click.Context, as_json: bool, where: str = "user") -> None:
        setup = _setup(ctx, where)
        try:
            data = agent.install(setup) if install else agent.uninstall(setup)
        except MemexError:
            raise
        except Exception as exc:
            if entry.builtin:
                raise
            raise entry.fail(f"failed to {verb.lower()} ({type(exc).__name__}: {exc})") from exc
        if not isinstance(data, dict):
            raise entry.fail(f"{verb.lower()} returned {type(data).__name__}, not a dict (memex help plugins)")
        _report(data, as_json, title)

    command = click.command(name, help=f"{verb} {getattr(agent, 'description', '')}".strip())(run)
    return _scope_options(command) if getattr(agent, "scopes", False) else command


def _mcp_command(install: bool) -> click.Command:
    verb = "Install" if install else "Uninstall"

    @click.command("mcp", help=f"{verb} the memex MCP server in an agent's MCP configuration.")
    @click.option("--agent", type=click.Choice(("claude-code", "codex")), default="claude-code",
                  show_default=True, help="Whose MCP configuration to change.")
    @_scope_options
    @json_option
    @click.pass_context
    def mcp(ctx: click.Context, agent: str, where: str, as_json: bool) -> None:
        from memex.agents import integrations

        data = integrations.mcp(agent, _setup(ctx, where), install)
        _report(data, as_json, f"memex MCP server for {agent}" + ("" if install else " removed"))

    return mcp


class AgentGroup(click.Group):
    """``memex install`` / ``memex uninstall``: a subcommand per agent integration.
    memex's own are built when the group is; another package's (docs/plugins.md)
    when its name is asked for, or when ``--help`` lists them."""

    def __init__(self, install: bool, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.install = install

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        from memex import plugins
        from memex.errors import PluginError

        if plugins.find(plugins.AGENTS, cmd_name) is None:
            return None
        try:
            command = _agent_command(cmd_name, self.install)
        except PluginError as exc:
            plugins.warn(f"{exc}; memex carries on without it")
            return None
        from memex.cli import _add_vault_option

        _add_vault_option(command)  # as every command has (memex/cli/__init__.py)
        self.add_command(command)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        from memex import plugins

        return sorted(set(self.commands) | set(plugins.names(plugins.AGENTS)))


@click.group("install", cls=AgentGroup, install=True)
def install_group() -> None:
    """Register memex with an agent (hooks or MCP server); safe to repeat."""


@click.group("uninstall", cls=AgentGroup, install=False)
def uninstall_group() -> None:
    """Remove exactly what `memex install` added."""


def register(main: click.Group) -> None:
    from memex import plugins

    for group in (install_group, uninstall_group):
        assert isinstance(group, AgentGroup)
        group.add_command(_mcp_command(group.install))
        for name in plugins.BUILTIN[plugins.AGENTS]:  # memex's own: no package metadata read
            group.add_command(_agent_command(name, group.install))
    for command in (hook_cmd, mcp_cmd, openclaw_engine_cmd, install_group, uninstall_group):
        main.add_command(command)

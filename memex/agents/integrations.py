"""Agent integrations: what ``memex install NAME``, ``memex uninstall NAME`` and
``memex hook NAME`` do for each agent.

An integration is an entry of the ``memex.agents`` group (memex/plugins.py):
memex's own (Claude Code, Codex, OpenClaw) are defined here, another
package's is found through its entry point (docs/plugins.md). It is an
object with

- ``description``: one line, shown by ``memex install --help``;
- ``install(setup)`` and ``uninstall(setup)``: put memex's entries into the
  agent's settings, or take exactly them out again, and return what was
  done as a dict (printed as ``key: value`` lines, or as JSON with
  ``--json``); ``changed`` says whether a file changed, ``removed`` how many
  entries an uninstall took out (see :class:`Setup` for what they are given);
- optionally ``scopes = True``: the commands take ``--user`` (the default)
  and ``--project``, passed as ``setup.user``;
- optionally ``handle(vault, event)``: the answer to one hook event the
  agent sends to ``memex hook NAME`` (its JSON on stdin): a dict printed as
  JSON for the agent, None for no answer, or a
  :class:`~memex.agents.hook_io.HookResult`. Whatever it raises is one line
  on stderr and the hook exits 0 (memex/agents/hook_io.py).

Settings files are edited with :mod:`memex.agents.install` (merged, never
replaced; a file that cannot be parsed is reported and left alone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memex import plugins
from memex.errors import MemexError, PluginError

if TYPE_CHECKING:
    from memex.agents.hook_io import HookResult, Payload
    from memex.vault import Vault


@dataclass(frozen=True)
class Setup:
    """What an install or uninstall is given."""

    # --vault / $MEMEX_VAULT as given, or None: the hooks then use the default vault.
    vault: str | None
    # --user (True, the default) or --project: the agent's settings in the home
    # folder, or those of the project (the git root of the current folder).
    user: bool = True
    # The vault in words, for the report (says so when it is the default one).
    wired_vault: str = ""

    @property
    def program(self) -> str:
        """The memex program to write into the agent's settings (absolute: the agent's PATH does not matter)."""
        from memex.agents.install import memex_executable

        return memex_executable()

    def command(self, *args: str) -> list[str]:
        """The command line an agent should run: ``memex [--vault V] ARGS``."""
        from memex.agents.install import command

        return command(self.program, self.vault, *args)


def load(name: str) -> tuple[plugins.Entry, Any]:
    """The integration called ``name``, checked for install and uninstall."""
    entry = plugins.find(plugins.AGENTS, name)
    if entry is None:
        raise PluginError(f"no agent integration is called {name!r} "
                                  f"(installed: {', '.join(plugins.names(plugins.AGENTS))})")
    return entry, entry.load()


def hook_handler(name: str) -> Callable[[Vault, Payload], HookResult]:
    """``memex hook NAME``'s handler: the integration's ``handle``, its answer as a HookResult."""
    from memex.agents.hook_io import HookResult

    entry, agent = load(name)
    handle = getattr(agent, "handle", None)
    if not callable(handle):
        raise entry.fail("takes no hook events (it has no handle(vault, event))")

    def run(vault: Vault, event: Payload) -> HookResult:
        try:
            result = handle(vault, event)
        except MemexError:
            raise
        except Exception as exc:  # a plug-in's bug, named: the hook's line says whose it is
            if entry.builtin:
                raise
            raise entry.fail(f"failed to answer ({type(exc).__name__}: {exc})") from exc
        if isinstance(result, HookResult):
            return result
        if result is None or isinstance(result, dict):
            return HookResult(answer=result)
        raise entry.fail(f"answered {type(result).__name__}, not a dict, None or HookResult")

    return run


def _portable(agent: str, setup: Setup) -> bool:
    """Claude Code project files are committed: no machine's paths in them."""
    return agent == "claude-code" and not setup.user


def _personal(setup: Setup, data: dict[str, Any], install: bool) -> dict[str, Any]:
    """The vault, a personal setting, in .claude/settings.local.json (never committed)."""
    from memex.agents import install as inst

    path = inst.local_settings()
    if install:
        if setup.vault:
            local = inst.install_local_vault(path, setup.vault)
            data = {**data, **local, "changed": data.get("changed") or local["changed"]}
        note = inst.portable_note()
        if note:
            data["note"] = note
    elif inst.uninstall_local_vault(path):
        data = {**data, "local_file": str(path), "changed": True}
    return data


def _save_graph_ahead(setup: Setup) -> None:
    """The model's optimized graph saved before the first session needs it
    (memex/embedding/headstart.py says why), for the wired vault's model."""
    from memex.agents.hook_event import default_vault_path, explicit_vault
    from memex.config import load_config
    from memex.embedding import headstart
    from memex.layout import is_vault

    try:
        root = explicit_vault(setup.vault) if setup.vault else default_vault_path()
        # A vault not made yet is made with the bundled model.
        setting = load_config(root).embedding_model if is_vault(root) else "auto"
    except Exception:  # noqa: BLE001 - the hooks say what is wrong with the vault when they run
        return
    headstart.save_graph_ahead(setting)


class Hooks:
    """memex's lifecycle hooks in an agent's settings (Claude Code, Codex)."""

    scopes = True

    def __init__(self, agent: str, description: str) -> None:
        self.agent = agent
        self.description = description
        self.title = f"memex hooks for {agent}"

    def install(self, setup: Setup) -> dict[str, Any]:
        from memex.agents import install as inst

        path = inst.target(self.agent, "hooks", user=setup.user)
        events = inst.CLAUDE_EVENTS if self.agent == "claude-code" else inst.CODEX_EVENTS
        if _portable(self.agent, setup):
            cmd = [inst.PORTABLE_PROGRAM, "hook", self.agent]
        else:
            cmd = setup.command("hook", self.agent)
        data = {**inst.install_hooks(path, self.agent, events, cmd), "vault": setup.wired_vault}
        _save_graph_ahead(setup)
        if self.agent == "codex":
            data["next"] = inst.CODEX_TRUST_NOTE
        return _personal(setup, data, True) if _portable(self.agent, setup) else data

    def uninstall(self, setup: Setup) -> dict[str, Any]:
        from memex.agents import install as inst

        data = inst.uninstall_hooks(inst.target(self.agent, "hooks", user=setup.user), self.agent)
        return _personal(setup, data, False) if _portable(self.agent, setup) else data

    def handle(self, vault: Vault, event: Payload) -> HookResult:
        if self.agent == "codex":
            from memex.agents import codex

            return codex.handle(vault, event)
        from memex.agents import claude_code

        return claude_code.handle(vault, event)


def mcp(agent: str, setup: Setup, install: bool) -> dict[str, Any]:
    """The memex MCP server in Claude Code's or Codex's MCP configuration (``memex install mcp``)."""
    from memex.agents import install as inst

    path = inst.target(agent, "mcp", user=setup.user)
    portable = _portable(agent, setup)
    if install:
        cmd = [inst.PORTABLE_PROGRAM, "mcp"] if portable else setup.command("mcp")
        fn = inst.install_mcp_json if agent == "claude-code" else inst.install_codex_mcp
        data = {**fn(path, cmd), "vault": setup.wired_vault}
        from memex.agents import mcp_prime

        # The SDK's handshake answers, cached before the install returns, so
        # that the server lists its tools at once even at the first session's
        # start (docs/agents.md).
        mcp_prime.prime_and_wait()
    else:
        undo = inst.uninstall_mcp_json if agent == "claude-code" else inst.uninstall_codex_mcp
        data = undo(path)
    return _personal(setup, data, install) if portable else data


class OpenClaw:
    """memex as OpenClaw's context engine (plugin in openclaw.json) and its gateway message hook."""

    description = ("memex as OpenClaw's context engine (plugin in openclaw.json) "
                   "and its gateway message hook (~/.openclaw/hooks/memex/).")
    title = "memex for OpenClaw"

    def install(self, setup: Setup) -> dict[str, Any]:
        from memex.agents import install as inst
        from memex.agents import install_openclaw as oc

        engine = oc.install_plugin(oc.config_path(), setup.command("openclaw-engine"))
        hook = inst.install_openclaw(inst.openclaw_dir(), setup.command("hook", "openclaw"))
        return {**engine, "vault": setup.wired_vault, "hook_folder": hook["folder"], "events": hook["events"],
                "changed": engine["changed"] or hook["changed"],
                "next": "restart the gateway (memex is its context engine); enable the message hook "
                        f"(openclaw hooks enable {inst.OPENCLAW_HOOK}) only if you switch back to the legacy "
                        "engine, or each turn is archived twice"}

    def uninstall(self, setup: Setup) -> dict[str, Any]:
        from memex.agents import install as inst
        from memex.agents import install_openclaw as oc

        engine = oc.uninstall_plugin(oc.config_path())
        hook = inst.uninstall_openclaw(inst.openclaw_dir())
        return {**engine, "hook_folder": hook["folder"], "removed": engine["removed"] + hook["removed"],
                "changed": engine["changed"] or hook["changed"]}

    def handle(self, vault: Vault, event: Payload) -> HookResult:
        from memex.agents import openclaw

        return openclaw.handle(vault, event)


CLAUDE_CODE = Hooks("claude-code", "memex's Claude Code hooks (settings.json).")
CODEX = Hooks("codex", "memex's Codex hooks (.codex/hooks.json).")
OPENCLAW = OpenClaw()

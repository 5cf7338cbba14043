"""``memex mcp`` starting: its tools listed before memex itself is loaded.

An agent starts the MCP server with every session and waits for its tool
list (Codex leaves a server that has not listed its tools out of the first
turn unless it is ``required``). The list comes from the tools' signatures
and descriptions (:mod:`memex.agents.mcp_server`), which need the MCP SDK
and pydantic only; the vault, numpy and the embedding model are loaded
after the list has been sent, on a thread (:meth:`Tools.warm_up`), or by
the first call that needs them. Start-up figures: docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memex.agents.mcp_server import INSTRUCTIONS, SERVER_NAME, Tools, strict_tools

if TYPE_CHECKING:
    from memex.vault import Vault


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    from memex.distribution import DISTRIBUTION

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


def build_server(vault: Vault | Callable[[], Vault]) -> Any:
    """An MCPServer exposing :class:`Tools` over ``vault`` (or the vault
    ``vault()`` opens on first use). Once it has listed its tools, it opens
    the vault and loads the model in the background (:meth:`Tools.warm_up`)."""
    from mcp.server.mcpserver import MCPServer

    tools = Tools(vault)

    class Server(MCPServer):
        memex_tools = tools

        async def list_tools(self) -> Any:
            listed = await super().list_tools()
            tools.start_warm_up()
            return listed

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, version=version(), log_level="WARNING",
                  tools=strict_tools(tools))

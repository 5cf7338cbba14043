"""The ``memex`` command: a thin click shell over :mod:`memex`.

Each module in this package defines ``register(main)`` and adds its commands;
the group finds them when the program starts, so a feature adds a command
by adding a module. Commands parse arguments, call the library, and print
(a table for people, ``--json`` for programs). Any :class:`MemexError` becomes
a one-line ``click.ClickException`` here, never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import click

from memex.errors import MemexError


class MemexGroup(click.Group):
    """Turns library errors into one-line CLI errors."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemexError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=MemexGroup)
@click.option(
    "--vault",
    "vault_path",
    envvar="MEMEX_VAULT",
    type=click.Path(file_okay=False),
    help="Vault folder (default: $MEMEX_VAULT, else the nearest folder up with .memex/).",
)
@click.version_option(package_name="memex")
@click.pass_context
def main(ctx: click.Context, vault_path: str | None) -> None:
    """memex: local-first memory for AI coding agents, kept as Markdown files."""
    ctx.obj = {"vault_path": vault_path}


def _register_commands() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(main)


def run() -> None:
    """Console-script entry point."""
    _register_commands()
    main(prog_name="memex")

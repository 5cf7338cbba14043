"""The ``memex`` command: a thin click shell over :mod:`memex`.

Each module in this package defines ``register(main)`` and adds its commands;
the group finds them, so a feature adds a command by adding a module. Only
the module of the command being run is imported (:data:`COMMAND_MODULES`;
start-up, docs/benchmarks.md): ``memex --version`` and ``memex search`` do not import
the watcher, the context engine or the agent adapters. A command missing
from that map is still found (an unknown name imports every module), only
not as fast; tests/test_cli_startup.py keeps the map complete. Commands parse arguments, call the library, and print
(a table for people, ``--json`` for programs). Any :class:`MemexError` becomes
a one-line ``click.ClickException`` here, never a traceback.
"""

from __future__ import annotations

import errno
import importlib
import json
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, cast

import click

from memex.cli import _interrupt, _preload
from memex.distribution import DISTRIBUTION
from memex.errors import MemexError
from memex.layout import INDEX_NAME, MEMEX_DIR


# Command name -> the module of this package that registers it.
COMMAND_MODULES = {
    **dict.fromkeys(("init", "add", "search", "show", "list", "reindex", "stats", "demo"), "core"),
    "doctor": "doctor",
    **dict.fromkeys(("consolidate", "unsupersede", "fading"), "consolidate"),
    **dict.fromkeys(("supersede", "handoff", "dedup"), "dedup"),
    **dict.fromkeys(("entities", "graph"), "graph"),
    **dict.fromkeys(("watch", "status"), "watch"),
    **dict.fromkeys(("hook", "mcp", "openclaw-engine", "install", "uninstall"), "agents"),
    "context": "context",
    "erase": "erase",
    "import": "importer",
    "sync": "sync",
    "help": "help",
    "plugins": "plugins",
}
_registered: set[str] = set()


def _register(name: str) -> None:
    if name in _registered:
        return
    _registered.add(name)
    module = importlib.import_module(f"{__name__}.{name}")
    register = getattr(module, "register", None)
    if register is not None:
        register(main)
        for command in main.commands.values():
            _add_vault_option(command)


def _register_commands() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            _register(info.name)


class MemexGroup(click.Group):
    """Loads a command's module on demand; turns library errors into one-line CLI errors."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = COMMAND_MODULES.get(cmd_name)
            if module is not None:
                _register(module)
            if cmd_name not in self.commands:
                _register_commands()
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # Before get_command imports the command's module (and with it most
        # of memex): the model loads meanwhile (memex/cli/_preload.py).
        if args and args[0] in _preload.COMMANDS and not {"--help", "-h"} & set(args):
            _preload.start(ctx.params.get("vault_path"))
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        _register_commands()
        return sorted(self.commands)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Standalone (the console script, click's test runner): every error is
        one line on stderr, never a traceback, and under ``--json`` also a JSON
        document on stdout (docs/cli.md, "Every command")."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        as_json = wants_json(argv)
        for arg in argv:
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:  # undecodable bytes on the command line
                _fail(f"argument {arg.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8 text", 2, as_json)
        try:
            code = super().main(argv, prog_name or "memex", complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            # `memex` (or `memex context`) alone: its help, as --help prints
            # it, not an "Error:" line holding the whole help.
            click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            # click gives no context for an option missing its value: the command is read off argv.
            where = exc.ctx.command_path if exc.ctx else self._command_path(argv, "memex")
            _fail(f"{exc.format_message()} (see '{where} --help')", exc.exit_code, as_json)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code, as_json)
        except click.Abort:
            _fail(_interrupt.message(), _interrupt.INTERRUPTED, as_json)
        except BrokenPipeError:  # e.g. `memex list | head`: the reader has gone
            sys.stderr.close()
            sys.exit(0)
        sys.exit(code if isinstance(code, int) else 0)

    def _command_path(self, argv: Sequence[str], prog: str) -> str:
        """The (sub)command ``argv`` names, as ``memex context search``: its words before the first
        one that is not a subcommand, options (and the group's own options' values) skipped."""
        path, command = [prog], cast(click.Command, self)
        words = iter(argv)
        for word in words:
            if word.startswith("-"):
                if word == "--vault":  # the one option before the command name that takes a value
                    next(words, None)
                continue
            sub = command.commands.get(word) if isinstance(command, click.Group) else None
            if sub is None:
                break
            path.append(word)
            command = sub
        return " ".join(path)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemexError as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from exc
        except Exception as exc:
            damaged = _damaged_index(ctx, exc) or _server_failed(exc)
            if damaged is None:
                raise
            raise click.ClickException(damaged) from exc


def _damaged_index(ctx: click.Context, exc: Exception) -> str | None:
    """The one-line error for a damaged index.db (memex.store.index_damaged),
    or None for any other exception (it loads no driver: ``memex --version``
    must not)."""
    from memex.store import index_damaged

    vault = (ctx.find_root().obj or {}).get("vault")
    found = index_damaged(exc, vault.paths.index if vault is not None else f"{MEMEX_DIR}/{INDEX_NAME}")
    return None if found is None else str(found)


def _server_failed(exc: Exception) -> str | None:
    """The one-line error when a database server failed in the middle of a
    command (the server stopped, the network went): the driver's own exception."""
    from memex.store import store_error

    found = store_error(exc)
    return None if found is None else str(found)


VAULT_HELP = f"Vault folder (default: $MEMEX_VAULT, else the nearest folder up with {MEMEX_DIR}/)."


@click.group(cls=MemexGroup)
@click.option("--vault", "vault_path", type=click.Path(file_okay=False), help=VAULT_HELP)
@click.version_option(package_name=DISTRIBUTION, prog_name="memex")
@click.pass_context
def main(ctx: click.Context, vault_path: str | None) -> None:
    """memex: local-first memory for AI coding agents, kept as Markdown files."""
    ctx.obj = {"vault_path": vault_path}


def _vault_after_command(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``memex search foo --vault X`` means what ``memex --vault X search foo`` does."""
    if value is None:
        return
    obj = ctx.find_root().obj
    if obj is None:  # a command run on its own, outside the memex group
        obj = ctx.find_root().obj = {}
    before = obj.get("vault_path")
    if before is not None and before != value:
        raise click.BadParameter(f"given twice with different folders ({before} and {value})", ctx, param)
    obj["vault_path"] = value


def _add_vault_option(command: click.Command) -> None:
    """Every command takes --vault after its name too (docs/cli.md): people type
    the option where they remember it, not where the group wants it."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_vault_option(sub)
        return
    if any(p.name == "vault_path" for p in command.params):
        return
    command.params.append(click.Option(
        ["--vault", "vault_path"], type=click.Path(file_okay=False), expose_value=False,
        callback=_vault_after_command, help="Vault folder (as before the command name).",
    ))


def app() -> click.Group:
    """The ``memex`` group with every command registered (for tests and embedding)."""
    _register_commands()
    return main


def wants_json(args: Sequence[str]) -> bool:
    """``--json`` among the options (not in the text after ``--``)."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _fail(message: str, code: int, as_json: bool = False) -> NoReturn:
    # A program reading --json gets a document whatever happened, not an
    # empty stdout; people still read the Error: line on stderr.
    if as_json:
        click.echo(json.dumps({"error": message, "exit_code": code}, ensure_ascii=False))
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def run(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: every error is one line on stderr, never a traceback."""
    main.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="memex")

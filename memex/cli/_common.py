"""Helpers every command module uses: the vault from the context, output."""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from memex.index.sync_run import Progress
from memex.vault import Vault, open_vault

F = TypeVar("F", bound=Callable[..., Any])


class FiniteFloatRange(click.FloatRange):
    """A number in a range that is a number: click's FloatRange lets ``nan``
    through (every comparison with it is false) and ``inf`` past an open end."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class NonEmptyText(click.ParamType[str]):
    """Text that must hold something: an empty ``--session ""`` filter would
    otherwise read as no filter at all (found from outside: `memex list
    --session ""` listed every memory)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("must not be empty", param, ctx)
        return value


NON_EMPTY = NonEmptyText()


class PluginChoice(click.Choice[str]):
    """A name in a plug-in group (memex/plugins.py), or one of ``extra``.

    memex's own names are accepted without reading any package's metadata;
    other packages' entries are read only for a name memex does not know,
    or when the choices are shown (``--help``, an error)."""

    def __init__(self, group: str, extra: Sequence[str] = ()) -> None:
        self.group = group
        self.extra = tuple(extra)
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from memex import plugins

        return (*self.extra, *plugins.names(self.group))

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        """click.Choice sets its choices when built; these are read when asked for."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from memex import plugins

        if value in self.extra or plugins.builtin(self.group, str(value)) is not None:
            return value
        return super().convert(value, param, ctx)


class TextCommand(click.Command):
    """A command whose argument is free text: text that begins with ``-``
    (``"-v is verbose"``, ``---``) reads as an unknown option to click, so the
    error says how to pass it as text instead."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            known = {o for p in self.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}
            known.add("--vault")  # added to every command after this class is built
            token = next(
                (a for a in given if a.startswith("-") and a != "-" and a.split("=", 1)[0] not in known), None
            )
            # A near miss of a real option (--scpoe) gets click's "did you mean".
            if token is None or exc.possibilities or "--" in given[: given.index(token)]:
                raise
            # Unquoted words right after it (`memex add -v is verbose`) are the rest of the text.
            start = given.index(token)
            end = start + 1
            while end < len(given) and not given[end].startswith("-"):
                end += 1
            token = " ".join(given[start:end])
            given = [*given[:start], token, *given[end:]]
            rest = [a for a in given if a is not token]
            if any(a.startswith("-") and a != "-" and a.split("=", 1)[0] not in known
                   for a in rest[: rest.index("--") if "--" in rest else len(rest)]):
                raise  # another unknown option: the hint's command would fail on it in turn
            fixed = shlex.join([*rest, "--", token])
            hint = f"If {token!r} is the text, put -- before it: {ctx.command_path} {fixed}"
            if any(p.name == "text" for p in self.params):
                hint += ", or give - in its place and pipe the text in on standard input"
            raise click.UsageError(f"{exc.format_message().rstrip('.')}. {hint}.", ctx) from exc


def one_scope_option(help: str, why: str) -> Callable[[F], F]:
    """``--scope`` where one scope is meant: given twice it is a usage error
    saying ``why``, not click's silent "the last one wins"."""

    def check(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
        if len(value) > 1:
            raise click.BadParameter(f"given {len(value)} times ({', '.join(map(repr, value))}); {why}", ctx, param)
        return value[0] if value else None

    return click.option("--scope", multiple=True, callback=check, help=help)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def get_vault(ctx: click.Context, warm: bool = False) -> Vault:
    """Open the vault named by --vault / $MEMEX_VAULT / the current folder.

    With ``warm``, the vault embeds through the warm model server that an
    agent session's hooks keep for it (memex/agents/warm.py) when one is
    running, so a one-shot command does not load the model (docs/cli.md).
    """
    obj = ctx.find_root().obj or {}
    if "vault" not in obj:
        opened = open_vault(obj.get("vault_path"))
        if warm:
            from memex.agents import warm as warm_server

            embedder = warm_server.connect(opened)
            if embedder is not None:
                opened = Vault(opened.root, embedder=embedder)
            obj["warm_connected"] = embedder is not None
        obj["vault"] = opened
        ctx.find_root().call_on_close(opened.close)
        if ctx.info_name not in _SHOW_CONFIG_THEMSELVES:
            _announce_config(opened)
    vault: Vault = obj["vault"]
    return vault


# Commands whose own output lists the settings notices (doctor, sync's report).
_SHOW_CONFIG_THEMSELVES = frozenset({"doctor", "sync"})


def _announce_config(vault: Vault) -> None:
    """Settings memex ignores (a teammate's command or server in the shared
    file, a typo) on stderr: once at a terminal, at every run otherwise
    (nobody may have read a script's stderr; memex/config_trust.py)."""
    from memex.config_trust import announce

    announce(vault.config.notices, vault.paths.config_notices, lambda line: click.echo(line, err=True),
             remember=sys.stderr.isatty())


def keep_model_warm(ctx: click.Context) -> None:
    """After a command run by a person at a terminal that had to load the
    model itself, start the warm model server (memex/agents/warm.py) so the
    next searches they type do not load it again (docs/cli.md: a one-shot
    search costs ~0.4 s of CPU cold, ~0.25 s warm). It exits after
    ``[agents] warm_seconds`` idle (20 min; 0 turns this off, as does
    ``MEMEX_WARM=0``). Scripts and agents (stdout not a terminal) never
    start one this way; hooks start their own."""
    obj = ctx.find_root().obj or {}
    if obj.get("warm_connected", True) or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return
    from memex.agents import warm as warm_server

    try:
        started = warm_server.start(obj["vault"])
    except OSError:
        return  # a convenience: never a reason for the command to fail
    if started:  # a background process: say so once, when it starts
        minutes = warm_server.idle_seconds(obj["vault"]) / 60
        click.echo(f"note: the embedding model stays loaded in the background for your next commands; it exits "
                   f"after {minutes:g} min idle (`memex status` shows it; MEMEX_WARM=0 turns this off)", err=True)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def is_tty() -> bool:
    return sys.stdout.isatty()


# Columns whose text may wrap; the others (ids, scores, dates) stay on one
# line so that an id can be copied from a narrow terminal.
WRAPPING = frozenset({"body", "value", "reason", "path", "scope", "source"})


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None,
          labelled: bool = False) -> None:
    """A readable table (rich) for people at a terminal; for a pipe, one
    tab-separated line per row, no header or title (docs/cli.md, "Output"):
    ``memex list | cut -f1`` gives ids, ``wc -l`` counts. ``labelled``: one
    of several tables a command prints; piped, each row starts with the title."""
    if not is_tty():
        for row in rows:
            click.echo("\t".join(_cell(v) for v in ([title, *row] if labelled else row)))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(soft_wrap=False)
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    least = [_narrowest(col, [row[i] for row in cells]) for i, col in enumerate(columns)]
    out = Table(title=title, show_lines=False)
    for i, col in enumerate(columns):
        # Rich wraps a cell at spaces but folds a path (one long word) mid-name.
        # A wrapping column that holds a path and fits whole beside the others
        # at their narrowest does not wrap at all: the others wrap instead.
        values = [row[i] for row in cells]
        room = console.width - (3 * len(columns) + 1) - sum(least) + least[i]
        has_path = any("/" in w or "\\" in w for v in values for w in v.split())
        keep_whole = has_path and max((len(v) for v in values), default=0) <= room
        wraps = col in WRAPPING and not keep_whole
        out.add_column(col, overflow="fold", no_wrap=not wraps, min_width=min(len(col), 8) if wraps else None)
    for row in cells:
        # Text, not str: a "[" in a body or a reason is not rich markup.
        out.add_row(*(Text(v) for v in row))
    console.print(out)


def _cell(value: Any) -> str:
    """One field of a tab-separated line: tabs and line breaks become spaces."""
    return " ".join(_flat(value).replace("\t", " ").splitlines())


def _narrowest(column: str, values: list[str]) -> int:
    """About the narrowest rich makes a column: its longest word, at most 12
    (a longer one folds) unless it is a column that never wraps."""
    if column not in WRAPPING:
        return max([len(column), *(len(v) for v in values)])
    return max(min(len(column), 8), min(12, max((len(w) for v in values for w in v.split()), default=0)))


def key_values(data: dict[str, Any], title: str | None = None) -> None:
    """One record: a two-column table at a terminal, ``key: value`` lines
    for a pipe (grep- and awk-able; the title is left out)."""
    if not is_tty():
        for key, value in data.items():
            click.echo(f"{key}: {_cell(value)}")
        return
    table(("field", "value"), ((k, _flat(v)) for k, v in data.items()), title)


def _flat(value: Any) -> str:
    """One cell for people: ``a, b`` for a list, ``user (3), project:x (1)`` for a mapping."""
    if isinstance(value, dict):
        return ", ".join(f"{k} ({_flat(v)})" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(f"({_flat(v)})" if isinstance(v, (list, tuple)) else _flat(v) for v in value)
    return "" if value is None else str(value)


def human_bytes(size: int) -> str:
    """``1835008`` -> ``1.8 MB`` (decimal units, as file managers show them)."""
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


# Seconds between progress lines when stderr is not a terminal (a log, CI).
PROGRESS_EVERY = 5.0


def progress_lines(what: str) -> Progress:
    """A progress callback that writes ``what: 512/2000 files`` to stderr at
    most every PROGRESS_EVERY seconds (nothing for a run shorter than that)."""
    started = last = time.monotonic()

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done < total and now - last >= PROGRESS_EVERY:
            rate = done / (now - started) if now > started else 0.0
            click.echo(f"{what}: {done}/{total} files ({rate:.0f}/s)", err=True)
            last = now

    return report


def short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

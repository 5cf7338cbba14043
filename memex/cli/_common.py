"""Helpers every command module uses: the vault from the context, output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from memex.vault import Vault, open_vault

F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def get_vault(ctx: click.Context, warm: bool = False) -> Vault:
    """Open the vault named by --vault / $MEMEX_VAULT / the current folder.

    With ``warm``, the vault embeds through the warm model server that an
    agent session's hooks keep for it (memex/agents/warm.py) when one is
    running, so a one-shot command does not load the model (issue 14).
    """
    obj = ctx.find_root().obj or {}
    if "vault" not in obj:
        opened = open_vault(obj.get("vault_path"))
        if warm:
            from memex.agents import warm as warm_server

            embedder = warm_server.connect(opened)
            if embedder is not None:
                opened = Vault(opened.root, embedder=embedder)
        obj["vault"] = opened
        ctx.find_root().call_on_close(opened.close)
    vault: Vault = obj["vault"]
    return vault


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def is_tty() -> bool:
    return sys.stdout.isatty()


# Columns whose text may wrap; the others (ids, scores, dates) stay on one
# line so that an id can be copied from a narrow terminal.
WRAPPING = frozenset({"body", "value", "reason", "path", "scope", "source"})


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    """A readable table (rich) for people."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    out = Table(title=title, show_lines=False)
    for col in columns:
        wraps = col in WRAPPING
        out.add_column(col, overflow="fold", no_wrap=not wraps, min_width=min(len(col), 8) if wraps else None)
    for row in rows:
        # Text, not str: a "[" in a body or a reason is not rich markup.
        out.add_row(*(Text("" if v is None else str(v)) for v in row))
    # Piped output has no terminal width; rich would assume 80 columns and
    # fold every body into a word per line. Give pipes and logs room.
    Console(soft_wrap=False, width=None if is_tty() else 120).print(out)


def key_values(data: dict[str, Any], title: str | None = None) -> None:
    table(("field", "value"), ((k, _flat(v)) for k, v in data.items()), title)


def _flat(value: Any) -> str:
    """One cell for people: ``a, b`` for a list, ``user (3), project:x (1)`` for a mapping."""
    if isinstance(value, dict):
        return ", ".join(f"{k} ({_flat(v)})" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(f"({_flat(v)})" if isinstance(v, (list, tuple)) else _flat(v) for v in value)
    return "" if value is None else str(value)


def short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

"""``memex import``: memories kept elsewhere (CLAUDE.md, chat exports, notes) into the vault."""

from __future__ import annotations

from typing import Any

import click

from memex.cli import _interrupt
from memex.cli._common import (
    PluginChoice, get_vault, json_option, key_values, one_scope_option, print_json, short, table,
)
from memex.plugins import IMPORTERS


# Why `memex import` refused an item, by the dedup method that refused it.
REFUSED_WHY = {
    "erased": "its text was erased before (e.g. `memex erase --source-ref` undid an earlier import); "
              "--allow-erased imports it again",
    "turn_echo": "it repeats what an agent session already stored from the same turn",
}


@click.command("import")
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--format", "fmt", type=PluginChoice(IMPORTERS, extra=("auto",)), default="auto", show_default=True,
    help="What PATH holds (auto: detected from the path and its contents); plug-ins add formats "
         "(`memex plugins`).",
)
@one_scope_option("Scope of the imported memories (default from config).",
                  "the imported memories go to one scope (import once per scope)")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; write nothing.")
@click.option("--allow-erased", is_flag=True,
              help="Import texts that were erased before too (by default they are refused).")
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, path: str, fmt: str, scope: str | None, dry_run: bool, allow_erased: bool,
               as_json: bool) -> None:
    """Import memories from PATH: CLAUDE.md / AGENTS.md and Claude Code memory files,
    a ChatGPT or Claude.ai export, an Obsidian or basic-memory folder, a mem0 JSON list,
    or what an installed plug-in reads (memex help plugins).

    Each memory goes through the same path as `memex add` (dedup, erased-text
    guard) with source import:FORMAT and source_ref PATH#anchor, so
    `memex erase --source-ref PATH --reason ...` undoes an import. Running
    the same import again adds only what is new. Exit status 1 when an item
    failed.
    """
    from memex.importers import Ticker, import_path

    vault = get_vault(ctx)
    vault.check_scope(scope)  # before anything is read: a bad scope would fail every item
    ticker = Ticker(lambda line: click.echo(line, err=True))
    last: list[Any] = []

    def progress(done: int, total: int, report: Any) -> None:
        last[:] = [done, total, report]
        ticker(done, total, report)

    _interrupt.describe(lambda: (
        f"{last[0]} of {last[1]} items done ({last[2].created} created); running the same import again "
        "carries on (what is stored already counts as a duplicate)" if last else ""))
    report = import_path(vault, path, fmt=fmt, scope=scope, dry_run=dry_run, progress=progress,
                         allow_erased=allow_erased)
    data = report.as_dict()
    failed = report.failed > 0
    if as_json:
        print_json(data)
        ctx.exit(1 if failed else 0)
    items = data.pop("items")
    skipped = data.pop("skipped_files")
    if dry_run:
        for key in ("created", "duplicate", "refused", "failed"):
            data.pop(key)
    key_values(data, title="import (dry run: nothing written)" if dry_run else "import")
    if dry_run and items:
        table(("anchor", "category", "text"), ((_anchor(i["source_ref"]), i["category"], short(i["text"], 60)) for i in items))
    # What could not be imported is a problem, reported where problems go.
    for entry in skipped:
        click.echo(f"skipped: {entry['path']}: {entry['reason']}", err=True)
    for item in items:
        if item.get("status") == "failed":
            click.echo(f"failed: {_anchor(item['source_ref'])}: {item['reason']}", err=True)
        elif item.get("status") == "refused":
            why = REFUSED_WHY.get(item.get("method") or "", f"refused by the write path ({item.get('method')})")
            click.echo(f"refused: {_anchor(item['source_ref'])}: {why}")
    if not items:
        click.echo("nothing to import found in " + report.path)
    if dry_run:
        click.echo("dry run: nothing written")
    if failed:
        click.echo(f"not done: {report.failed} item(s) failed (above); the others were imported", err=True)
        ctx.exit(1)


def _anchor(source_ref: str) -> str:
    """The part of a source_ref after the import's path (the path is in the summary)."""
    return source_ref.partition("#")[2] or source_ref


def register(main: click.Group) -> None:
    main.add_command(import_cmd)

"""Consolidation commands: consolidate (one session or all), unsupersede."""

from __future__ import annotations

from typing import Any

import click

from memex.cli._common import get_vault, json_option, key_values, print_json, short, table
from memex.errors import InvalidArgument

_SUMMARY = ("candidates", "merged_groups", "superseded_count", "compression_ratio", "avg_similarity")


def _groups_table(groups: list[dict[str, Any]]) -> None:
    rows = []
    for g in groups:
        rep = g["representative"]
        rows.append([rep, len(g["superseded"]), f"{g['min_similarity']:.2f}", g["category"], short(g["bodies"][rep], 70)])
        for other in g["superseded"]:
            rows.append([f"  └ {other}", "", "", "", short(g["bodies"][other], 70)])
    table(("representative / superseded", "merged", "min sim", "category", "body"), rows)


@click.command("consolidate")
@click.option("--session", help="The session to consolidate.")
@click.option("--all", "all_sessions", is_flag=True, help="Every session with active memories (backfill).")
@click.option("--scope", help="Only this scope.")
@click.option("--dry-run", is_flag=True, help="Report what would be merged; change nothing.")
@json_option
@click.pass_context
def consolidate_cmd(
    ctx: click.Context, session: str | None, all_sessions: bool, scope: str | None, dry_run: bool, as_json: bool
) -> None:
    """Fold a session's similar memories into one representative each.

    The others get `superseded_by` (hidden from search, never deleted);
    `memex unsupersede ID` undoes one.
    """
    if bool(session) == all_sessions:
        raise InvalidArgument("--session/--all", "give exactly one of --session S or --all")
    vault = get_vault(ctx)
    if all_sessions:
        data = vault.consolidate_all(scope=scope, dry_run=dry_run).as_dict()
        if as_json:
            print_json(data)
            return
        key_values({k: data[k] for k in ("sessions_seen", *_SUMMARY, "dry_run")}, title="consolidate --all")
        groups = [g for s in data["sessions"] for g in s["groups"]]
    else:
        assert session is not None
        data = vault.consolidate(session, scope=scope, dry_run=dry_run).as_dict()
        if as_json:
            print_json(data)
            return
        key_values({k: data[k] for k in ("session", *_SUMMARY, "method", "dry_run")}, title="consolidate")
        groups = data["groups"]
        for skip in data["skipped"]:
            click.echo(f"skipped {skip['scope']}: {skip['reason']} ({skip['candidates']})")
    if groups:
        _groups_table(groups)
    if dry_run:
        click.echo("dry run: no file was changed")


@click.command("unsupersede")
@click.argument("memory_id")
@json_option
@click.pass_context
def unsupersede_cmd(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Make a superseded memory active again (removes its superseded_by)."""
    memory = get_vault(ctx).unsupersede(memory_id)
    if as_json:
        print_json(memory.as_dict())
    else:
        click.echo(f"{memory.id} is {memory.status} again  {memory.path}")


def register(main: click.Group) -> None:
    main.add_command(consolidate_cmd)
    main.add_command(unsupersede_cmd)

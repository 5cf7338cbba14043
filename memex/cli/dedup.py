"""Dedup commands: supersede, handoff, dedup (cleanup of existing duplicates)."""

from __future__ import annotations

import sys
from typing import Any

import click

from memex.cli._common import FiniteFloatRange, TextCommand, get_vault, json_option, key_values, print_json, short, table
from memex.consolidation.cleanup import CleanupReport, dedup_existing
from memex.consolidation.handoff import handoff
from memex.consolidation.supersede import supersede


@click.command("supersede", cls=TextCommand)
@click.argument("old_id")
@click.argument("text")
@click.option("--source", default="user", show_default=True, help="Who wrote the new text.")
@click.option("--session", help="Session that wrote it.")
@click.option("--source-ref", help="Opaque handle to where it came from.")
@click.option("--category", help="Category of the new memory (default: the old one's).")
@click.option("--confidence", type=FiniteFloatRange(0.0, 1.0), help="0 to 1 (default 0.8).")
@json_option
@click.pass_context
def supersede_cmd(ctx: click.Context, /, old_id: str, text: str, as_json: bool, **opts: Any) -> None:
    """Replace memory OLD_ID with TEXT (or - for standard input); the old one is kept, hidden.

    OLD_ID may be any unique prefix of the id, in any case.
    """
    from memex.ids import resolve

    vault = get_vault(ctx)
    old_id = resolve(vault, old_id, "OLD_ID")
    if text == "-":
        text = sys.stdin.read()
    outcome = supersede(vault, old_id, text, **opts)
    if as_json:
        print_json(outcome.as_dict())
        return
    new = outcome.result
    if new.status == "created":
        click.echo(f"created {new.id}  {new.path}")
    else:
        click.echo(f"already stored as {new.id} ({new.method})")
    click.echo(f"{old_id} is now superseded by {new.id}")


@click.command("handoff")
@click.option("--session", required=True, help="The session (turn) to report on.")
@json_option
@click.pass_context
def handoff_cmd(ctx: click.Context, /, session: str, as_json: bool) -> None:
    """Print the note for an agent: what a hook already stored verbatim this turn."""
    note = handoff(get_vault(ctx), session)
    if as_json:
        print_json(note.as_dict())
    elif note.text:
        click.echo(note.text)
    else:
        click.echo(f"nothing stored verbatim in session {session} recently")


def _print_cleanup(report: CleanupReport) -> None:
    verb = "superseded" if report.applied else "would supersede"
    rows = [
        (g.scope, g.keep, ", ".join(g.supersede), short(g.preview, 60)) for g in report.groups
    ]
    if rows:
        table(("scope", "keep", verb, "body"), rows)
    key_values(
        {"applied": report.applied, "changes": report.changes, "remaining": report.remaining},
        title="dedup",
    )
    if not report.applied and report.changes:
        click.echo("dry run: nothing changed; run `memex dedup --apply` to act")


@click.command("dedup")
@click.option("--apply", "apply_", is_flag=True, help="Mark the duplicates superseded (default: dry run).")
@click.option(
    "--limit", type=click.IntRange(1, 200), default=200, show_default=True,
    help="At most this many changes per run.",
)
@json_option
@click.pass_context
def dedup_cmd(ctx: click.Context, /, apply_: bool, limit: int, as_json: bool) -> None:
    """Find exact duplicates already in the vault; keep the most confident, newest one."""
    report = dedup_existing(get_vault(ctx), apply=apply_, limit=limit)
    if as_json:
        print_json(report.as_dict())
    else:
        _print_cleanup(report)


def register(main: click.Group) -> None:
    for command in (supersede_cmd, handoff_cmd, dedup_cmd):
        main.add_command(command)

"""``memex sync``: share the vault with a team through its git remote (docs/team.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memex.cli._common import get_vault, json_option, key_values, print_json, table
from memex.team.sync import sync
from memex.team.tombstones import KEY_FILE


def _print(data: dict[str, Any]) -> None:
    shown = {
        "remote": f"{data['remote']}/{data['branch']}", "key": data["key"],
        "local changes committed": data["local_changes"], "commits pulled": data["incoming"],
        "commits pushed": data["outgoing"], "erased (teammates' erasures)": len(data["erased"]),
        "duplicates retired": sum(len(g["superseded"]) for g in data["deduplicated"]),
        "history": data["history"].get("status", "-"),
    }
    if data["dry_run"]:
        shown = {k: v for k, v in shown.items() if k in ("remote", "key", "history")}
        shown.update({"local changes to commit": data["local_changes"], "commits to pull": data["incoming"],
                      "commits to push": data["outgoing"]})
        shown.pop("history")
    verdict = "dry run: nothing changed" if data["dry_run"] else "synced"
    key_values({"status": verdict, **shown}, title=verdict)
    if data["set_up"]:
        click.echo(("would set up: " if data["dry_run"] else "set up: ") + "; ".join(data["set_up"]))
    for path in data["repaired"]:
        click.echo(f"repaired: {path} came with git's conflict markers; both sides kept")
    for path in data["kept_edited"]:
        click.echo(f"kept: {path} (deleted on one side, edited on the other)")
    if data["conflicts"]:
        click.echo("both versions kept (the body was edited on two clones); supersede the outdated one:")
        table(("id", "other version", "path"), ((c["id"], c["other_id"], c["other_path"]) for c in data["conflicts"]))
    if data["history"].get("next_step"):
        click.echo(f"history: {data['history']['next_step']}")
    for note in data["notes"]:
        click.echo(f"note: {note}")
    for finding in data["config"]:
        click.echo(f"config: {finding}")


@click.command("sync")
@click.option("--remote", help="The git remote to sync with (default: the branch's upstream, [team] remote, origin).")
@click.option("--dry-run", is_flag=True, help="Fetch and say what a sync would do; change nothing.")
@click.option(
    "--key-file", type=click.Path(dir_okay=False, path_type=Path),
    help=f"Install the team's erasure key from this file (a teammate's {KEY_FILE}) first.",
)
@json_option
@click.pass_context
def sync_cmd(ctx: click.Context, /, remote: str | None, dry_run: bool, key_file: Path | None, as_json: bool) -> None:
    """Commit the vault's memory files, pull the team's, merge by memex's rules, push, reindex."""
    report = sync(get_vault(ctx), remote=remote, dry_run=dry_run, key_file=key_file)
    if as_json:
        print_json(report.as_dict())
    else:
        _print(report.as_dict())


def register(main: click.Group) -> None:
    main.add_command(sync_cmd)

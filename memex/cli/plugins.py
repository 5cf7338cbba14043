"""``memex plugins``: the import formats, embedding models and agent integrations memex can use."""

from __future__ import annotations

import click

from memex.cli._common import json_option, print_json, table


@click.command("plugins")
@json_option
@click.pass_context
def plugins_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the import formats (memex import --format), embedding models
    ([embedding] model, memex init --model) and agent integrations (memex
    install) memex can use: its own, and those installed packages add.

    Each is loaded to check it: the status is ok, or why it cannot be used.
    Exit status 1 when one cannot.
    """
    from memex import plugins

    rows = plugins.report()
    if as_json:
        print_json(rows)
    else:
        kinds = {plugins.IMPORTERS: "import format", plugins.MODELS: "model", plugins.AGENTS: "agent"}
        table(("kind", "name", "from", "status"),
              ((kinds[r["group"]], r["name"], r["from"], r["status"]) for r in rows))
        if not plugins.enabled():
            click.echo(f"{plugins.ENV_SWITCH}=0: other packages' plug-ins are turned off", err=True)
    ctx.exit(0 if all(r["status"] == "ok" for r in rows) else 1)


def register(main: click.Group) -> None:
    main.add_command(plugins_cmd)

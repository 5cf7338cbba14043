"""``memex entities`` and ``memex graph NAME``: the entity graph the index derives."""

from __future__ import annotations

import click

from memex.cli._common import get_vault, json_option, print_json, short, table


@click.command("entities")
@json_option
@click.pass_context
def entities_cmd(ctx: click.Context, as_json: bool) -> None:
    """List entities (frontmatter `entities:`, [[wikilinks]], relations), most named first."""
    from memex.index.graph import list_entities  # not on search's start-up path

    vault = get_vault(ctx)
    vault.indexer.drop_erased()  # rows a restored old index.db holds past an erasure
    found = list_entities(vault.store)
    if as_json:
        print_json([e.as_dict() for e in found])
    elif not found:
        click.echo("no entities")
    else:
        table(("entity", "memories", "active", "relations"),
              ((e.name, e.memories, e.active, e.relations) for e in found))


@click.command("graph")
@click.argument("name")
@json_option
@click.pass_context
def graph_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Show entity NAME: the memories naming it, its relations and neighbours."""
    from memex.index.graph import entity_graph  # not on search's start-up path

    vault = get_vault(ctx)
    vault.indexer.drop_erased()
    data = entity_graph(vault.store, name)
    if as_json:
        print_json(data)
        return
    click.echo(f"entity: {data['name']}")
    if data["relations"]:
        table(("subject", "predicate", "object", "memory"),
              ((r["subject"], r["predicate"], r["object"], r["memory"]) for r in data["relations"]),
              title="relations", labelled=True)
    table(("id", "scope", "status", "body"),
          ((m["id"], m["scope"], m["status"], short(m["body"])) for m in data["memories"]), title="memories", labelled=True)
    if data["neighbours"]:
        table(("entity", "shared memories"),
              ((n["name"], n["shared_memories"]) for n in data["neighbours"]), title="named with", labelled=True)


def register(main: click.Group) -> None:
    for command in (entities_cmd, graph_cmd):
        main.add_command(command)

"""``memex help [TOPIC]``: the user documentation, from the installed package.

Messages name a page as ``memex help TOPIC`` (never a path in a source
checkout a user of the wheel does not have): the wheel carries ``docs/`` as
``memex/docs`` (pyproject.toml), a checkout reads its own ``docs/``.
"""

from __future__ import annotations

import re
import sys

import click

from memex.distribution import docs_dir


def topics() -> dict[str, str]:
    """Topic name -> the page's title (its first heading)."""
    folder = docs_dir()
    if folder is None:
        return {}
    found = {}
    for page in sorted(folder.glob("*.md")):
        if page.stem == "index":
            continue
        first = next((line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("# ")), "")
        found[page.stem] = first.removeprefix("# ").strip()
    return found


@click.command("help")
@click.argument("topic", required=False)
def help_cmd(topic: str | None) -> None:
    """Show a page of the documentation (TOPIC), or list the topics.

    `memex COMMAND --help` lists a command's options; `memex help cli` is the
    whole command reference, by task.
    """
    known = topics()
    if not known:
        raise click.ClickException("this installation carries no documentation pages")
    if topic is None:
        width = max(len(t) for t in known)
        click.echo("memex help TOPIC shows one of these pages:\n")
        for name, title in known.items():
            click.echo(f"  {name.ljust(width)}  {title}")
        return
    name = topic.strip().lower().removesuffix(".md")
    if name not in known:
        import difflib

        near = difflib.get_close_matches(name, list(known), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise click.BadParameter(f"no topic {topic!r}{hint} (`memex help` lists them)", param_hint="TOPIC")
    folder = docs_dir()
    assert folder is not None
    text = (folder / f"{name}.md").read_text(encoding="utf-8")
    # Links between pages become the topic to ask for.
    text = re.sub(r"\]\(([\w-]+)\.md(#[^)]*)?\)", lambda m: f"] (memex help {m.group(1)})", text)
    if sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


def register(main: click.Group) -> None:
    main.add_command(help_cmd)

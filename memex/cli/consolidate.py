"""Consolidation and decay commands: consolidate (one session or all), unsupersede, fading."""

from __future__ import annotations

from typing import Any

import click

from memex import decay
from memex.cli._common import (
    FiniteFloatRange, get_vault, json_option, key_values, one_scope_option, print_json, short, table,
)
from memex.errors import InvalidArgument

# The summary fields both reports carry (only one session's report has an
# avg_similarity: an average over sessions of averages would mislead).
_SUMMARY = ("candidates", "merged_groups", "superseded_count", "compression_ratio")


def _groups_table(groups: list[dict[str, Any]]) -> None:
    rows = []
    for g in groups:
        rep = g["representative"]
        rows.append([rep, len(g["superseded"]), f"{g['min_similarity']:.2f}", g["category"], short(g["bodies"][rep], 70)])
        for other in g["superseded"]:
            rows.append([f"  └ {other}", "", "", "", short(g["bodies"][other], 70)])
    table(("representative / superseded", "merged", "min sim", "category", "body"), rows)


def _explain_table(pairs: list[dict[str, Any]], threshold: float) -> None:
    from memex.dedup.values import GUARD_MEANING

    rows = []
    for p in sorted(pairs, key=lambda p: (-p["score"], p["a"], p["b"])):
        reason = p["reason"]
        decision = "merged" if p["merged"] else f"kept apart: {reason} ({GUARD_MEANING.get(reason, reason)})"
        rows.append([f"{p['score']:.2f}", f"{p['cosine']:.2f}", f"{p['jaccard']:.2f}", decision,
                     f"{p['a']}: {short(p['a_body'], 60)}\n{p['b']}: {short(p['b_body'], 60)}"])
    # "reason" and "body" are the columns the table wraps instead of cutting.
    table(("score", "cosine", "jaccard", "reason", "body"), rows,
          title=f"candidate pairs (merge at score >= {threshold:.2f} unless a guard refuses)")


@click.command("consolidate")
@click.option("--session", help="The session to consolidate.")
@click.option("--all", "all_sessions", is_flag=True, help="Every session with active memories (backfill).")
@one_scope_option("Only this scope.", "consolidation works one scope at a time (without --scope: every scope)")
@click.option("--dry-run", is_flag=True, help="Report what would be merged; change nothing.")
@click.option("--explain", is_flag=True,
              help="Show every candidate pair: its score, and merged or what kept it apart.")
@json_option
@click.pass_context
def consolidate_cmd(
    ctx: click.Context, session: str | None, all_sessions: bool, scope: str | None, dry_run: bool,
    explain: bool, as_json: bool,
) -> None:
    """Fold a session's similar memories into one representative each.

    The others get `superseded_by` (hidden from search, never deleted);
    `memex unsupersede ID` undoes one.
    """
    from memex.consolidation.consolidate import EXPLAIN_FLOOR, consolidate, consolidate_all  # numpy: only when run

    if bool(session) == all_sessions:
        raise InvalidArgument("--session/--all", "give exactly one of --session S or --all")
    vault = get_vault(ctx)
    if all_sessions:
        data = consolidate_all(vault, scope=scope, dry_run=dry_run, explain=explain).as_dict()
        if as_json:
            print_json(data)
            return
        # The --all summary has no avg_similarity (it is per session).
        key_values({k: data[k] for k in ("sessions_seen", *_SUMMARY, "dry_run") if k in data},
                   title="consolidate --all")
        groups = [g for s in data["sessions"] for g in s["groups"]]
        explained = [(s["session"], s["pairs"], s["merge_threshold"]) for s in data["sessions"]]
    else:
        assert session is not None
        data = consolidate(vault, session, scope=scope, dry_run=dry_run, explain=explain).as_dict()
        if as_json:
            print_json(data)
            return
        key_values({k: data[k] for k in ("session", *_SUMMARY, "avg_similarity", "method", "dry_run")}, title="consolidate")
        groups = data["groups"]
        explained = [(session, data["pairs"], data["merge_threshold"])]
        for skip in data["skipped"]:
            click.echo(f"skipped {skip['scope']}: {skip['reason']} ({skip['candidates']})")
    if groups:
        _groups_table(groups)
    if explain:
        for name, pairs, threshold in explained:
            if pairs:
                click.echo(f"session {name}:")
                _explain_table(pairs, threshold)
            else:
                click.echo(f"session {name}: no candidate pair scored {EXPLAIN_FLOOR} or more")
    if dry_run:
        click.echo("dry run: no file was changed")


@click.command("unsupersede")
@click.argument("memory_id")
@json_option
@click.pass_context
def unsupersede_cmd(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Make a superseded memory active again (removes its superseded_by).

    ID may be any unique prefix of the id, in any case.
    """
    from memex.consolidation.consolidate import unsupersede  # numpy: only when run
    from memex.ids import resolve

    vault = get_vault(ctx)
    memory = unsupersede(vault, resolve(vault, memory_id))
    if as_json:
        print_json(memory.as_dict())
    else:
        click.echo(f"{memory.id} is {memory.status} again  {memory.path}")


@click.command("fading")
@click.option("--scope", multiple=True, help="Only this scope (repeatable).")
@click.option("--within", "within_days", type=FiniteFloatRange(0), default=30.0, show_default=True,
              help="Show memories that fade from recall within this many days (faded ones too).")
@json_option
@click.pass_context
def fading_cmd(ctx: click.Context, scope: tuple[str, ...], within_days: float, as_json: bool) -> None:
    """The decay schedule: memories that have faded from recall, or soon will.

    A recall resets a memory's clock; raise its confidence or change
    [decay] rates in .memex/config.toml to keep it longer.
    """
    vault = get_vault(ctx)
    wanted = {vault.scope_filter(s) for s in scope}
    policy = decay.load_policy(vault.config)
    rows = [f for f in decay.schedule(vault.store, policy, next(iter(wanted)) if len(wanted) == 1 else None)
            if f.days_left is not None and f.days_left <= within_days and (not wanted or f.scope in wanted)]
    if as_json:
        print_json({"policy": policy.describe(), "memories": [
            {**{k: getattr(f, k) for k in f.__dataclass_fields__}, "faded": f.faded} for f in rows
        ]})
        return
    if not rows:
        click.echo(f"nothing fades within {within_days:g} days")
        return
    table(("id", "category", "confidence", "effective", "days left", "body"),
          ((f.id, f.category, f.confidence, f"{f.effective_confidence:.3f}",
            "faded" if f.faded else f"{f.days_left:g}", short(f.body, 60)) for f in rows),
          title=f"below min_confidence {policy.min_confidence:g} within {within_days:g} days")


def register(main: click.Group) -> None:
    main.add_command(consolidate_cmd)
    main.add_command(unsupersede_cmd)
    main.add_command(fading_cmd)

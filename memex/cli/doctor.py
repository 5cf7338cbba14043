"""``memex doctor``: drift between the files and the index, and what else needs a person."""

from __future__ import annotations

from typing import Any

import click

from memex.cli._common import get_vault, json_option, key_values, print_json
from memex.layout import MEMORIES_DIR

MAX_LISTED = 20  # doctor names this many loose paths; --json has them all


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
        # Not drift (the index matches the files), so not in the verdict: a person decides.
        "hidden": health.hidden_behind_nothing(vault),
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
    for item in data["hidden"]:
        why = "itself" if item["superseded_by"] == item["id"] else f"{item['superseded_by']}, which is not in the vault"
        click.echo(f"hidden: {item['path']}: superseded by {why}: out of search and recall; "
                   f"`memex unsupersede {item['id']}` shows it again")
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


def register(main: click.Group) -> None:
    main.add_command(doctor_cmd)

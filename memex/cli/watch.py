"""``memex watch`` (keep the index in step with the files) and ``memex status``."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any

import click

from memex.watch import state as watch_state
from memex.cli._common import FiniteFloatRange, get_vault, json_option, key_values, print_json
from memex.vault import Vault
from memex.watch.watcher import Watcher, settings_for

_SHOWN_PATHS = 10
INTERRUPTED = 130  # docs/cli.md, exit statuses


@click.command("watch")
@click.option("--debounce-ms", type=click.IntRange(1, 10_000), help="Quiet time that ends a burst of events (default from [watch], 40).")
@click.option("--reconcile-seconds", type=FiniteFloatRange(min=0.1), help="Full reconcile period (default from [watch], 60).")
@click.option("-v", "--verbose", is_flag=True, help="Also log batches that changed nothing.")
@click.option("-q", "--quiet", is_flag=True, help="Log only warnings and errors.")
@click.pass_context
def watch_cmd(ctx: click.Context, debounce_ms: int | None, reconcile_seconds: float | None,
              verbose: bool, quiet: bool) -> None:
    """Keep the index in step with the vault until Ctrl-C (or SIGTERM).

    Reconciles at start-up and every reconcile_seconds; a second watcher on
    the same vault exits with an error. Exit status after Ctrl-C: 130 (as
    every command); after SIGTERM, a supervisor's stop: 0.
    """
    level = logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("memex")
    logger.addHandler(handler)
    logger.setLevel(level)
    vault = get_vault(ctx)
    watcher = Watcher(vault, settings_for(vault, debounce_ms=debounce_ms, reconcile_seconds=reconcile_seconds))
    stop, server = _serve_model(vault)
    try:
        watcher.run()
    finally:
        stop.set()
        if server is not None:
            server.join(5)  # it removes its socket on the way out
    if watcher.stopped_by == signal.SIGINT:
        ctx.exit(INTERRUPTED)
    if watcher.gone:
        raise click.ClickException(
            f"{vault.root}: the vault folder is gone (moved or deleted); the watcher stopped: "
            "run `memex watch` again where it is now"
        )


def _serve_model(vault: Vault) -> tuple[threading.Event, threading.Thread | None]:
    """The watcher holds the vault's model anyway: it serves it to one-shot
    commands (`memex search`, `memex add`) as an agent session's warm server
    does (memex/agents/warm.py), so they need not load it (start-up: docs/benchmarks.md).
    Off with [agents] warm_seconds = 0 or MEMEX_WARM=0, like that server."""
    from memex.agents import warm

    stop = threading.Event()
    model = vault.embedder
    if model is None or warm.idle_seconds(vault) <= 0:
        return stop, None
    server = threading.Thread(
        target=warm.serve_model, args=(vault.root.resolve(), model, vault.config.embedding_model),
        kwargs={"stop": stop}, name="memex-warm-model", daemon=True,
    )
    server.start()
    return stop, server


def _watcher_line(info: dict[str, Any]) -> str:
    if info["running"]:
        beat = info.get("heartbeat_age_seconds")
        age = f", last heartbeat {beat:.1f}s ago" if isinstance(beat, (int, float)) else ", no heartbeat yet"
        stuck = "" if info.get("responsive") is not False else " (NOT RESPONDING)"
        return f"running (pid {info.get('pid')}{age}){stuck}"
    last = info.get("last_state")
    if last == "crashed":
        return f"not running (last watcher, pid {info.get('last_pid')}, stopped without shutting down)"
    return "not running"


def _server_line(info: dict[str, Any] | None) -> str:
    """The background process that keeps the embedding model loaded, if any."""
    if info is None:
        return "none running (commands load the model themselves)"
    if info.get("owner") == "watch":
        return f"served by the watcher (pid {info.get('pid')})"
    idle, limit = info.get("idle_for") or 0, info.get("exits_after") or 0
    return (f"pid {info.get('pid')}, model {info.get('setting')}, idle {idle / 60:.0f} min; exits by itself "
            f"after {limit / 60:.0f} min idle ([agents] warm_seconds; kill {info.get('pid')} stops it now)")


@click.command("status")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Is a watcher running, is a model server running, and how many files differ from the index now?"""
    from memex.agents.warm import server_status

    vault = get_vault(ctx)
    data = {**watch_state.status(vault), "model_server": server_status(vault.root)}
    if as_json:
        print_json(data)
        return
    differing = data["differing"]
    summary = {
        "vault": data["vault"],
        "watcher": _watcher_line(data["watcher"]),
        "index": "fresh: every file matches the index" if differing == 0 else
        f"{differing} file(s) differ from the index "
        f"({len(data['missing'])} missing, {len(data['stale'])} stale, {len(data['orphaned'])} orphaned)",
    }
    if data["errors"]:
        summary["not indexed"] = f"{len(data['errors'])} file(s) with errors (see `memex doctor`)"
    if data["unembedded"]:
        summary["unembedded"] = f"{len(data['unembedded'])} without vectors"
    summary["model server"] = _server_line(data["model_server"])
    key_values(summary, title="memex status")
    shown = [(k, p) for k in ("missing", "stale", "orphaned") for p in data[k]]
    for kind, path in shown[:_SHOWN_PATHS]:
        click.echo(f"{kind}: {path}")
    if len(shown) > _SHOWN_PATHS:
        click.echo(f"... and {len(shown) - _SHOWN_PATHS} more (memex status --json lists all)")


def register(main: click.Group) -> None:
    main.add_command(watch_cmd)
    main.add_command(status_cmd)

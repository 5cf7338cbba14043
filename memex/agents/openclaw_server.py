"""The long-lived memex process an OpenClaw gateway talks to.

``memex openclaw-engine`` reads one JSON request per line on stdin and writes
one answer per line on stdout, in order::

    {"id": 1, "op": "assemble", "params": {...OpenClaw's assemble params...}}
    {"id": 1, "ok": true, "result": {"messages": [...], "estimatedTokens": 812}}
    {"id": 2, "ok": false, "error": "messages[3]: must be an object with a role"}

Ops are ``ping``, ``ingest``, ``assemble``, ``afterTurn``, ``commitTurn``,
``compact`` and ``sessionEnd`` (:mod:`memex.agents.openclaw_engine`). The plugin spawns it once per gateway
and keeps it: the vault, its index and the embedding model are loaded once,
not per turn. Requests are answered one at a time, in the order they came,
so the turns of a conversation are archived in order. Some answers come
before their work (``sessionEnd``: :class:`~memex.agents.openclaw_engine.Later`);
that work is done before the next request is read. It exits when stdin
closes (the gateway went away), once that work is done.

Nothing but answers may reach stdout, so anything else memex prints while
answering goes to stderr (the plugin logs it). A failing request is an
answer with ``ok: false``; the process never exits on one.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

from memex import jsonio
from memex.agents import openclaw_engine
from memex.vault import Vault

MAX_LINE = 64 * 1024 * 1024  # a request bigger than this is refused, not read into memory


class _Quiet(io.TextIOBase):
    """stderr that swallows a closed pipe: deferred work may outlive the gateway."""

    def __init__(self, target: IO[str]) -> None:
        self._target = target

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        try:
            self._target.write(text)
            self._target.flush()
        except (OSError, ValueError):
            pass
        return len(text)


def run_later(work: Callable[[], object]) -> None:
    """Deferred work: its failure goes to stderr (the plugin logs it), never ends the process."""
    quiet = _Quiet(sys.stderr)
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - one failed job must not end the gateway's memex
            print(f"memex openclaw-engine: deferred work failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def answer_first(vault: Vault, request: Any) -> tuple[dict[str, Any], Callable[[], object] | None]:
    """The answer to one decoded request, and the work to do once it is sent (never raises)."""
    rid = request.get("id") if isinstance(request, dict) else None
    try:
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object with id, op and params")
        op = request.get("op")
        params = request.get("params") or {}
        if op == "ping":
            return {"id": rid, "ok": True, "result": {"vault": str(vault.root)}}, None
        handler = openclaw_engine.OPERATIONS.get(op) if isinstance(op, str) else None
        if handler is None:
            raise ValueError(f"unknown op {op!r}; expected one of ping, {', '.join(openclaw_engine.OPERATIONS)}")
        if not isinstance(params, dict):
            raise ValueError("params must be a JSON object")
        with contextlib.redirect_stdout(sys.stderr):
            if vault.reopen_if_replaced():  # index.db deleted or replaced since the gateway started
                vault.reindex()
            result = handler(vault, params)
        if isinstance(result, openclaw_engine.Later):
            return {"id": rid, "ok": True, "result": result.answer}, result.work
        return {"id": rid, "ok": True, "result": result}, None
    except Exception as exc:  # noqa: BLE001 - one bad request must not end the gateway's memex
        print(f"memex openclaw-engine: {type(exc).__name__}: {exc}", file=sys.stderr)
        return {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"}, None


def serve(vault: Vault, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    while True:
        line = source.readline(MAX_LINE + 1)
        if not line:
            return
        if not line.strip():
            continue
        later: Callable[[], object] | None = None
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            # Skip the rest of the oversized line; answer without an id.
            while line and not line.endswith(b"\n"):
                line = source.readline(MAX_LINE)
            out: dict[str, Any] = {"id": None, "ok": False, "error": f"request over {MAX_LINE} bytes"}
        else:
            try:
                # OpenClaw is a JavaScript program: a string cut mid-emoji comes as a lone surrogate.
                request = jsonio.loads(line)
            except ValueError as exc:
                out = {"id": None, "ok": False, "error": f"not a JSON line: {exc}"}
            else:
                out, later = answer_first(vault, request)
        try:
            sink.write(json.dumps(out, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
            sink.flush()
        except (BrokenPipeError, ValueError):
            gone = True
        except TypeError:  # pragma: no cover - default=str makes every answer serializable
            traceback.print_exc(file=sys.stderr)
            gone = False
        else:
            gone = False
        if later is not None:  # even when the gateway is gone: the work was accepted
            run_later(later)
        if gone:
            return

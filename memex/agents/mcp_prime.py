"""The MCP handshake's answers cached before a client's first session.

`memex install mcp` has the SDK answer the handshakes Claude Code and Codex
begin with, through :func:`memex.agents.mcp_front.serve` on pipes of its
own, in a process of its own, and waits for them: the first ``memex mcp``
of the first session then answers from the cache at once
(memex/agents/mcp_front.py, docs/agents.md "Start-up: the tools listed at once").
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from memex.agents.mcp_front import _ENVELOPE, ACKNOWLEDGED, LISTEN, HandshakeCache, _cache, serve

# The handshakes the clients memex installs into begin with (recorded from
# Claude Code 2.1.332 and Codex 0.171.0): answered once by the SDK when memex
# is installed, so that even the first session's start finds them cached.
_ENV_2026 = {_ENVELOPE[0]: "2026-07-28", _ENVELOPE[1]: {}, _ENVELOPE[2]: {"name": "memex-install", "version": "1"}}
_LISTINGS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


def _primed_sessions() -> list[list[dict[str, Any]]]:
    modern: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": {"_meta": _ENV_2026}}
        for n, method in enumerate(("server/discover", *_LISTINGS))
    ]
    # Claude Code opens this subscription right after its probe.
    modern.insert(1, {"jsonrpc": "2.0", "id": "listen", "method": LISTEN, "params": {"_meta": _ENV_2026, "notifications": {
        "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}}})
    sessions = [modern]
    for version in ("2025-06-18", "2025-11-25"):
        sessions.append([
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "memex-install", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": n, "method": method} for n, method in enumerate(_LISTINGS, 1)),
        ])
    return sessions


# A priming younger than this is left to finish (it takes seconds).
PRIMING_SECONDS = 120.0


def prime(timeout: float = 120.0) -> None:
    """Ask the SDK the usual handshakes once, so their answers are cached
    (`memex install mcp` runs this in the background). No vault is opened."""
    def no_vault() -> Any:
        raise RuntimeError("priming the handshake opens no vault")

    for session in _primed_sessions():
        agent_r, server_w = os.pipe()
        server_r, agent_w = os.pipe()
        with os.fdopen(agent_w, "wb") as to_server, os.fdopen(agent_r, "rb") as from_server:
            thread = threading.Thread(target=serve, args=(no_vault, (os.fdopen(server_r, "rb", buffering=0),
                                                                    os.fdopen(server_w, "wb"))), daemon=True)
            thread.start()
            for message in session:
                to_server.write(json.dumps(message).encode("utf-8") + b"\n")
                to_server.flush()
                while "id" in message:
                    line = from_server.readline()
                    answer = json.loads(line) if line else {}
                    if not line or answer.get("id") == message["id"] or (
                            message["method"] == LISTEN and answer.get("method") == ACKNOWLEDGED):
                        break
        thread.join(timeout)
    cache = _cache()
    if cache.path is not None:
        cache.path.with_suffix(".priming").unlink(missing_ok=True)


def _primed(cache: HandshakeCache) -> bool:
    """Whether every request of the usual handshakes is answered from ``cache``."""
    for session in _primed_sessions():
        version: str | None = None
        for message in session:
            if message["method"] == "initialize":
                version = message["params"]["protocolVersion"]
            if "id" in message and cache.get(message, version) is None:
                return False
    return True


# How long `memex install mcp` waits for the priming: seconds on a quiet
# machine; past this (a machine loaded for minutes) it finishes in the background.
PRIME_WAIT = 20.0


def prime_and_wait(timeout: float = PRIME_WAIT) -> bool:
    """Have the handshake's answers cached before `memex install mcp` returns;
    whether they are.

    The priming runs in its own process (:func:`prime_in_background`), and
    the install waits for it, up to ``timeout``: a client started at once
    after the install (a script, CI, a user pasting both lines) would
    otherwise start its first ``memex mcp`` with nothing cached, beside the
    priming, both loading the SDK. Claude Code's probe then timed out and
    its first turn waited about 3 s for memex's tools, Codex's about 2 s
    (docs/benchmarks.md, "A real agent's turn").
    """
    if _primed(_cache()):
        return True
    prime_in_background()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        cache = _cache()
        # Its marker goes last, as the priming process ends: it would
        # otherwise still be stopping its SDK sessions beside the first run.
        if _primed(cache) and (cache.path is None or not cache.path.with_suffix(".priming").exists()):
            return True
    return _primed(_cache())


def prime_in_background() -> bool:
    """Run :func:`prime` in a detached process unless its answers are cached
    already or another priming is under way; whether it started."""
    cache = _cache()
    if _primed(cache):
        return False
    if cache.path is not None:  # one priming at a time (installs run back to back)
        marker = cache.path.with_suffix(".priming")
        try:
            if time.time() - marker.stat().st_mtime < PRIMING_SECONDS:
                return False
        except OSError:
            pass
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(str(os.getpid()), encoding="utf-8")
        except OSError:
            pass
    argv = [sys.executable, "-m", "memex.agents.mcp_prime", "--prime"]
    if not hasattr(os, "fork"):
        import subprocess

        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         close_fds=True)
        return True
    # Two forks: the priming process belongs to nobody, so the caller neither
    # waits for it nor leaves a child behind (an install run in-process).
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.execv(sys.executable, argv)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    return True


if __name__ == "__main__":
    if sys.argv[1:] == ["--prime"]:
        prime()

"""``memex hook AGENT``: answer an agent's hook event without making it wait.

An agent runs a new ``memex hook`` process for every event and, for most
events, waits for it; so what the process loads is what the agent feels.
This module is the hook's front door, and it imports only the standard
library and memex's base layer (tests/test_hook_client.py pins that):

- **SessionStart, UserPromptSubmit** (the agent waits for added context):
  when the vault's warm server runs (:mod:`memex.agents.warm`, started by
  the session's first hook), the event is sent to it and its answer printed.
  The server holds the model, the index and the rest of memex loaded, so
  the hook costs a process start and one round trip. Without a server,
  memex is loaded here and answers (:func:`memex.agents.hook_run.run_here`),
  then starts the server for the session's next events. Until it is up,
  a prompt's vector is made by a child process forked here, before memex
  is imported, which loads the model on the other core
  (:mod:`memex.agents.query_child`): the answer is the hybrid one;
  SessionStart answers lexically (BM25 only, without numpy or the model:
  :func:`memex.agents.hook_run.answers_lexically` says when).
- **Stop, PreCompact, SessionEnd**, and Codex's ``notify``: nothing of
  their work is needed for the agent's next step. Their fields are checked,
  then the process forks and exits at once; the child, detached from the
  agent's pipes, loads memex and does the work (errors go to the vault's
  ``.memex/cache/hooks.log``). ``MEMEX_HOOK_SYNC=1``, or a platform without
  fork, does it before exiting instead.

Everything else — OpenClaw's events, a vault that does not exist yet, an
event with a bad field — is run by :func:`memex.agents.hook_run.run_here`,
which answers exactly as before. Whatever happens, the exit status is 0 and
a problem is one line on stderr (the fail-open contract,
:mod:`memex.agents.hook_io`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from memex.agents import query_child, warm_client
from memex.agents.hook_event import (
    CONTEXT_EVENTS, SYNC_ENV, WARM_AGENTS, Payload, after_answer_event, default_vault_path, error_line,
    explicit_vault, parse_payload, split_vault_option,
)
from memex.errors import MemexError
from memex.layout import is_vault

# memex's own agents (memex.plugins.BUILTIN, named here without importing it):
# a plug-in's hook goes through the full command line, which finds it.
AGENTS = ("claude-code", "codex", "openclaw")
VAULT_ENV = "MEMEX_VAULT"  # memex.vault.ENV_VAR, named here without importing the vault


def parse_argv(argv: list[str]) -> tuple[str, str | None, str | None] | None:
    """(agent, --vault or None, PAYLOAD or None) of a plain ``memex [--vault V] hook AGENT [PAYLOAD]``.

    None for anything else (``--help``, an unknown agent, an extra option):
    the full command line interface answers those.
    """
    split = split_vault_option(argv)
    if split is None:
        return None
    vault, words = split
    if len(words) not in (2, 3) or words[0] != "hook" or words[1] not in AGENTS:
        return None
    return words[1], vault, words[2] if len(words) == 3 else None


def main(argv: list[str]) -> int | None:
    """Run ``memex ARGV`` if it is a hook call; None when it is not (the CLI takes it)."""
    call = parse_argv(argv)
    if call is None:
        return None
    agent, vault_opt, payload_arg = call
    return answer(agent, vault_opt or os.environ.get(VAULT_ENV) or None, payload_arg)


def answer(agent: str, vault_path: str | None, payload_arg: str | None) -> int:
    """Answer one hook event (PAYLOAD, else stdin) for ``agent``; the exit status, always 0."""
    try:
        raw = payload_arg if payload_arg is not None else sys.stdin.read()
        event = parse_payload(raw, "PAYLOAD" if payload_arg is not None else "stdin")
        root = explicit_vault(vault_path) if vault_path else default_vault_path()
    except MemexError as exc:
        print(error_line(agent, str(exc)), file=sys.stderr)
        return 0
    no_server = False
    query = None
    hybrid = False
    if agent in WARM_AGENTS and is_vault(root):
        if after_answer_event(event) and detach(agent, vault_path, event):
            return 0
        if event.get("hook_event_name") in CONTEXT_EVENTS:
            asked = ask_warm_server(agent, root, event)
            if asked == ANSWERED:
                return 0
            no_server = asked == NO_SERVER
            if event.get("hook_event_name") == "UserPromptSubmit" and asked in (NO_SERVER, TURNED_OFF):
                # No server will embed the prompt: a child does, beside the
                # imports below, when a core is free (memex/agents/query_child.py);
                # else this process loads the model. Either way the answer is hybrid.
                hybrid = True
                query = query_child.start(root, event.get("prompt"))
    from memex.agents import hook_run  # memex itself: SQLite, and numpy unless lexical

    return hook_run.run_here(agent, vault_path, event, no_server=no_server, query=query, hybrid=hybrid)


# What asking the warm server came to (:func:`ask_warm_server`).
ANSWERED = "answered"  # its answer is printed
NO_SERVER = "no server"  # none listens: one can be started, the event is answered here
DECLINED = "declined"  # a server is there but did not answer (busy, another model, too slow)
TURNED_OFF = "turned off"  # MEMEX_WARM=0, or no safe place for its socket: no server will come


def ask_warm_server(agent: str, root: Path, event: Payload) -> str:
    """Send ``event`` to the vault's warm server; what came of it (:data:`ANSWERED` ...)."""
    if warm_client.turned_off():
        return TURNED_OFF
    path = warm_client.socket_path(root)
    if path is None:
        return TURNED_OFF
    if not path.exists():
        return NO_SERVER
    try:
        reply = warm_client.ask(path, {"hook": {"agent": agent, "event": event}}, warm_client.HOOK_REPLY_TIMEOUT)
    except warm_client.NotSent:
        return NO_SERVER  # a socket left by a dead server
    except (OSError, ValueError):
        # It did not answer in time: run it here. A capture it may have made
        # meanwhile is stored once (dedup finds the exact duplicate).
        return DECLINED
    if reply.get("busy") or ("answer" not in reply and "error" not in reply):
        return DECLINED  # busy, or declined (another model, an older server): run it here
    if reply.get("stderr"):
        sys.stderr.write(str(reply["stderr"]))
    if "error" in reply:
        print(error_line(agent, str(reply["error"])), file=sys.stderr)
        return ANSWERED
    if reply["answer"]:
        sys.stdout.write(json.dumps(reply["answer"], ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return ANSWERED


def detach(agent: str, vault_path: str | None, event: Payload) -> bool:
    """Leave the event's work to a child the agent does not wait for.

    Returns True in the parent, which then exits at once. The child never
    returns: it leaves the agent's session and pipes, does the work and
    exits. False (nothing forked) with ``MEMEX_HOOK_SYNC=1`` or without fork.
    """
    if os.environ.get(SYNC_ENV) == "1" or not hasattr(os, "fork"):
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork():
        return True
    code = 0
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        from memex.agents import hook_run

        hook_run.run_detached(agent, vault_path, event)
    except BaseException:  # noqa: BLE001 - the child must always exit, never return into the parent's code
        code = 1
    finally:
        os._exit(code)

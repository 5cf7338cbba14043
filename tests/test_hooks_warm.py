"""The warm model server: hooks embed through it instead of loading the model."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from memex.agents import hook_io, warm, warm_client
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.hook_helpers import fixture, run_hook, set_config
from tests.watchkit import wait_for


def _wait_for(vault: Vault, seconds: float = 60) -> warm.WarmEmbedder:
    found: warm.WarmEmbedder = wait_for(lambda: warm.connect(vault), seconds, "the warm server to answer")
    return found


@pytest.mark.model
def test_session_start_warms_the_model_for_later_prompts(
    vault_root: Path, real_embedder: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    set_config(vault_root, "agents", "warm_seconds = 3")  # exits soon after the test
    with Vault(vault_root) as vault:
        assert warm.connect(vault) is None
        vault.add("The staging database listens on port 5433", scope="user")
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    start = fixture("claude-code", "SessionStart.json", cwd=str(project), transcript=str(tmp_path / "t.jsonl"))
    assert run_hook("claude-code", json.dumps(start), vault_root, env={"MEMEX_WARM": "1"}).returncode == 0
    with Vault(vault_root) as vault:
        remote = _wait_for(vault)
        texts = ["which port does staging use?", "数据库端口"]
        assert remote.model_id == real_embedder.model_id  # type: ignore[attr-defined]
        assert np.allclose(remote.embed(texts), real_embedder.embed(texts), atol=1e-5)  # type: ignore[attr-defined]
        warmed = hook_io.hook_vault(str(vault_root), warm=True)
        assert isinstance(warmed.embedder, warm.WarmEmbedder)
        assert warmed.search("which port does staging use?")[0].body.startswith("The staging database")
        warmed.close()
    # A second SessionStart finds the server running and starts no other.
    assert run_hook("claude-code", json.dumps(start), vault_root, env={"MEMEX_WARM": "1"}).returncode == 0
    # Idle for warm_seconds, the server exits and removes its socket.
    path = warm.socket_path(vault_root)
    assert path is not None
    wait_for(lambda: not path.exists(), 30, "the idle warm server to exit")


def test_no_server_means_the_vault_loads_its_own_model(vault_root: Path) -> None:
    with Vault(vault_root) as vault:
        assert warm.connect(vault) is None
    plain = hook_io.hook_vault(str(vault_root), warm=True)
    assert not isinstance(plain._embedder_choice, warm.WarmEmbedder)
    plain.close()


def test_warm_off_by_environment_or_config(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_WARM", "0")
    with Vault(vault_root) as vault:
        assert warm.idle_seconds(vault) == 0 and warm.start(vault) is False
    monkeypatch.delenv("MEMEX_WARM")
    set_config(vault_root, "agents", "warm_seconds = 0")
    with Vault(vault_root) as vault:
        assert warm.start(vault) is False


def test_server_protocol_and_stale_socket(vault_root: Path, fake_embedder: HashEmbedder,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """In process with the fake model: a dead server's socket file is replaced, vectors round-trip."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    monkeypatch.setattr(warm.embed, "load_embedder", lambda setting: fake_embedder)
    set_config(vault_root, "agents", "warm_seconds = 2")
    path = warm.socket_path(vault_root)
    assert path is not None
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.unlink(missing_ok=True)
    path.write_text("left behind by a crashed server")
    with Vault(vault_root) as vault:
        assert warm.connect(vault) is None  # garbage is never trusted
    server = threading.Thread(target=warm.serve, args=(vault_root,), daemon=True)
    server.start()
    with Vault(vault_root) as vault:
        remote = _wait_for(vault, 20)
        texts = ["blue-green deploys on Fridays", "记住：周五不要部署"]
        assert (remote.model_id, remote.dim) == (fake_embedder.model_id, fake_embedder.dim)
        assert np.allclose(remote.embed(texts), fake_embedder.embed(texts))
    server.join(30)  # idle for warm_seconds: it stops and removes its socket
    assert not server.is_alive() and not path.exists()


def test_a_socket_folder_others_can_write_is_not_used(vault_root: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    path = warm.socket_path(vault_root)
    assert path is not None and path.parent.parent == tmp_path / "run"
    path.parent.mkdir(parents=True, mode=0o777)
    path.parent.chmod(0o777)
    assert warm.socket_path(vault_root) is None
    path.parent.chmod(0o700)
    assert warm.socket_path(vault_root) == path


def test_a_server_loading_for_the_vault_keeps_others_from_starting(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompts answered lexically while a session's server loads each
    start one: only the first loads the model (before, each spawned process
    loaded it, then found the socket taken and exited)."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    held = warm_client.hold_start_lock(vault_root)  # as a server loading its model holds it
    assert not isinstance(held, bool)

    def no_model(setting: str) -> None:
        raise AssertionError("a second server loaded the model")

    try:
        assert warm_client.starting(vault_root)
        with Vault(vault_root) as vault:
            assert warm_client.start(vault) is False  # no second server process
        monkeypatch.setattr(warm.embed, "load_embedder", no_model)
        warm.serve(vault_root)  # returns at once
    finally:
        held.close()
    assert not warm_client.starting(vault_root)

"""A search typed at a terminal leaves the model warm for the next one (docs/cli.md)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memex.agents import warm
from memex.vault import Vault
from tests.hook_helpers import set_config
from tests.watchkit import wait_for

pytestmark = pytest.mark.model


def _search(vault_root: Path, tty: bool) -> None:
    env = {**os.environ, "MEMEX_VAULT": str(vault_root), "MEMEX_WARM": "1"}
    cmd = [sys.executable, "-c", "from memex.cli import run; run()", "search", "staging port"]
    if not tty:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return
    main, child = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, env=env, stdin=child, stdout=child, stderr=child)
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(child)
        os.close(main)


def _gone(path: Path) -> None:
    wait_for(lambda: not path.exists(), 30, "the warm server to exit after warm_seconds idle")


def test_a_search_at_a_terminal_starts_the_warm_server_and_a_script_does_not(
    vault_root: Path, real_embedder: object
) -> None:
    set_config(vault_root, "agents", "warm_seconds = 3")  # exits soon after the test
    with Vault(vault_root) as vault:
        vault.add("The staging database listens on port 5433", scope="user")
    path = warm.socket_path(vault_root)
    assert path is not None

    _search(vault_root, tty=False)  # a script or an agent: nothing left running
    time.sleep(1.0)
    with Vault(vault_root) as vault:
        assert warm.connect(vault) is None

    _search(vault_root, tty=True)  # a person typing
    with Vault(vault_root) as vault:
        wait_for(lambda: warm.connect(vault), 60, "a warm server after a search at a terminal")
    _gone(path)

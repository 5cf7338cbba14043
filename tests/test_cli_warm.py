"""A search typed at a terminal leaves the model warm for the next one (docs/cli.md)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
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


def _server_processes(vault_root: Path) -> list[str]:
    """The running warm servers of this vault (``python -m memex.agents.warm_server ROOT``)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # exited meanwhile
        if b"memex.agents.warm_server" in args and any(a.endswith(str(vault_root).encode()) for a in args):
            found.append(cmdline.parent.name)
    return found


def _gone(path: Path) -> None:
    wait_for(lambda: not path.exists(), 30, "the warm server to exit after warm_seconds idle")


def test_a_search_at_a_terminal_starts_the_warm_server_and_a_script_does_not(
    vault_root: Path, real_embedder: object
) -> None:
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("needs /proc to see which processes a command started")
    set_config(vault_root, "agents", "warm_seconds = 3")  # exits soon after the test
    with Vault(vault_root) as vault:
        vault.add("The staging database listens on port 5433", scope="user")
    path = warm.socket_path(vault_root)
    assert path is not None

    _search(vault_root, tty=False)  # a script or an agent: nothing left running
    # The server is started (Popen) before the command exits: had it been, its
    # process would be there now, whether or not it answers yet.
    assert _server_processes(vault_root) == []
    with Vault(vault_root) as vault:
        assert warm.connect(vault) is None

    _search(vault_root, tty=True)  # a person typing
    assert _server_processes(vault_root) != []  # what the check above would have seen
    with Vault(vault_root) as vault:
        wait_for(lambda: warm.connect(vault), 60, "a warm server after a search at a terminal")
    _gone(path)

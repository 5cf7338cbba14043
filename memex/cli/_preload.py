"""A head start for the embedding model of a one-shot ``memex search`` / ``add``.

Such a command needs the model (about 0.2 s, most of it onnxruntime building
its session, which runs outside the GIL) and the rest of memex (about 0.15 s
of imports, which hold it). Loading the model on a thread started before
those imports overlaps the two (start-up: docs/benchmarks.md). It is only a head
start: the vault later asks :func:`memex.embedding.embed.load_embedder` for the same
setting, which returns the model or waits for this thread (its lock). When
the vault's warm model server runs (memex/agents/warm.py) nothing is loaded,
as the command will embed through the server. Any failure here is ignored:
the command then loads the model itself, or says why it cannot.

The thread is not a daemon: a command that fails early still lets it end
before the interpreter tears down (a session half built at exit is not
something to gamble on). ``MEMEX_PRELOAD=0`` turns it off.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from memex.layout import is_vault

COMMANDS = frozenset({"search", "add"})


def start(vault_path: str | None) -> threading.Thread | None:
    if os.environ.get("MEMEX_PRELOAD") == "0":
        return None
    try:
        root = _guess_root(vault_path)
    except OSError:  # e.g. the current folder was deleted; the command will say so
        return None
    if root is None:
        return None
    thread = threading.Thread(target=_load, args=(root,), name="memex-model-preload")
    thread.start()
    return thread


def _guess_root(vault_path: str | None) -> Path | None:
    """The vault the command will open, found as memex.vault.find_vault_root
    finds it (without importing memex.vault, which is what we overlap)."""
    given = vault_path or os.environ.get("MEMEX_VAULT")
    if given:
        root = Path(given).expanduser()
        return root if is_vault(root) else None
    here = Path.cwd()
    for folder in (here, *here.parents):
        if is_vault(folder):
            return folder
    return None


def _load(root: Path) -> None:
    try:
        from memex.config import load_config

        setting = load_config(root).embedding_model
        if setting == "none":
            return
        from memex.agents import warm

        sock = warm.socket_path(root)
        if sock is not None and _answers(sock):
            return
        from memex.embedding import embed

        embed.load_embedder(setting)
    except Exception:  # a head start only; the command reports real problems
        return


def _answers(sock: Path) -> bool:
    """Whether a server listens there (a killed one leaves its socket file behind)."""
    import socket

    if not sock.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.05)
        try:
            probe.connect(str(sock))
        except OSError:
            return False
    return True

"""A head start for the embedding model of a one-shot ``memex search`` / ``add``.

Such a command needs the model (about 0.2 s, most of it onnxruntime building
its session, which runs outside the GIL) and the rest of memex (about 0.15 s
of imports, which hold it). Loading the model on a thread started before
those imports overlaps the two (start-up: docs/benchmarks.md). The command
waits (at most :data:`READY_WAIT`) until that thread has imported numpy,
onnxruntime and the tokenizer library: imports on two threads share one GIL, so without the wait the
session would start building only about halfway through the command's
imports, and the command would then wait for it; with it, the session
builds (and runs once, memex/embedding/onnx.py) beside those imports. The
wait costs the command nothing it would not spend anyway: it imports numpy
itself. It is only a head start: the vault later asks
:func:`memex.embedding.embed.load_embedder` for the same setting, which
returns the model or waits for this thread (its lock). When
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
# Seconds the command waits for the head start's imports (numpy and
# onnxruntime) before importing the rest of memex: a bound for a stuck
# thread, far above the 0.1-0.5 s those imports take.
READY_WAIT = 5.0


def start(vault_path: str | None) -> threading.Thread | None:
    # numpy is about to load OpenBLAS, which starts a thread per core and
    # gives each its buffers: 10-15 ms of CPU of numpy's import here, for a
    # search or an add whose arrays are too small for BLAS to use them (the
    # model runs on onnxruntime's own threads). Read once, when the library
    # loads; a value the user set stays.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if os.environ.get("MEMEX_PRELOAD") == "0":
        return None
    try:
        root = _guess_root(vault_path)
    except OSError:  # e.g. the current folder was deleted; the command will say so
        return None
    if root is None:
        return None
    ready = threading.Event()
    thread = threading.Thread(target=_load, args=(root, ready), name="memex-model-preload")
    thread.start()
    # The head start's imports go first (see the module's docstring).
    ready.wait(READY_WAIT)
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


def _load(root: Path, ready: threading.Event) -> None:
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

        embed.prepare(setting)
        ready.set()
        embed.load_embedder(setting)
    except Exception:  # a head start only; the command reports real problems
        return
    finally:
        ready.set()


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

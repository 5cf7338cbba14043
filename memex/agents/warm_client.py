"""Talking to a vault's warm server without loading what it holds.

The warm server (:mod:`memex.agents.warm`) keeps the embedding model and
the rest of memex loaded for a vault. Its socket's place and its one-line
JSON protocol live here, importing only the standard library, so that a
hook process that finds the server pays for neither numpy, SQLite nor the
model: it sends the event and prints the answer
(:mod:`memex.agents.hook_client`).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memex.config import Config
    from memex.vault import Vault

CONNECT_TIMEOUT = 0.05  # a missing or stuck server must cost the hook nothing noticeable
REPLY_TIMEOUT = 5.0
# A hook the server runs may search and write a memory (a keyword capture
# waits for the write lock): longer than an embedding, well inside the
# agents' hook timeouts (memex/agents/install.py).
HOOK_REPLY_TIMEOUT = 12.0
OFF_ENV = "MEMEX_WARM"  # "0": no warm server for this process tree (docs/agents.md)
DEFAULT_IDLE = 1200


def turned_off() -> bool:
    return os.environ.get(OFF_ENV) == "0"


def socket_path(root: Path) -> Path | None:
    """Where the warm server of the vault at ``root`` listens (None: nowhere safe).

    The folder is per user (mode 0700) under ``$XDG_RUNTIME_DIR`` or the
    temp folder; the name is a hash of the vault path (socket paths are
    limited to about 100 bytes).
    """
    if not hasattr(socket, "AF_UNIX"):
        return None
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or _temp_folder())
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = base / f"memex-{uid}"
    try:
        info = folder.stat()
    except FileNotFoundError:
        pass
    else:
        # In a shared temp folder someone else could have made this folder
        # first and serve poisoned vectors: use it only if it is ours alone.
        if hasattr(os, "getuid") and (info.st_uid != uid or info.st_mode & 0o077):
            return None
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:20]
    return folder / f"{digest}.sock"


def _temp_folder() -> str:
    """The temp folder (:func:`tempfile.gettempdir`'s first choice on POSIX,
    without importing tempfile, which costs a hook more than the rest of its
    start-up here)."""
    if os.name == "posix":
        for name in ("TMPDIR", "TEMP", "TMP"):
            value = os.environ.get(name)
            if value and os.path.isdir(value):
                return value
        return "/tmp"
    import tempfile

    return tempfile.gettempdir()


class NotSent(OSError):
    """The server could not be reached: nothing was asked, so asking elsewhere is safe."""


def ask(path: Path, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One request, one answer. :class:`NotSent` when no server took the request."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(str(path))
        except OSError as exc:
            raise NotSent(str(exc)) from exc
        sock.settimeout(timeout)
        sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def idle_seconds(vault: Vault) -> int:
    """``[agents] warm_seconds``; 0 when ``MEMEX_WARM=0`` (turned off for this process tree)."""
    return configured_idle(vault.config)


def configured_idle(config: Config) -> int:
    """:func:`idle_seconds` of a vault's config, read before the vault is opened."""
    if turned_off():
        return 0
    from memex.config import setting as config_setting

    value: int = config_setting(config.section("agents"), "warm_seconds", DEFAULT_IDLE, "[agents]")
    return value


def serves(path: Path, setting: str) -> bool:
    """Whether a server answers at ``path`` for the embedding model ``setting``."""
    try:
        info = ask(path, {"texts": []}, REPLY_TIMEOUT)
    except (OSError, ValueError):
        return False
    return info.get("setting") == setting and bool(info.get("model_id"))


def _start_lock(root: Path) -> Path | None:
    """The lock a warm server holds from its start (before it loads its model) to its exit."""
    path = socket_path(root)
    return None if path is None else path.with_suffix(".lock")


def hold_start_lock(root: Path) -> IO[bytes] | bool:
    """Take the vault's server lock for this process (keep the handle open
    to hold it); False when another server holds it, True when there is no
    place for it (no server can be told apart then: serve anyway)."""
    from memex.files.locking import try_file_lock

    lock = _start_lock(root)
    if lock is None:
        return True
    lock.parent.mkdir(mode=0o700, exist_ok=True)
    held = try_file_lock(lock)
    return False if held is None else held


def drop_start_lock(root: Path) -> None:
    """Remove the lock file of a server that is exiting (it still holds it)."""
    lock = _start_lock(root)
    if lock is not None:
        lock.unlink(missing_ok=True)


def starting(root: Path) -> bool:
    """Whether a warm server for the vault at ``root`` is loading or serving (it holds the lock)."""
    lock = _start_lock(root)
    if lock is None or not lock.exists():
        return False
    held = hold_start_lock(root)
    if isinstance(held, bool):
        return not held
    held.close()
    return False


def start(vault: Vault) -> bool:
    """Start the warm server for ``vault`` in the background unless it runs,
    is starting (another hook of the session started it, and it is loading
    its model), or is off."""
    path = socket_path(vault.root)
    setting = vault.config.embedding_model
    if path is None or setting == "none" or idle_seconds(vault) <= 0:
        return False
    if path.exists() and serves(path, setting):
        return False
    if starting(vault.root):
        return False
    import subprocess
    import sys

    subprocess.Popen(
        [sys.executable, "-m", "memex.agents.warm_server", str(vault.root)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )
    return True

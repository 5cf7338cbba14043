"""A warm embedding model for hooks: load once per session, not once per prompt.

A hook is a new process per event. Recall needs the query embedded, and
loading the model costs most of a second of CPU (importing fastembed and
onnxruntime, building the session) — more than everything else the hook
does. So SessionStart starts, in the background, a small server that loads
the vault's model once and embeds texts for the hooks over a Unix socket;
a UserPromptSubmit that finds it uses it and never loads the model itself.
The server exits after ``[agents] warm_seconds`` idle (default 1200; 0,
or ``MEMEX_WARM=0`` in the environment, turns it off). A prompt that finds
no server has its vector made by a child process of its hook
(memex/agents/query_child.py), SessionStart answers lexically while the
server it starts loads (memex/agents/hook_run.py, ``answers_lexically``):
the server is never required.

The socket lives in a per-user folder (mode 0700) under ``$XDG_RUNTIME_DIR``
or the temp folder, named by a hash of the vault path (socket paths are
limited to about 100 bytes). Requests and answers are one JSON line each:
``{"texts": [...]}`` -> ``{"model_id", "dim", "setting", "vectors"}``, or
``{"error": ...}``; how each request is bounded, checked and answered, so
that no request ends the server: memex/agents/warm_requests.py. Every answer
also says whose process it is and how long it has been idle (``pid``,
``owner``, ``idle_for``, ``exits_after``), which ``memex status`` lists; a
``{"status": true}`` request asks only that and, unlike any other, does not
count as use, so looking at a server does not keep it alive.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memex.agents import warm_client, warm_requests
from memex.agents.warm_client import (
    DEFAULT_IDLE as DEFAULT_IDLE,
    REPLY_TIMEOUT,
    ask as _ask,
    idle_seconds as idle_seconds,
    socket_path as socket_path,
    start as start,
    turned_off,
)
from memex.embedding import embed

if TYPE_CHECKING:  # imported where used: the CLI's model preload reads socket_path early
    from memex.embedding.embed import Embedder
    from memex.vault import Vault

STOP_POLL = 0.5  # seconds between looks at a stop event


class WarmEmbedder:
    """An :class:`memex.embedding.embed.Embedder` whose model runs in the warm server.

    With ``setting`` (the vault's ``[embedding] model``), a server that
    cannot answer (busy, timed out, gone, an error) is not the caller's
    failure: the model is loaded here and embeds from then on, as if no
    server had been found. Without it, the failure is raised.
    """

    def __init__(self, path: Path, model_id: str, dim: int, setting: str | None = None) -> None:
        self.path = path
        self.model_id = model_id
        self.dim = dim
        self.setting = setting
        self._local: Embedder | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Search questions: the model's query side (see :func:`memex.embedding.embed.embed_queries`)."""
        return self._vectors(texts, query=True)

    def _vectors(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if self._local is None:
            try:
                return self._remote(texts, query)
            except (OSError, ValueError, KeyError):
                if self.setting is None:
                    raise
                self._local = self._load_here()
        return embed.embed_queries(self._local, texts) if query else self._local.embed(texts)

    def _load_here(self) -> Embedder:
        assert self.setting is not None
        model = embed.load_embedder(self.setting)
        if model is None or model.model_id != self.model_id or model.dim != self.dim:
            raise OSError(f"warm model server did not answer, and {self.setting!r} does not load the same model here")
        return model

    def _remote(self, texts: Sequence[str], query: bool) -> np.ndarray:
        parts = [np.zeros((0, self.dim), dtype=np.float32)]
        step = warm_requests.MAX_TEXTS  # what the server takes in one request
        for start in range(0, len(texts), step):
            batch = list(texts[start:start + step])
            answer = _ask(self.path, {"texts": batch, "query": query}, REPLY_TIMEOUT)
            if "error" in answer:
                raise OSError(f"warm model server: {answer['error']}")
            parts.append(np.asarray(answer["vectors"], dtype=np.float32).reshape(len(batch), self.dim))
        return np.concatenate(parts)


def connect(vault: Vault) -> WarmEmbedder | None:
    """The warm server's embedder for this vault's model, or None (no server,
    another model, or ``MEMEX_WARM=0``: then nothing of it is used)."""
    path = socket_path(vault.root)
    if path is None or turned_off() or not path.exists():
        return None
    try:
        info = _ask(path, {"texts": []}, REPLY_TIMEOUT)
    except (OSError, ValueError):
        return None
    if info.get("setting") != vault.config.embedding_model or not info.get("model_id"):
        return None
    return WarmEmbedder(path, str(info["model_id"]), int(info["dim"]), vault.config.embedding_model)


def server_status(root: Path) -> dict[str, Any] | None:
    """The vault's running model server (a warm one, or the one `memex watch`
    holds): its pid, owner, model, seconds idle and idle limit; None if none."""
    path = socket_path(root)
    if path is None or not path.exists():
        return None
    try:
        answer = _ask(path, {"status": True}, 1.0)
    except (OSError, ValueError):
        return None
    if "pid" not in answer:
        return None
    return {k: answer.get(k) for k in ("pid", "owner", "setting", "model_id", "idle_for", "exits_after")}


class HookAnswerer(Protocol):
    """What answers whole hook events in the server (memex/agents/hook_run.py:
    this module cannot import it, as hook processes import this one)."""

    def prepare(self, root: Path, model: embed.Embedder) -> None: ...

    def answer(self, root: Path, model: embed.Embedder, setting: str, request: dict[str, Any],
               quiet: bool) -> tuple[dict[str, Any], Callable[[], None] | None]: ...

    def close(self, root: Path) -> None: ...


def serve(root: Path, hooks: HookAnswerer | None = None) -> None:
    """Run the server until it has been idle for ``warm_seconds``; with
    ``hooks``, it answers hook events too (memex/agents/warm_server.py).

    Returns at once, before loading anything, when another server for the
    vault is starting or running (:func:`memex.agents.warm_client.starting`):
    the events of a session answered while its server loads each start
    one, and only the first loads the model.
    """
    held = warm_client.hold_start_lock(root)
    if held is False:
        return
    try:
        _serve(root, hooks)
    finally:
        if not isinstance(held, bool):
            # Not left behind, one per vault ever served. A server starting
            # meanwhile may lock the removed file: the worst that does is
            # load the model once more, and find the socket taken.
            warm_client.drop_start_lock(root)
            held.close()


def _serve(root: Path, hooks: HookAnswerer | None) -> None:
    from memex.vault import Vault

    with Vault(root) as vault:
        idle = idle_seconds(vault)
        model = embed.load_embedder(vault.config.embedding_model)
        setting = vault.config.embedding_model
    if model is not None and idle > 0:
        # Started by an agent session or a search typed at a terminal, so
        # one-shot commands are to come: the model's optimized graph, saved
        # once, makes those that find no server start faster too
        # (memex/embedding/prebuilt.py). About 1 s of CPU, the first time only.
        save_graph = getattr(model, "save_graph", None)
        if save_graph is not None:
            with contextlib.suppress(Exception):  # an optimization only
                save_graph()
        if hooks is not None:
            with contextlib.suppress(Exception):  # hooks will be sent here: get ready for them
                hooks.prepare(root, model)
        serve_model(root, model, setting, idle=idle, hooks=hooks)


def serve_model(
    root: Path, model: embed.Embedder, setting: str, idle: float | None = None,
    stop: threading.Event | None = None, hooks: HookAnswerer | None = None,
) -> None:
    """Answer embedding requests for ``root`` with ``model``: until idle for
    ``idle`` seconds, or (``memex watch``, which holds the model anyway) until
    ``stop`` is set. Returns at once when another server answers for the vault.
    Hook events are answered with ``hooks``, else declined (the hook then
    answers itself)."""
    path = socket_path(root)
    if path is None:
        return
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        try:
            server.bind(str(path))
        except OSError:
            # Another server got there first, or a dead one left its socket.
            if _alive(path):
                return
            path.unlink(missing_ok=True)
            server.bind(str(path))
        try:
            os.chmod(path, 0o600)
            server.listen(warm_requests.BACKLOG)
            info: dict[str, Any] = {"model_id": model.model_id, "dim": model.dim, "setting": setting,
                                    "pid": os.getpid(), "owner": "watch" if stop is not None else "warm",
                                    "exits_after": None if stop is not None else idle}
            answer_hook = None if hooks is None else (
                lambda request: hooks.answer(root, model, setting, request, True))
            requests = warm_requests.Dispatcher(model, info, answer_hook)
            while stop is None or not stop.is_set():
                # With a stop event, wake up now and then to look at it; else
                # at the end of the idle time left: the time since the last
                # request that was a use (a status look is not one), and
                # never while a request is being answered.
                idle_for = time.monotonic() - requests.last_used
                left = STOP_POLL if stop is not None else None if idle is None else idle - idle_for
                if left is not None and left <= 0:
                    if not requests.busy():
                        return
                    left = STOP_POLL
                server.settimeout(left)
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                requests.handle(conn)
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
            if hooks is not None:
                hooks.close(root)


def _alive(path: Path) -> bool:
    try:
        _ask(path, {"texts": []}, 1.0)
        return True
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    serve(Path(sys.argv[1]))

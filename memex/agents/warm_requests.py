"""The warm model server's requests: each read within bounds, checked, and
answered, whatever a client sends (memex/agents/warm.py runs the socket).

A request is one JSON line, ``{"texts": [str, ...], "query": bool}`` (both
optional; other keys are ignored); the answer is one JSON line, the model's
``{"model_id", "dim", "setting", "vectors"}``, or ``{"error": "..."}`` for a
request memex cannot serve. A hook process sends its whole event instead,
``{"hook": {"agent": str, "event": {...}}}``, and gets the hook's answer
(memex/agents/hook_run.py), or ``{"declined": ...}`` from a server that
answers embeddings only. A server too busy to take a request answers
``{"error": ..., "busy": true}``: the client does the work itself. Before this module one request ended the server:
``[1,2]`` (a list has no ``.get``), ``{"texts": 5}`` (not iterable), a text
the tokenizer refuses (a lone surrogate), and a client that sent a line of
gigabytes was read to the end. So:

- every request is checked for its type, its size (:data:`MAX_REQUEST_BYTES`,
  read no further) and its count of texts (:data:`MAX_TEXTS`); a client has
  :data:`READ_SECONDS` to send its whole line, so one that sends a byte at a
  time cannot hold a handler;
- each connection is answered in its own thread, at most
  :data:`MAX_CLIENTS` at once (one more is told the server is busy, so a
  hook falls back to loading the model instead of waiting), and the model
  runs one request at a time;
- nothing a client does raises out of :meth:`Dispatcher.handle`: the accept
  loop, and with it the server (or ``memex watch``'s thread), goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from memex.embedding.embed import Embedder

MAX_REQUEST_BYTES = 64 << 20  # one request line: a whole memory (1 MiB by default) and its chunks fit many times
MAX_TEXTS = 4096  # texts in one request; the client splits larger batches
MAX_CLIENTS = 8  # connections answered at once
# Connections waiting to be accepted: past it a client's connect fails at
# once (EAGAIN) and its hook loads the model itself. Accepting only hands a
# connection to a thread, so the queue drains fast; 8 was too few for a
# burst of hooks and commands.
BACKLOG = 64
READ_SECONDS = 10.0  # to receive one whole request
SEND_SECONDS = 30.0  # to deliver one answer to a client that reads slowly

log = logging.getLogger("memex.warm")


class Model(Protocol):
    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class HookAnswerer(Protocol):
    """What answers whole hook events in the server (memex/agents/hook_run.py:
    the warm modules cannot import it, as hook processes import them)."""

    def prepare(self, root: Path, model: Embedder) -> None: ...

    def answer(self, root: Path, model: Embedder, setting: str, request: dict[str, Any],
               quiet: bool) -> dict[str, Any]: ...

    def close(self, root: Path) -> None: ...


class BadRequest(ValueError):
    """A request the server answers with ``{"error": ...}``."""


def read_line(conn: socket.socket) -> bytes | None:
    """One request line, at most :data:`MAX_REQUEST_BYTES`, within
    :data:`READ_SECONDS`; None when the client closed before a whole line."""
    limit, seconds = MAX_REQUEST_BYTES, READ_SECONDS
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BadRequest(f"request not received within {seconds:.0f}s")
        conn.settimeout(left)
        try:
            chunk = conn.recv(min(1 << 16, limit + 1 - size))
        except TimeoutError:
            raise BadRequest(f"request not received within {seconds:.0f}s") from None
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            return b"".join(chunks).split(b"\n", 1)[0]
        if size > limit:
            raise BadRequest(f"request larger than {limit} bytes")


def load(line: bytes) -> dict[str, Any]:
    """The request line as a JSON object; BadRequest otherwise."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadRequest(f"request is not a JSON line ({type(exc).__name__})") from None
    if not isinstance(request, dict):
        raise BadRequest(f"request must be a JSON object, got {type(request).__name__}")
    return request


def hook_event(request: dict[str, Any]) -> dict[str, Any] | None:
    """A hook process's ``{"agent", "event"}``, None when the request is not
    one; BadRequest when it is one of the wrong shape."""
    if "hook" not in request:
        return None
    hook = request["hook"]
    if not isinstance(hook, dict) or not isinstance(hook.get("agent"), str) or not isinstance(hook.get("event"), dict):
        raise BadRequest('hook must be {"agent": string, "event": object}')
    return hook


def parse(line: bytes) -> tuple[list[str], bool]:
    """The texts to embed and whether they are search queries; BadRequest otherwise."""
    return texts_of(load(line))


def texts_of(request: dict[str, Any]) -> tuple[list[str], bool]:
    """The texts of an embedding request and whether they are search queries."""
    texts = request.get("texts", [])
    query = request.get("query", False)
    if texts is None:
        texts = []
    if not isinstance(texts, list):
        raise BadRequest(f"texts must be a list of strings, got {type(texts).__name__}")
    if len(texts) > MAX_TEXTS:
        raise BadRequest(f"at most {MAX_TEXTS} texts per request, got {len(texts)}")
    for n, text in enumerate(texts):
        if not isinstance(text, str):
            raise BadRequest(f"texts[{n}] must be a string, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the tokenizer raises on it
            raise BadRequest(f"texts[{n}] is not valid Unicode text") from None
    if query is not None and not isinstance(query, bool):
        raise BadRequest(f"query must be true or false, got {type(query).__name__}")
    return texts, bool(query)


def _send(conn: socket.socket, answer: dict[str, Any]) -> None:
    conn.settimeout(SEND_SECONDS)
    conn.sendall(json.dumps(answer).encode("utf-8") + b"\n")


class Dispatcher:
    """Answers the connections one server accepts (see the module doc)."""

    def __init__(
        self, model: Model, info: dict[str, Any], root: Path | None = None, hooks: HookAnswerer | None = None
    ) -> None:
        self.model = model
        self.info = info
        self.root = root
        self.hooks = hooks
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        # One hook event at a time uses the vault the hooks hold open (an
        # apsw connection is not shared across threads at once), and one
        # embedding request at a time the model. Two locks: a hook waits for
        # the vault's write lock (up to 20 s) while capturing, and an
        # embedding request behind it timed out and lost `memex add`s and
        # captures under load (tests/test_no_lost_writes.py). The model's
        # runs are serialised by the model itself (its own lock), so a
        # hook's embedding and a request's never run the session at once.
        self._vault_lock = threading.RLock()
        self._model_lock = threading.Lock()

    def handle(self, conn: socket.socket) -> None:
        """Answer ``conn`` in a thread of its own and close it; never raises."""
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError), conn:
                conn.setblocking(False)  # a busy server does not wait on anyone
                conn.send(json.dumps({"error": "busy: too many requests at once", "busy": True}).encode("utf-8") + b"\n")
            return
        try:
            threading.Thread(target=self._serve, args=(conn,), name="memex-warm-request", daemon=True).start()
        except RuntimeError:  # no thread to be had: the client gets nothing, the server goes on
            self._slots.release()
            conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                self.answer(conn)
        except Exception:  # the last guard: a request never ends the server
            log.exception("warm model server: a request failed")
        finally:
            self._slots.release()

    def answer(self, conn: socket.socket) -> None:
        """Read, check and answer one request on ``conn``."""
        try:
            line = read_line(conn)
            if line is None:
                return  # the client went away
            request = load(line)
            hook = hook_event(request)
            if hook is None:
                texts, query = texts_of(request)
        except BadRequest as exc:
            with contextlib.suppress(OSError):
                _send(conn, {"error": str(exc)})
            return
        except OSError:
            return
        if hook is not None:
            with contextlib.suppress(OSError):
                _send(conn, self._hook_answer(hook))
            return
        try:
            vectors = self._vectors(texts, query) if texts else []
        except Exception as exc:  # the model refused something the checks let through
            log.warning("warm model server: the model failed: %s", exc)
            with contextlib.suppress(OSError):
                _send(conn, {"error": f"the model failed ({type(exc).__name__})"})
            return
        with contextlib.suppress(OSError):
            _send(conn, {**self.info, "vectors": vectors})

    def _hook_answer(self, hook: dict[str, Any]) -> dict[str, Any]:
        if self.hooks is None or self.root is None:
            return {"declined": "this server answers embeddings only"}
        with self._vault_lock:
            return self.hooks.answer(self.root, self.model, str(self.info["setting"]), hook, True)

    def _vectors(self, texts: list[str], query: bool) -> list[list[float]]:
        from memex.embedding import embed

        with self._model_lock:
            found = embed.embed_queries(self.model, texts) if query else self.model.embed(texts)
        out: list[list[float]] = np.asarray(found, dtype=np.float32).tolist()
        return out

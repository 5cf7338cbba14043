"""The warm model server's requests: each read within bounds, checked, and
answered, whatever a client sends (memex/agents/warm.py runs the socket).

A request is one JSON line, ``{"texts": [str, ...], "query": bool}`` (both
optional; other keys are ignored); the answer is one JSON line, the model's
``{"model_id", "dim", "setting", "vectors"}``, or ``{"error": "..."}`` for a
request memex cannot serve. Before this module one request ended the server:
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
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

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


def parse(line: bytes) -> tuple[list[str], bool]:
    """The texts to embed and whether they are search queries; BadRequest otherwise."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadRequest(f"request is not a JSON line ({type(exc).__name__})") from None
    if not isinstance(request, dict):
        raise BadRequest(f"request must be a JSON object, got {type(request).__name__}")
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


def hook_event(line: bytes) -> dict[str, Any] | None:
    """The ``"hook"`` object of a hook process's request (``{"hook": {"agent",
    "event"}}``, memex/agents/hook_client.py), else None: an embedding request."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(request, dict) or "hook" not in request:
        return None
    event = request["hook"]
    return event if isinstance(event, dict) else {}


def _status_look(line: bytes) -> bool:
    """``{"status": true}``: `memex status` asking who serves and how long it
    has been idle, which must not keep the server alive."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(request, dict) and request.get("status") is True


def _send(conn: socket.socket, answer: dict[str, Any]) -> None:
    conn.settimeout(SEND_SECONDS)
    conn.sendall(json.dumps(answer).encode("utf-8") + b"\n")


class Dispatcher:
    """Answers the connections one server accepts (see the module doc)."""

    def __init__(self, model: Model, info: dict[str, Any],
                 hooks: Callable[[dict[str, Any]], tuple[dict[str, Any], Callable[[], None] | None]] | None = None,
                 ) -> None:
        self.model = model
        self.info = info
        self.hooks = hooks
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        # When a request that was a use last came or ended (a status look,
        # ``{"status": true}``, is not one): the server's idle time counts from it.
        self.last_used = time.monotonic()
        self._answering = 0
        self._count = threading.Lock()
        self._model_lock = threading.Lock()
        # Hook events share the server's one open vault (one SQLite
        # connection): one at a time, beside the embedding requests.
        self._hook_lock = threading.Lock()

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

    def busy(self) -> bool:
        """Whether a request is being answered (the server does not stop meanwhile)."""
        return self._answering > 0

    def _serve(self, conn: socket.socket) -> None:
        with self._count:
            self._answering += 1
        used = True
        try:
            with conn:
                used = self.answer(conn) is not False
        except Exception:  # the last guard: a request never ends the server
            log.exception("warm model server: a request failed")
        finally:
            if used:
                self.last_used = time.monotonic()
            with self._count:
                self._answering -= 1
            self._slots.release()

    def answer(self, conn: socket.socket) -> bool | None:
        """Read, check and answer one request on ``conn``; False for a status
        look, which does not count as use of the server."""
        try:
            line = read_line(conn)
            if line is None:
                return None  # the client went away
            if _status_look(line):  # a look, not a use: the idle time goes on
                with contextlib.suppress(OSError):
                    _send(conn, {**self.info, "idle_for": round(time.monotonic() - self.last_used, 1)})
                return False
            self.last_used = time.monotonic()
            event = hook_event(line)
            if event is not None:
                self._hook(conn, event)
                return None
            texts, query = parse(line)
        except BadRequest as exc:
            with contextlib.suppress(OSError):
                _send(conn, {"error": str(exc)})
            return None
        except OSError:
            return None
        try:
            vectors = self._vectors(texts, query) if texts else []
        except Exception as exc:  # the model refused something the checks let through
            log.warning("warm model server: the model failed: %s", exc)
            with contextlib.suppress(OSError):
                _send(conn, {"error": f"the model failed ({type(exc).__name__})"})
            return None
        with contextlib.suppress(OSError):
            _send(conn, {**self.info, "vectors": vectors})
        return None

    def _hook(self, conn: socket.socket, event: dict[str, Any]) -> None:
        """A hook process's event, answered whole (memex/agents/hook_run.py),
        then its after-the-answer work done; or declined: the hook then
        answers it itself."""
        if self.hooks is None:
            with contextlib.suppress(OSError):
                _send(conn, {"declined": "this server answers embedding requests only"})
            return
        with self._hook_lock:
            reply, then = self.hooks(event)
            with contextlib.suppress(OSError):
                _send(conn, reply)
                conn.shutdown(socket.SHUT_RDWR)  # the hook has its answer: it need not wait for the work
            if then is not None:
                then()

    def _vectors(self, texts: list[str], query: bool) -> list[list[float]]:
        from memex.embedding import embed

        with self._model_lock:
            found = embed.embed_queries(self.model, texts) if query else self.model.embed(texts)
        out: list[list[float]] = np.asarray(found, dtype=np.float32).tolist()
        return out

"""The warm model server answers every request, whatever a client sends:
garbage, wrong types, oversize lines, too many texts, slow or concurrent
clients get an answer (an error where due) and the server goes on answering
good requests, standalone or inside ``memex watch`` (memex/agents/warm_requests.py)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memex.agents import warm
from tests.fakes import HashEmbedder
from tests.watchkit import wait_for


class TokenizerLike(HashEmbedder):
    """The fake model, refusing what the real tokenizer refuses (a lone
    surrogate: TypeError) and failing on one chosen text."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        for text in texts:
            if text == "make the model fail":
                raise RuntimeError("onnxruntime: out of memory")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise TypeError("TextEncodeInput must be Union[TextInputSequence, ...]") from None
        return super().embed(texts)


MODEL = TokenizerLike()


def _raw(path: Path, payload: bytes, timeout: float = 30.0) -> dict[str, Any] | None:
    """Send ``payload`` as is; the answer line, or None when the server closed without one."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        try:
            sock.sendall(payload)
        except BrokenPipeError:  # the server stopped reading (an oversize line): its answer may be waiting
            pass
        data = b""
        while not data.endswith(b"\n"):
            try:
                chunk = sock.recv(1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    return json.loads(data) if data else None


def _good(path: Path) -> None:
    """A good request is answered with the model's vectors."""
    texts = ["blue-green deploys on Fridays", "记住：周五不要部署"]
    answer = _raw(path, json.dumps({"texts": texts}).encode() + b"\n")
    assert answer is not None and "error" not in answer, answer
    assert np.allclose(np.asarray(answer["vectors"], dtype=np.float32), MODEL.embed(texts))


def _answers(path: Path) -> bool:
    try:
        return _raw(path, b'{"texts": []}\n') is not None
    except OSError:
        return False


@pytest.fixture(params=["standalone", "watch"])
def server(request: pytest.FixtureRequest, vault_root: Path) -> Iterator[Path]:
    """A running server: as ``python -m memex.agents.warm`` runs it (until idle),
    or as ``memex watch`` runs it in a thread (until its stop event)."""
    path = warm.socket_path(vault_root)
    assert path is not None
    stop = threading.Event()
    kwargs: dict[str, Any] = {"stop": stop} if request.param == "watch" else {"idle": 30}
    thread = threading.Thread(target=warm.serve_model, args=(vault_root, MODEL, "auto"), kwargs=kwargs, daemon=True)
    thread.start()
    wait_for(lambda: _answers(path), 30, "the warm server to answer")
    try:
        yield path
        assert thread.is_alive() and path.exists(), "the server ended"
    finally:
        stop.set()  # the standalone one ends when idle (a daemon thread meanwhile)
        if request.param == "watch":
            thread.join(10)
        path.unlink(missing_ok=True)


BAD = [
    (b"[1,2]\n", "must be a JSON object"),
    (b'{"texts": 5}\n', "texts must be a list"),
    (b'"texts"\n', "must be a JSON object"),
    (b'{"texts": [1, 2]}\n', "texts[0] must be a string"),
    (b'{"texts": ["ok", null]}\n', "texts[1] must be a string"),
    (b'{"texts": ["caf\\udce9"]}\n', "texts[0] is not valid Unicode text"),
    (b'{"texts": ["a"], "query": "yes"}\n', "query must be true or false"),
    (b'{"texts": {"a": 1}}\n', "texts must be a list"),
    (b"not json at all\n", "not a JSON line"),
    (b"\xff\xfe\xfd\n", "not a JSON line"),
    (b"[" * 100_000 + b"\n", "not a JSON line"),
    (b'{"texts": ["make the model fail"]}\n', "the model failed"),
]


@pytest.mark.parametrize("payload, error", BAD, ids=[e for _, e in BAD])
def test_a_bad_request_gets_an_error_and_the_server_goes_on(server: Path, payload: bytes, error: str) -> None:
    answer = _raw(server, payload)
    assert answer is not None and error in answer["error"], answer
    _good(server)


def test_oversize_requests_and_too_many_texts_are_refused(server: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memex.agents import warm_requests

    monkeypatch.setattr(warm_requests, "MAX_REQUEST_BYTES", 1 << 20)
    monkeypatch.setattr(warm_requests, "MAX_TEXTS", 100)
    answer = _raw(server, b'{"texts": ["' + b"x" * (4 << 20))  # no end of line: read no further than the bound
    assert answer is not None and "larger than 1048576 bytes" in answer["error"]
    answer = _raw(server, json.dumps({"texts": ["a"] * 101}).encode() + b"\n")
    assert answer is not None and "at most 100 texts" in answer["error"]
    _good(server)
    # The client splits a larger batch into requests the server takes.
    remote = warm.WarmEmbedder(server, MODEL.model_id, MODEL.dim)
    texts = [f"memory number {n}" for n in range(250)]
    assert np.allclose(remote.embed(texts), MODEL.embed(texts))


def test_slow_and_concurrent_clients_do_not_stop_good_ones(server: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memex.agents import warm_requests

    monkeypatch.setattr(warm_requests, "READ_SECONDS", 2.0)
    # Clients that connect and send nothing, or half a line: each holds one
    # handler until READ_SECONDS, never the server.
    idle = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
    for n, sock in enumerate(idle):
        sock.connect(str(server))
        if n:
            sock.sendall(b'{"texts": ["half')
    try:
        _good(server)
        answers: list[dict[str, Any] | None] = []
        lock = threading.Lock()

        def ask(n: int) -> None:
            answer = _raw(server, json.dumps({"texts": [f"question {n}"], "query": True}).encode() + b"\n")
            with lock:
                answers.append(answer)

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(answers) == 40 and all(a is not None for a in answers)
        # Each is answered: vectors, or (past MAX_CLIENTS at once) "busy", at once, never a hang.
        assert all("vectors" in a or "busy" in a["error"] for a in answers if a is not None)
        assert sum("vectors" in a for a in answers if a is not None) >= 8
        # The idle clients are told their time is up.
        idle[0].settimeout(30)
        assert b"not received within" in idle[0].recv(1 << 16)
    finally:
        for sock in idle:
            sock.close()
    _good(server)


def test_a_hook_event_to_a_server_without_hooks_is_declined(server: Path) -> None:
    """A server that answers embeddings only (``memex watch``'s) declines a
    hook process's event, so the hook answers it on its own."""
    answer = _raw(server, b'{"hook": {"agent": "claude-code", "event": {"hook_event_name": "UserPromptSubmit"}}}\n')
    assert answer is not None and "declined" in answer and "error" not in answer, answer
    _good(server)


class BlockingHooks:
    """Answers hook events only when released: a capture waiting for the
    vault's write lock, say."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def prepare(self, root: Path, model: Any) -> None:
        pass

    def answer(self, root: Path, model: Any, setting: str, request: dict[str, Any],
               quiet: bool) -> tuple[dict[str, Any], None]:
        self.entered.set()
        self.release.wait(60)
        return {"answer": {}}, None

    def close(self, root: Path) -> None:
        pass


def test_an_embedding_is_answered_while_a_hook_waits_in_the_server(vault_root: Path) -> None:
    """A hook the server runs may wait up to 20 s for the write lock; an
    embedding request (a `memex add` elsewhere) must not wait behind it: it
    timed out, and the add failed."""
    path = warm.socket_path(vault_root)
    assert path is not None
    hooks = BlockingHooks()
    stop = threading.Event()
    thread = threading.Thread(target=warm.serve_model, args=(vault_root, MODEL, "auto"),
                              kwargs={"stop": stop, "hooks": hooks}, daemon=True)
    thread.start()
    wait_for(lambda: _answers(path), 30, "the warm server to answer")
    hook = threading.Thread(target=_raw, args=(path, b'{"hook": {"agent": "claude-code", "event": {}}}\n'), daemon=True)
    try:
        hook.start()
        assert hooks.entered.wait(30)
        answer = _raw(path, json.dumps({"texts": ["blue-green deploys"]}).encode() + b"\n", timeout=warm.REPLY_TIMEOUT)
        assert answer is not None and "vectors" in answer, answer
    finally:
        hooks.release.set()
        hook.join(30)
        stop.set()
        thread.join(10)


def test_a_server_that_cannot_answer_is_not_the_callers_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Busy, gone or failing: the embedder loads the model here and goes on."""
    monkeypatch.setattr(warm.embed, "load_embedder", lambda setting: MODEL)
    busy = tmp_path / "busy.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(busy))
        server.listen(4)

        def say_busy() -> None:
            for _ in range(2):
                conn, _ = server.accept()
                with conn:
                    conn.recv(1 << 16)
                    conn.sendall(b'{"error": "busy: too many requests at once", "busy": true}\n')

        answering = threading.Thread(target=say_busy, daemon=True)
        answering.start()
        texts = ["blue-green deploys on Fridays"]
        strict = warm.WarmEmbedder(busy, MODEL.model_id, MODEL.dim)
        with pytest.raises(OSError, match="busy"):
            strict.embed(texts)
        remote = warm.WarmEmbedder(busy, MODEL.model_id, MODEL.dim, setting="auto")
        assert np.allclose(remote.embed(texts), MODEL.embed(texts))
        answering.join(10)
    gone = warm.WarmEmbedder(tmp_path / "gone.sock", MODEL.model_id, MODEL.dim, setting="auto")
    assert np.allclose(gone.embed_query(texts), MODEL.embed(texts))

"""A prompt's query vector made in a child process while the hook loads the rest.

A prompt that no warm server answers (a session's first, before the server
the session started is up, or any prompt with the server turned off) is
answered in the hook's own process. Its hybrid answer needs the prompt
embedded, and loading the model (importing numpy, onnxruntime and
tokenizers, opening the ONNX session) costs about as much CPU as
everything else the hook does. A thread cannot overlap it with the hook's
own imports (both hold the GIL); a process can. So the hook's front door
(memex/agents/hook_client.py), before it imports memex, forks a child that
loads the vault's model, embeds the prompt's recall query
(:func:`memex.text.recall_query`) and writes the vector to a pipe, while
the parent imports memex, opens the index and runs the BM25 side on the
other core. The search then takes the vector from the child
(:class:`ChildEmbedder`): the answer is the hybrid one, with the vector the
model gives in the process (docs/benchmarks.md, "Hooks").

The child pays off only beside the hook: both processes import numpy, so
it costs more CPU in all than loading the model in the hook. With no core
to spare (the load average at or above the number of CPUs, :func:`wanted`)
the hook loads the model itself, as before; the answer is the same.

The child holds none of the agent's pipes (its stdin, stdout and stderr are
/dev/null), so the agent never waits for it; the parent kills it when it
did not use it. Anything other than the prompt's query that the parent
embeds (a memory a prompt asks to store) loads the model in the parent, as
before. This module imports only the standard library: the front door
imports it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from memex.embedding.embed import Embedder

# Seconds the parent waits for the vector: far above the 0.2-0.3 s the child
# takes on a quiet machine, below the agents' hook timeouts (memex/agents/install.py).
WAIT = 8.0
ENV = "MEMEX_QUERY_CHILD"  # "1": always fork the child, "0": never, else by the load (wanted)


class QueryChild:
    """The parent's side: the child's pid and the read end of its pipe."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self._fd = fd
        self._reply: dict[str, Any] | None = None
        self._done = False
        self.why_not = ""  # what went wrong, when the reply is not a vector

    def reply(self, wait: float = WAIT) -> dict[str, Any] | None:
        """The child's answer (read once, at most ``wait`` seconds), or None."""
        if not self._done:
            self._done = True
            self._reply = self._read(wait)
            self.close()
        return self._reply

    def _read(self, wait: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + wait
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                self.why_not = f"no vector within {wait:g} s"
                return None
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                self.why_not = "the child ended without a vector"
                return None
            data += chunk
        try:
            answer = json.loads(data)
        except ValueError:
            self.why_not = "the child's answer is not JSON"
            return None
        if not isinstance(answer, dict) or "vector" not in answer:
            self.why_not = str(answer.get("none", "no vector")) if isinstance(answer, dict) else "no vector"
            return None
        return answer

    def embedder(self, setting: str) -> ChildEmbedder | None:
        """An embedder holding the child's vector of the prompt's query, or
        None (no vector: the child failed, was too slow, or loaded another model)."""
        answer = self.reply()
        if answer is None:
            return None
        if answer.get("setting") != setting:
            self.why_not = "the child loaded another model"
            return None
        return ChildEmbedder(str(answer["model_id"]), int(answer["dim"]), setting,
                             str(answer["query"]), [float(x) for x in answer["vector"]])

    def close(self) -> None:
        """Stop the child if it still runs (its vector is not wanted, or too late)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self.pid:
            try:
                if os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = 0


class ChildEmbedder:
    """An :class:`memex.embedding.embed.Embedder` that has one query's vector
    (the child's); any other text loads the model here, which must be the
    same model."""

    def __init__(self, model_id: str, dim: int, setting: str, query: str, vector: list[float]) -> None:
        self.model_id = model_id
        self.dim = dim
        self.setting = setting
        self.query = query
        self._vector = vector
        self._local: Embedder | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._here().embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        from memex.embedding import embed

        if list(texts) == [self.query]:
            return np.asarray([self._vector], dtype=np.float32)
        return embed.embed_queries(self._here(), texts)

    def _here(self) -> Embedder:
        from memex.embedding import embed

        if self._local is None:
            model = embed.load_embedder(self.setting)
            if model is None or model.model_id != self.model_id or model.dim != self.dim:
                raise OSError(f"{self.setting!r} no longer loads the model that embedded the prompt")
            self._local = model
        return self._local


def wanted() -> bool:
    """Whether to fork the child: ``MEMEX_QUERY_CHILD=1`` always, ``0`` never
    (the hook loads the model itself), else when :func:`spare_core`."""
    choice = os.environ.get(ENV, "").strip()
    if choice in ("0", "1"):
        return choice == "1"
    return spare_core()


def spare_core(load: float | None = None, cpus: int | None = None) -> bool:
    """Whether a core is likely idle for the child: the 1-minute load average
    below the number of CPUs.

    The child costs more CPU in all than loading the model in the hook (numpy
    is imported by both processes, about 0.1-0.15 s more) and gains only by
    running beside the hook. Measured on 2 cores (docs/benchmarks.md):
    at load 2-4 the prompt took 0.39-0.40 s with the child against 0.46 s
    in one process; at load 7, 1.62 s against 1.11 s. The answer is the same
    either way.
    """
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # no load average here: assume a core is free
            return True
    return load < (cpus or os.cpu_count() or 1)


def start(root: Path, prompt: object) -> QueryChild | None:
    """Fork the child that embeds ``prompt``'s recall query for the vault at
    ``root``; None where there is no fork, nothing to embed, or no core to
    spare (:func:`wanted`: the hook then loads the model itself)."""
    if not hasattr(os, "fork") or not isinstance(prompt, str) or not prompt.strip() or not wanted():
        return None
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(write)
        return QueryChild(pid, read)
    code = 0
    try:
        os.close(read)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never hold the agent's pipes: it reads the hook's output to its end
            os.dup2(devnull, fd)
        data = json.dumps(_answer(root, prompt)).encode("utf-8") + b"\n"
        while data:
            data = data[os.write(write, data):]
    except BaseException:  # noqa: BLE001 - the child must always exit, never return into the hook
        code = 1
    finally:
        os._exit(code)


def _answer(root: Path, prompt: str) -> dict[str, Any]:
    """In the child: the vault's model, the query and its vector (or why none)."""
    # numpy is about to start OpenBLAS: one thread, as the hook's other paths
    # (memex/embedding/headstart.py); a query's arrays are far too small for more.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from memex.config import load_config
    from memex.embedding import embed
    from memex.text import recall_query

    setting = load_config(root).embedding_model
    query = recall_query(prompt)
    if not query:
        return {"none": "nothing to embed"}
    model = embed.load_embedder(setting)
    if model is None:
        return {"none": embed.why_no_embedder(setting) or "no model"}
    vector = embed.query_vector(model, query)
    return {"setting": setting, "model_id": model.model_id, "dim": model.dim, "query": query,
            "vector": [float(x) for x in vector]}

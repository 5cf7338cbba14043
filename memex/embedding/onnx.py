"""The bundled model run straight on onnxruntime + tokenizers (no fastembed import).

A one-shot ``memex search`` must embed one query. Through fastembed that
costs an import of fastembed itself (it pulls in PIL, huggingface_hub,
requests, loguru, ...: about 0.3-0.4 s on the reference machine) before
onnxruntime is even reached. The bundled all-MiniLM-L6-v2 needs none of it:
a WordPiece tokenizer (``tokenizers``), one ONNX session (``onnxruntime``,
both already fastembed's own dependencies), mean pooling over the attention
mask and L2 normalization. This module does exactly what fastembed's
``PooledNormalizedEmbedding`` does for that model, with the same tokenizer
settings (right truncation at :data:`memex.embedding.embed.MAX_TOKENS`, padding to the
longest text of a batch, the special tokens of ``special_tokens_map.json``)
and, once a process embeds more than a few texts, the same session options
(see :class:`OnnxModel`), so the vectors agree with fastembed's to float32
rounding (tests/test_embed_onnx.py holds them to 1e-5).

fastembed stays the loader for every other model folder (``[embedding]
model = "/path"``): it knows many architectures and pooling schemes that
this module does not try to reproduce. ``MEMEX_EMBED_BACKEND=fastembed``
sends the bundled model through fastembed as well.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memex.embedding import prebuilt

ENV_BACKEND = "MEMEX_EMBED_BACKEND"


def wanted() -> bool:
    """Whether the bundled model should skip fastembed (the default)."""
    return os.environ.get(ENV_BACKEND, "onnx").strip().lower() != "fastembed"


def load_tokenizer(model_dir: Path, max_tokens: int) -> Any:
    """The model's tokenizer, set up as fastembed sets it up (then truncated to max_tokens)."""
    from tokenizers import AddedToken, Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    config = _json(model_dir / "tokenizer_config.json")
    model_config = _json(model_dir / "config.json")
    tokenizer.enable_truncation(max_length=max_tokens, direction=config.get("truncation_side") or "right")
    for token in _special_tokens(_json(model_dir / "special_tokens_map.json")):
        tokenizer.add_special_tokens([token if isinstance(token, str) else AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or config.get("pad_token")
    if pad_token is None:
        raise ValueError(f"no pad token in {model_dir}")
    pad_id = padding.get("pad_id", model_config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    # Padding to the longest text of the batch (tokenizer.json asks for a
    # fixed 128, which fastembed overrides the same way).
    tokenizer.enable_padding(
        direction=config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id, pad_type_id=padding.get("pad_type_id", 0), pad_token=pad_token,
        pad_to_multiple_of=padding.get("pad_to_multiple_of"), length=None,
    )
    return tokenizer


def _json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _special_tokens(tokens_map: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for value in tokens_map.values():
        found.extend(value if isinstance(value, list) else [value])
    return found


# Texts embedded on the quick session before the optimized one is built.
QUICK_TEXTS = 64


class _QuickStart(threading.Thread):
    """Builds the quick session, then runs it once on one token, on its own thread.

    Both run in onnxruntime's C++ outside the GIL, so they overlap what the
    process does meanwhile: reading the tokenizer (about 20 ms of CPU) and,
    in a one-shot command, importing the rest of memex and opening the index.
    The first run of a session costs several times a later one (about 50 ms
    of CPU against 10 for the bundled model: onnxruntime allocates and fills
    the buffers of the int8 weights' float copies). Paid here, the command's
    own text, a query, runs at the later speed. A run's result does not
    depend on an earlier run (tests/test_embed_onnx.py). The thread is not a
    daemon: a session half built at interpreter exit is not something to
    gamble on.
    """

    def __init__(self, build: Callable[[], Any]) -> None:
        super().__init__(name="memex-onnx-start")
        self._build = build
        self._built = threading.Event()
        self._session: Any = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            self._session = self._build()
        except BaseException as exc:  # handed to the caller by wait_built
            self._error = exc
        finally:
            self._built.set()
        if self._session is not None:
            try:
                self._session.run(None, first_run_feed(self._session))
            except Exception:  # a model that cannot run says so on its first real run
                pass

    def wait_built(self) -> Any:
        """The session, once built (raises what building it raised)."""
        self._built.wait()
        if self._error is not None:
            raise self._error
        return self._session


def _load(ort: Any, path: Path, options: Any) -> Any:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=options)


def first_run_feed(session: Any) -> dict[str, np.ndarray]:
    """One text of one token (id 0) for each input the graph takes."""
    one = np.ones((1, 1), dtype=np.int64)
    values = {"input_ids": one * 0, "attention_mask": one, "token_type_ids": one * 0}
    return {node.name: values.get(node.name, one * 0) for node in session.get_inputs()}


class OnnxModel:
    """One ONNX session and its tokenizer: texts in, normalized mean-pooled vectors out.

    Three ways to a session, cheapest first (measured in docs/benchmarks.md):

    - the optimized graph that an earlier process saved in the user's cache
      (memex/embedding/prebuilt.py): about as cheap to load as an
      unoptimized session, and its runs are the optimized session's;
    - without it, an unoptimized session (about 30 ms of CPU to build; each
      run repeats the int8 weights' dequantization) for the first
      :data:`QUICK_TEXTS` texts: a one-shot ``memex search`` embeds one;
    - a process that embeds more (reindex, the watcher, the warm server)
      then builds the optimized one (constant folding of that
      dequantization, operator fusion: about 0.8 s of CPU) and saves its
      graph for the next processes.

    ``optimized`` says the process has switched to its session for long
    runs, whose pool threads keep onnxruntime's default busy-wait. The
    unoptimized session agrees with the optimized one to float32 rounding
    after pooling and normalization (max difference 1.7e-7 over 60 queries
    and memories; the saved graph's vectors equal the optimized session's
    bit for bit; tests/test_embed_onnx.py holds all of them to fastembed's
    vectors within 1e-5).
    """

    def __init__(self, model_dir: Path, max_tokens: int, threads: int) -> None:
        self._path = model_dir / "model.onnx"
        self._threads = threads
        self._embedded = 0
        self.optimized = False
        self.from_saved_graph = False
        # The session is built (and run once) on its own thread while this
        # one reads the tokenizer: see _QuickStart.
        self._start: _QuickStart | None = _QuickStart(lambda: self._session(optimized=False))
        self._start.start()
        try:
            self.tokenizer = load_tokenizer(model_dir, max_tokens)
        finally:
            self.session = self._start.wait_built()
        self._inputs = {node.name for node in self.session.get_inputs()}
        # The vector size, read from the graph's output shape when it is
        # fixed there (it is for the bundled model): no model run needed to
        # learn it. None: the caller embeds a text to find out.
        size = self.session.get_outputs()[0].shape[-1]
        self.dim: int | None = size if isinstance(size, int) and size > 0 else None

    def _options(self, optimized: bool) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = self._threads
        if not optimized:
            # onnxruntime's pool threads busy-wait for work between runs by
            # default: for the few texts of a one-shot command that is 60-70 ms
            # of CPU burnt on the other core (building the session and two
            # runs, measured in docs/benchmarks.md) and no faster. The
            # optimized session, for long runs of batches, keeps the default.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return options

    def _session(self, optimized: bool) -> Any:
        import onnxruntime as ort

        saved = prebuilt.find(self._path, ort.__version__)
        if saved is not None:
            try:
                # Optimized when it was saved: loaded as it is (DISABLE_ALL).
                session = _load(ort, saved, self._options(optimized))
            except Exception:  # damaged, or written by something else: built again below
                prebuilt.discard(saved)
            else:
                self.from_saved_graph = True
                return session
        self.from_saved_graph = False
        if optimized:
            return prebuilt.build(ort, self._path, self._options(optimized))
        return _load(ort, self._path, self._options(optimized))

    def save_graph(self) -> None:
        """Build the optimized session now and save its graph, unless a saved
        one is in use; the session keeps its busy-wait setting.

        For a long-lived process that may embed only a few texts (the warm
        model server): later one-shot commands start from the saved graph.
        """
        import onnxruntime as ort

        if self._start is not None:
            self._start.join()
            self._start = None
        if self.from_saved_graph or prebuilt.find(self._path, ort.__version__) is not None:
            return
        self.session = prebuilt.build(ort, self._path, self._options(self.optimized))

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._start is not None:  # its first run still under way: one run at a time
            self._start.join()
            self._start = None
        self._embedded += len(texts)
        if not self.optimized and self._embedded > QUICK_TEXTS:
            self.session = self._session(optimized=True)
            self.optimized = True
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed: dict[str, np.ndarray] = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self.session.run(None, feed)[0])
        # Mean over the real tokens, summed in float64, then L2-normalized
        # before the cast back (fastembed's order of operations).
        summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=hidden.dtype)

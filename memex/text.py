"""Text handling shared by indexing, search, dedup and consolidation.

- :func:`normalize` is the one normalization used before hashing a body.
- :func:`tokens` splits English into lower-case words and Chinese (and other
  CJK scripts) into overlapping character bigrams, the usual trick that makes
  unsegmented text searchable without a dictionary.
- :func:`content_tokens` drops stopwords (English, Chinese, and memex's own
  category words) for similarity measures.
- :func:`chunks` cuts long bodies into overlapping pieces for chunk vectors.
- :func:`has_cjk` / :func:`has_han` are the one rule for "is this Chinese,
  Japanese or Korean", in its two senses (below), and :func:`stem` the one
  English stemmer that search and dedup share.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

_WS = re.compile(r"\s+")
# A provenance prefix some capture hooks put in front of a body:
# "[hm session:abc src:keyword event:UserPromptSubmit] actual text".
_PROVENANCE_PREFIX = re.compile(r"^\s*\[hm(?:\s+[a-z_]+:[^\s\]]*)*\s*\]\s*", re.IGNORECASE)
# Blocks memex itself injects into prompts; they must never be stored again.
_INJECTED_BLOCK = re.compile(
    r"<relevant-memories\b[^>]*>.*?</relevant-memories\s*>", re.IGNORECASE | re.DOTALL
)

# Two senses of "CJK", one spelling each. Han: the Chinese characters
# (ideographs: the unified block, extension A, the compatibility block and
# extensions B-F), where one character is about one word, so a character
# counts as a word (dedup's word-by-word comparisons, the minimum length of an
# extracted sentence). CJK: Han plus kana and hangul syllables, the scripts an
# English model and a sub-word tokenizer take character by character and that
# search cuts into bigrams (tokens, token estimates, cosine trust).
HAN_RANGES = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
HANGUL_RANGE = r"\uac00-\ud7af"  # the syllable blocks
CJK_RANGES = r"\u3040-\u30ff" + HAN_RANGES + HANGUL_RANGE
_CJK_CHAR = re.compile(rf"[{CJK_RANGES}]")
_HANGUL_CHAR = re.compile(rf"[{HANGUL_RANGE}]")
_HAN_CHAR = re.compile(rf"[{HAN_RANGES}]")
_TOKEN = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+(?:[.'][^\W_{CJK_RANGES}]+)*", re.UNICODE)
_CJK_RUN = re.compile(rf"^[{CJK_RANGES}]+$")

# "Tomás: ..." / "孙浩：...": a speaker prefix, one word of letters before a colon
# (a conversation turn). "ATL-2211: fix ..." is not one.
SPEAKER_PREFIX = re.compile(r"^[^\W\d_]{1,24}[:：]\s*")
# A body that ends in a question mark asks; it does not answer (search's question prior).
_ASKS = re.compile(r"[?？]\s*$")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese, Japanese or Korean character (Han, kana, hangul)."""
    return _CJK_CHAR.search(text) is not None


def cjk_count(text: str) -> int:
    """How many Han, kana and hangul characters ``text`` holds."""
    return len(_CJK_CHAR.findall(text))


def cjk_share(text: str) -> float:
    """The share of ``text``'s visible characters that are CJK (0.0 for blank text)."""
    visible = sum(1 for c in text if not c.isspace())
    return cjk_count(text) / visible if visible else 0.0


def has_han(text: str) -> bool:
    """Whether ``text`` holds a Chinese character (an ideograph; kana and hangul are not)."""
    return _HAN_CHAR.search(text) is not None


def han_count(text: str) -> int:
    """How many Chinese characters (ideographs) ``text`` holds."""
    return len(_HAN_CHAR.findall(text))


def has_hangul(text: str) -> bool:
    """Whether ``text`` holds a hangul syllable (Korean)."""
    return _HANGUL_CHAR.search(text) is not None


def is_han(char: str) -> bool:
    """Whether ``char`` is one Chinese character."""
    return _HAN_CHAR.fullmatch(char) is not None


def possessive(word: str) -> str:
    """``word`` without an English possessive ``'s``."""
    return word[:-2] if word.endswith(("'s", "\u2019s")) else word


def stem(word: str) -> str:
    """A crude English stem, enough to match "owns"/"owned", "uploads"/"upload",
    "GitHub's"/"GitHub" (search's word coverage and dedup's word guards)."""
    word = possessive(word.lower())
    for suffix in ("ing", "ers", "er", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def asks_question(body: str) -> bool:
    """Whether a memory is itself a question: its text ends in ``?`` or ``？``."""
    return _ASKS.search(body) is not None


ENGLISH_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves also use uses used using user users""".split()
)
# Category words: sharing "decision" or "preference" alone must never make two
# memories look alike.
CATEGORY_STOPWORDS = frozenset(
    """preference preferences prefer prefers constraint constraints decision decisions
    decided observation observations fact facts note notes memory memories remember
    gotcha gotchas postmortem lesson lessons""".split()
)
CHINESE_STOPWORDS = frozenset(
    """的 了 是 在 我 有 和 就 不 人 都 一 一个 上 也 很 到 说 要 去 你 会 着 没有 看 好
    自己 这 那 他 她 它 们 我们 你们 他们 吗 呢 吧 啊 与 及 或 等 被 把 让 给 对 从 为
    而 以 之 于 其 中 这个 那个 用户 记住 偏好 决定 约束 观察""".split()
)
_CHINESE_STOP_BIGRAMS = frozenset(w for w in CHINESE_STOPWORDS if len(w) == 2)
STOPWORDS = ENGLISH_STOPWORDS | CATEGORY_STOPWORDS | CHINESE_STOPWORDS


def normalize(text: str) -> str:
    """Unicode NFC, whitespace runs collapsed to one space, trimmed."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def strip_injected(text: str) -> str:
    """Remove a leading provenance prefix and any injected memory blocks."""
    text = _INJECTED_BLOCK.sub(" ", text)
    return _PROVENANCE_PREFIX.sub("", text, count=1)


# The archived session summary memex puts before a compacted session's
# messages (memex/context/inject.py renders it).
SUMMARY_TAG = "session-summary"
_SUMMARY_BLOCK = re.compile(rf"<{SUMMARY_TAG}\b[^>]*>.*?</{SUMMARY_TAG}\s*>", re.IGNORECASE | re.DOTALL)
# Auto-recall searches with the end of the latest user message: at most this many characters.
RECALL_QUERY_CHARS = 4000


def strip_blocks(text: str) -> str:
    """Text without injected memory or summary blocks (never captured again)."""
    return strip_injected(_SUMMARY_BLOCK.sub(" ", text)).strip()


def recall_query(text: str) -> str:
    """The search query auto-recall makes of a user message's text ("": none).

    Here, not in memex.context, so that a hook's child process that embeds
    the prompt ahead (memex/agents/query_child.py) embeds exactly this text
    without importing the context engine.
    """
    return strip_blocks(text)[-RECALL_QUERY_CHARS:].strip()


def body_hash(text: str) -> str:
    """Hash of a body as dedup sees it: provenance and injected blocks ignored."""
    canonical = normalize(strip_injected(text)).casefold()
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


# Right single quotation mark and modifier letter apostrophe, read as "'".
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})


def plain_apostrophes(text: str) -> str:
    """``text`` with typographic apostrophes ("I’ve", as phones and editors
    type it) as "'": one word either way, not "i" and "ve"."""
    return text.translate(_APOSTROPHES)


def nfkc(text: str) -> str:
    """Unicode NFKC, with typographic apostrophes read as "'" ("don’t" is
    "don't"): the form the dedup checks compare words in."""
    return plain_apostrophes(unicodedata.normalize("NFKC", text))


def tokens(text: str) -> list[str]:
    """Search tokens: lower-case words, CJK runs as character bigrams."""
    if text.isascii():
        # Most text, and the floor tokenizes hits on every search: ASCII is
        # its own NFKC form, casefolds as it lowers and holds no CJK run.
        return _TOKEN.findall(text.lower())
    out: list[str] = []
    for match in _TOKEN.finditer(nfkc(text).casefold()):
        piece = match.group(0)
        if _CJK_RUN.match(piece):
            out.extend(_cjk_bigrams(piece))
        else:
            out.append(piece)
    return out


def content_tokens(text: str) -> set[str]:
    """Distinct tokens without stopwords, for Jaccard similarity."""
    result = set()
    for tok in tokens(strip_injected(text)):
        if tok in STOPWORDS or tok in _CHINESE_STOP_BIGRAMS:
            continue
        if len(tok) == 1 and tok.isascii() and not tok.isdigit():
            continue
        result.add(tok)
    return result


def jaccard(a: Iterable[str] | str, b: Iterable[str] | str) -> float:
    """Token Jaccard of two texts (or two token collections). Two texts with
    no content word share none: 0.0 ("..." and "—" are not alike; the same
    text twice is the exact layer's to find)."""
    sa = content_tokens(a) if isinstance(a, str) else set(a)
    sb = content_tokens(b) if isinstance(b, str) else set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def fts_document(text: str) -> str:
    """The text handed to the FTS5 table: tokens joined by spaces.

    FTS5's unicode61 tokenizer cannot split Chinese, so memex tokenizes first
    and stores the result in a contentless table.
    """
    return " ".join(tokens(text))


def fts_query(text: str, max_terms: int = 32) -> str | None:
    """An FTS5 MATCH expression that ORs the query's distinct content tokens."""
    seen: list[str] = []
    for tok in tokens(text):
        if tok in STOPWORDS or tok in _CHINESE_STOP_BIGRAMS or tok in seen:
            continue
        seen.append(tok)
        if len(seen) >= max_terms:
            break
    if not seen:
        # A query made only of stopwords still deserves an answer.
        seen = list(dict.fromkeys(tokens(text)))[:max_terms]
    if not seen:
        return None
    return " OR ".join('"' + tok.replace('"', '""') + '"' for tok in seen)


def chunks(text: str, size: int = 800, overlap: int = 120) -> list[str]:
    """Overlapping pieces of a long body, cut at whitespace where possible."""
    if len(text) <= size:
        return [text]
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            if cut == -1:
                cut = text.rfind("\n", start + size // 2, end)
            if cut != -1:
                end = cut
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return pieces


def escape(text: str) -> str:
    """Make memory text inert inside a tag block (the ``<relevant-memories>``
    block, the hand-off note): no tag can be opened or closed."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
    )


def preview(text: str, limit: int = 160) -> str:
    flat = normalize(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def entity_key(name: str) -> str:
    """The key that makes two spellings of an entity one (memex.index.graph)."""
    # NFKC too: a full-width "ＳＱＬｉｔｅ" (common in CJK text) is the same entity.
    return unicodedata.normalize("NFKC", normalize(name)).casefold()


def text_key(text: str) -> str:
    """The key of a text in the embedding cache (and a memory's ``embed_key``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def without_lone_surrogates(value: Any) -> Any:
    """``value`` (a string, or JSON made of lists and objects) with each lone
    surrogate in its strings as U+FFFD; the same object when there is none
    (the common case: nothing is copied). JSON from a JavaScript program can
    carry half an emoji ("\\ud83d"), which no UTF-8 file, hash or tokenizer takes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)
        return value
    if isinstance(value, list):
        items = [without_lone_surrogates(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, dict):
        pairs = {k: without_lone_surrogates(v) for k, v in value.items()}
        return value if all(pairs[k] is v for k, v in value.items()) else pairs
    return value

"""Value changes: near-identical texts that differ in a number, date, version or name.

"grip force 12.5N works best" and "grip force 15N works best" are two facts,
not one: the second updates the first. Dedup and consolidation both refuse
to merge such pairs; dedup reports the older one as similar and suggests
``supersede``.
"""

from __future__ import annotations

import re
import unicodedata

# Numbers with optional decimals, units glued on (12.5N, 15ms, 3x), versions
# (v1.2.3, 3.11), dates (2026-11-30, 30/11/2026) and times (10:30).
_VALUE = re.compile(
    r"(?<![\w.])v?\d+(?:[.,:/-]\d+)*(?:[a-z%°µ]+)?(?![\w.]*\w)|[$€£¥]\s?\d+(?:[.,]\d+)*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")
_CJK_NUMBER = re.compile(r"[零一二三四五六七八九十百千万亿两]+")


def _values(text: str) -> set[str]:
    return {m.group(0).lower().replace(",", ".") for m in _VALUE.finditer(text)} | set(
        _CJK_NUMBER.findall(text)
    )


def _names(text: str) -> set[str]:
    """Capitalized words that do not start a sentence: likely proper names."""
    out = set()
    for m in _WORD.finditer(text):
        word = m.group(0)
        if not word[0].isupper() or word.isupper() and len(word) <= 1:
            continue
        if _SENTENCE_START.search(text[: m.start()]):
            continue
        out.add(word.lower())
    return out


def value_tokens(text: str) -> set[str]:
    text = unicodedata.normalize("NFKC", text)
    return _values(text) | _names(text)


def differs_in_value(a: str, b: str) -> bool:
    """True when the two texts carry different numbers, dates, versions or names.

    Only the values are compared: a value present in one text and not the
    other (on either side) is a change. Texts with no values at all never
    differ in value.
    """
    va, vb = value_tokens(a), value_tokens(b)
    if not va and not vb:
        return False
    return va != vb

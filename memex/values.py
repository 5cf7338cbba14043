"""Value changes: near-identical texts that differ in a number, date, version or name.

"grip force 12.5N works best" and "grip force 15N works best" are two facts,
not one: the second updates the first. Dedup and consolidation both refuse
to merge such pairs; dedup reports the older one as similar and suggests
``supersede``.

A flipped polarity ("use tabs" / "never use tabs") is the same kind of
trap for an embedding model, which scores the two as near-identical; dedup
checks it with :func:`differs_in_polarity`.
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
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|^\s*[-*>#]+\s*)$")
_CJK_NUMBER = re.compile(r"[零一二三四五六七八九十百千万亿两]+")
# Chinese words that contain a numeral character but carry no quantity.
_CJK_NON_NUMBERS = re.compile(
    r"统一|一起|一样|一直|一定|一些|一般|一致|唯一|进一步|一旦|一下|一切|一律|万一|"
    r"一边|一点|不一|同一|一向|一贯|十分|千万|万不|一次性"
)
_NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty
    sixty seventy eighty ninety hundred thousand million billion once twice half
    double triple single dozen""".split()
)
_MONTHS_DAYS = frozenset(
    """january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday""".split()
)
# Words that commonly open a sentence in a note and are not names. A
# capitalized word at the start of a sentence counts as a name only when it
# is not one of these (so "Alice prefers X" vs "Bob prefers X" is a change,
# "Always run X" vs "Run X always" is not).
_COMMON_STARTERS = frozenset(
    """a an the this that these those it its we our us i my you your he she they their
    there here what when where which who why how if unless while since because as after
    before during for from in on at by with without to of into onto over under about
    always never often usually sometimes also only just still already again not no yes
    do does did don't doesn't didn't be is are was were been being have has had can
    could should would will shall may might must let let's please note tip warning
    important remember keep use using used prefer prefers preferred avoid make run
    set add remove put get go try check ensure test tests build deploy install update
    write read store save call pass fix move rename delete create start stop open close
    enable disable configure pin upgrade downgrade switch choose chose pick prefer
    decided decision constraint observation preference fact user users team project
    all any some every each both either neither most many much more less few
    new old first last next previous then now today tomorrow yesterday later
    good bad better best worse worst same different other another such so but and or
    yet however therefore thus also instead otherwise meanwhile finally generally
    agent agents code tool tools file files""".split()
)

_POLARITY_EN = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|neither|nor|without|avoid|avoids|avoided|"
    r"disable|disabled|disallow|forbid|forbidden|prohibit|prohibited|"
    r"don't|doesn't|didn't|isn't|aren't|wasn't|weren't|won't|wouldn't|shouldn't|"
    r"can't|cannot|couldn't|mustn't|dont|doesnt|cant|shouldnt|wont)\b",
    re.IGNORECASE,
)
_POLARITY_ZH = re.compile(r"不|没|别|勿|禁止|无须|无需|避免|未|莫|非")
# "不" inside these words does not negate anything.
_ZH_NOT_NEGATION = re.compile(r"不同|不断|不过|不少|不久|不仅|不管|不论|不一|差不多")


def _values(text: str) -> set[str]:
    numbers = {m.group(0).lower().replace(",", ".") for m in _VALUE.finditer(text)}
    words = {w.lower() for w in _WORD.findall(text)}
    numbers |= words & (_NUMBER_WORDS | _MONTHS_DAYS)
    cjk = _CJK_NUMBER.findall(_CJK_NON_NUMBERS.sub(" ", text))
    return numbers | set(cjk)


def _names(text: str) -> set[str]:
    """Capitalized words that are probably proper names.

    Inside a sentence any capitalized word counts; at the start of a
    sentence only a word that is not a common sentence opener does.
    """
    out = set()
    for m in _WORD.finditer(text):
        word = m.group(0)
        if not word[0].isupper() or len(word) == 1:
            continue
        lower = word.lower()
        if lower in _NUMBER_WORDS or lower in _MONTHS_DAYS:
            continue  # already counted as a value
        if _SENTENCE_START.search(text[: m.start()]) and (
            lower in _COMMON_STARTERS or lower.endswith(("ly", "ing"))
        ):
            continue
        out.add(lower)
    return out


def value_tokens(text: str) -> set[str]:
    """The numbers, dates, versions, quantities and names a text mentions."""
    text = unicodedata.normalize("NFKC", text)
    return _values(text) | _names(text)


def differs_in_value(a: str, b: str) -> bool:
    """True when the two texts carry different numbers, dates, versions or names.

    Only the values are compared: a value present in one text and not the
    other (on either side) is a change. A capitalized word that the other
    text has in lower case ("Redis" / "redis") is not a change. Texts with no
    values at all never differ in value.
    """
    na, nb = unicodedata.normalize("NFKC", a), unicodedata.normalize("NFKC", b)
    va, vb = value_tokens(na), value_tokens(nb)
    if va == vb:
        return False
    words_a = {w.lower() for w in _WORD.findall(na)}
    words_b = {w.lower() for w in _WORD.findall(nb)}
    names_a, names_b = _names(na), _names(nb)
    # A name on one side that the other side writes in lower case is the same word.
    only_a = {v for v in va - vb if not (v in names_a and v in words_b)}
    only_b = {v for v in vb - va if not (v in names_b and v in words_a)}
    return bool(only_a or only_b)


def differs_in_number(a: str, b: str) -> bool:
    """Like :func:`differs_in_value` but for numbers, dates and versions only (no names)."""
    va = _values(unicodedata.normalize("NFKC", a))
    vb = _values(unicodedata.normalize("NFKC", b))
    return va != vb


def _polarity(text: str) -> int:
    text = unicodedata.normalize("NFKC", text)
    zh = _ZH_NOT_NEGATION.sub(" ", text)
    return (len(_POLARITY_EN.findall(text)) + len(_POLARITY_ZH.findall(zh))) % 2


def differs_in_polarity(a: str, b: str) -> bool:
    """True when one text negates what the other states ("use X" / "never use X").

    Counts negation words (English and Chinese) on each side; an odd count
    on one side and an even count on the other is a flip.
    """
    return _polarity(a) != _polarity(b)


def conflicts(a: str, b: str) -> bool:
    """The two texts cannot be the same fact: a value or the polarity differs."""
    return differs_in_value(a, b) or differs_in_polarity(a, b)

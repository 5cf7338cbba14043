"""Value changes: near-identical texts that differ in a number, date, version or name.

"grip force 12.5N works best" and "grip force 15N works best" are two facts,
not one: the second updates the first. Dedup and consolidation both refuse
to merge such pairs; dedup reports the older one as similar and suggests
``supersede``.

A flipped polarity, an opposite, the sides of a comparison, one word
swapped in place and two roles exchanged are the same kind of trap for an
embedding model, which scores such pairs as near-identical; those checks
look at the words (:mod:`memex.dedup.wording`). :data:`GUARDS` lists every
check in order and
:func:`conflict_reason` names the first that fires (what
``consolidate --explain`` shows); docs/consolidation.md measures each.

Every check is linear in the length of the texts (or bounded): they run
inside the write lock on bodies of any size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from memex.dedup.numerals import cjk_values
from memex.dedup.wording import (
    differs_in_opposites,
    differs_in_polarity,
    differs_in_relation,
    possessive,
    stem,
    substitutes_one_word,
    substitution_units,
    swaps_roles,
)
from memex.text import nfkc

# Numbers with optional decimals, units glued on (12.5N, 15ms, 3x), versions
# (v1.2.3, 3.11), dates (2026-11-30, 30/11/2026) and times (10:30).
_VALUE = re.compile(
    r"(?<![A-Za-z0-9.])v?\d+(?:[.,:/-]\d+)*(?:[a-z%°µ]+)?(?![A-Za-z0-9.]*[A-Za-z0-9])"
    r"|[$€£¥]\s?\d+(?:[.,]\d+)*",
    re.IGNORECASE,
)
# Technical identifiers: host names, paths, file names, model names with a
# digit (staging.example.com, fixtures/base.sql, gpt-4o, stage2), and
# command-line flags (-q, --fast).
_IDENTIFIER = re.compile(
    r"(?<![A-Za-z0-9_])(?:[A-Za-z0-9_-]+(?:[./:][A-Za-z0-9_-]+)+|[A-Za-z_-]*[A-Za-z][A-Za-z_-]*\d[A-Za-z0-9_-]*"
    r"|--?[A-Za-z][A-Za-z0-9-]*)(?![A-Za-z0-9_])"
)
# Latin-script words only: a CJK run glued to a name ("使用Python") must not hide it.
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f0-9]+(?:[-'][A-Za-z\u00c0-\u024f0-9]+)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|^\s*[-*>#]+\s*)$")
_LOOK_BACK = 64
_NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty
    sixty seventy eighty ninety hundred thousand million billion once twice half
    double triple dozen""".split()
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

# "in one file", "one of them" rarely state a quantity.
_WORD_DIGITS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20",
    "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "twice": "2", "double": "2",
    "triple": "3", "half": "0.5", "dozen": "12",
}
# "once the tests pass" is a conjunction far more often than a count.
_NOT_QUANTITIES = frozenset({"one", "once"})
_PLAIN_NUMBER = re.compile(r"v?(\d+(?:\.\d+)*)(?:[a-z%°µ]+)?")



def _singular_day(word: str) -> str:
    return word[:-1] if word.endswith("s") and word[:-1] in _MONTHS_DAYS else word


def _canonical_number(token: str) -> str:
    """12.5N -> 12.5, 85% -> 85, v2 -> 2, 2.0 -> 2: the number without its
    unit or a trailing .0, so "85%" / "85 percent" and "numpy 2" / "numpy
    2.0" agree. Dates, times and prices keep their form."""
    m = _PLAIN_NUMBER.fullmatch(token)
    if m is None:
        return token
    number = m.group(1)
    while number.endswith(".0"):
        number = number[:-2]
    return number


# Kept per text: an add compares its text with every near neighbour, and the
# same neighbours come back for the next add (found from outside: importing
# 400 notes spent a quarter of its CPU here, 46,026 calls).
@lru_cache(maxsize=4096)
def _numbers(text: str) -> frozenset[str]:
    """Numbers, dates, versions and quantities, canonical (see above).
    Chinese numerals, clock times, durations and weekdays are read as the
    values they state (四张 = 4, 十点 = 10点 = 10:00, 半小时 = 30分钟;
    memex/dedup/numerals.py)."""
    numbers, text = cjk_values(text)
    numbers |= {_canonical_number(m.group(0).lower().replace(",", ".")) for m in _VALUE.finditer(text)}
    # "Fridays" is Friday; "GitHub's" is GitHub.
    words = {_singular_day(possessive(w.lower())) for w in _WORD.findall(text)}
    numbers |= {_WORD_DIGITS.get(w, w) for w in words & (_NUMBER_WORDS | _MONTHS_DAYS) if w not in _NOT_QUANTITIES}
    return frozenset(numbers)


# Hyphenated names of things (acme-uploads, sqlite-vec, pytest-rerunfailures):
# with the substitution rule of differs_in_value a one-sided English compound
# ("pre-tokenized") changes nothing.
_COMPOUND = re.compile(r"(?<![\w.-])[a-z0-9]+(?:-[a-z0-9]+)+(?![\w-])")


_NUMERIC = re.compile(r"[\d.,:/-]+")


def _identifiers(text: str) -> set[str]:
    """Host names, paths, flags, names with a digit; not numbers (4.2s,
    2026-11-30), which :func:`_numbers` already compares in canonical form."""
    found = {m.group(0).lower().rstrip(".:") for m in _IDENTIFIER.finditer(text)}
    found |= set(_COMPOUND.findall(text))
    return {t for t in found if not (_PLAIN_NUMBER.fullmatch(t) or _NUMERIC.fullmatch(t))}


def _values(text: str) -> set[str]:
    return set(_numbers(text)) | _identifiers(text)




def _name_sets(text: str) -> tuple[set[str], set[str]]:
    """Capitalized words that are probably proper names: (inside a sentence,
    opening a sentence). An opening word counts only when it is not a
    common sentence opener."""
    inside: set[str] = set()
    opening: set[str] = set()
    for m in _WORD.finditer(text):
        word = m.group(0)
        if not word[0].isupper() or len(word) == 1:
            continue
        lower = possessive(word.lower())
        if lower in _NUMBER_WORDS or _singular_day(lower) in _MONTHS_DAYS:
            continue  # already counted as a value
        # Only the few characters before the word decide; a bounded look-back
        # keeps this linear in the text (slicing the whole prefix for every
        # capitalized word was quadratic: 10 s for 54 KB of names).
        if _SENTENCE_START.search(text, max(0, m.start() - _LOOK_BACK), m.start()):
            if lower in _COMMON_STARTERS or stem(lower) in _COMMON_STARTERS or lower.endswith(("ly", "ing")):
                continue
            opening.add(lower)
        else:
            inside.add(lower)
    return inside, opening - inside


def _names(text: str) -> set[str]:
    inside, opening = _name_sets(text)
    return inside | opening


def names(text: str) -> set[str]:
    """Capitalized words that are probably proper names, lower case (a
    sentence's first word only when it is not a common opener)."""
    return _names(nfkc(text))


def value_tokens(text: str) -> set[str]:
    """The numbers, dates, versions, quantities and names a text mentions
    (numbers in the canonical form they are compared in: v2.1 -> 2.1)."""
    text = nfkc(text)
    return _values(text) | _names(text)


def differs_in_value(a: str, b: str) -> bool:
    """True when the two texts carry a different number, date or version, or
    name a different thing in the same role.

    Numbers, dates and versions must match (after :func:`_canonical_number`;
    a number on one side only is a change: "the version 3 API" / "the
    API"). Names and identifiers differ only by *substitution*: each side
    has one the other lacks ("Alice prefers X" / "Bob prefers X",
    "fixtures/base.sql" / "fixtures/full.sql"); a name, a capitalized word
    or an identifier mentioned on one side only ("the SQLite index" / "the
    index database", "PR" / "pull request") is a paraphrase adding a word,
    not a changed value. Two unmatched names must also share a neighbouring
    word (the same role); identifiers are specific enough without. A
    capitalized word the other text writes in lower case or inflected
    ("Redis" / "redis", "Uploads" / "upload") is the same word.
    """
    na, nb = nfkc(a), nfkc(b)
    if _numbers(na) != _numbers(nb):
        return True
    ida, idb = _identifiers(na), _identifiers(nb)
    if ida - idb and idb - ida:
        return True
    stems_a = {stem(p) for w in _WORD.findall(na) for p in (w, *w.split("-"))}
    stems_b = {stem(p) for w in _WORD.findall(nb) for p in (w, *w.split("-"))}
    # "Google-style" is matched by "Google style": every part is there.
    lost_a = {n for n in _names(na) if not {stem(p) for p in n.split("-")} <= stems_b and n not in ida}
    lost_b = {n for n in _names(nb) if not {stem(p) for p in n.split("-")} <= stems_a and n not in idb}
    if not (lost_a and lost_b):
        return False
    around_a, around_b = _neighbours(na, lost_a), _neighbours(nb, lost_b)
    # A name with no neighbour at all cannot be placed: count it as changed.
    if not all(around_a.values()) or not all(around_b.values()):
        return True
    # Some pair of names shares a neighbour iff the unions meet (and this
    # stays linear however many names the texts hold).
    return not set().union(*around_a.values()).isdisjoint(set().union(*around_b.values()))


def _neighbours(text: str, names: set[str]) -> dict[str, set[str]]:
    """For each name, the content words right before and after it (other
    names skipped): "Alice prefers X" / "Bob prefers X" share "prefer"."""
    units = substitution_units(text)
    # A hyphenated name ("Full-text") is several units: find it by its first
    # part, take the word after its last part.
    parts = {n: [stem(p) for p in n.split("-")] for n in names}
    starts = {p[0]: n for n, p in parts.items()}
    skip = {u for p in parts.values() for u in p}
    out: dict[str, set[str]] = {n: set() for n in names}
    for i, unit in enumerate(units):
        name = starts.get(unit)
        if name is None:
            continue
        for k in (i - 1, i + len(parts[name])):
            if 0 <= k < len(units) and units[k] not in skip:
                out[name].add(units[k])
    return out


def differs_in_number(a: str, b: str) -> bool:
    """Like :func:`differs_in_value` but for numbers, dates and versions only (no names)."""
    va = _values(nfkc(a))
    vb = _values(nfkc(b))
    return va != vb


# "X, not Y" names an alternative (like "instead of Y"), it negates nothing.


# The guards in the order they are asked; the first that fires is the
# reason two texts are kept apart (what `consolidate --explain` shows).
GUARDS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("value", differs_in_value),
    ("polarity", differs_in_polarity),
    ("opposite", differs_in_opposites),
    ("relation", differs_in_relation),
    ("swapped_word", substitutes_one_word),
    ("swapped_roles", swaps_roles),
)


# What each refusal means, in words (shown by `consolidate --explain`).
GUARD_MEANING = {
    "value": "a number, date, version or a name in the same role differs",
    "polarity": "one negates what the other states",
    "opposite": "one has a word, the other its opposite",
    "relation": "the sides of a comparison differ",
    "swapped_word": "the same sentence with one word swapped",
    "swapped_roles": "the same words with two roles exchanged",
    "speaker": "two speakers' statements",
    "person": "about different people",
    "question": "one asks what the other does not ask, or answers it",
    "adds": "each says something the other does not",
    "below threshold": "the score is under merge_threshold",
    "complete link": "similar, but not to every member of the other's cluster",
    "not carried": "its group's representative does not say everything it says",
}


def conflict_reason(a: str, b: str) -> str | None:
    """The name of the first guard that keeps the texts apart, or None."""
    return next((name for name, guard in GUARDS if guard(a, b)), None)


def conflicts(a: str, b: str) -> bool:
    """The two texts cannot be the same fact: a value, the polarity, an
    opposite, the sides of a comparison, one swapped word or two swapped
    roles differ."""
    return conflict_reason(a, b) is not None

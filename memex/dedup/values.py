"""Value changes: near-identical texts that differ in a number, date, version or name.

"grip force 12.5N works best" and "grip force 15N works best" are two facts,
not one: the second updates the first. Dedup and consolidation both refuse
to merge such pairs; dedup reports the older one as similar and suggests
``supersede``.

A flipped polarity ("use tabs" / "never use tabs"), an opposite, the sides
of a comparison, one word swapped in place and two roles exchanged ("Alice
owns billing and Bob owns auth" / "Bob owns billing and Alice owns auth")
are the same kind of trap for an embedding model, which scores such pairs
as near-identical. :data:`GUARDS` lists the checks in order and
:func:`conflict_reason` names the first that fires (what
``consolidate --explain`` shows); docs/consolidation.md measures each.

Every check is linear in the length of the texts (or bounded): they run
inside the write lock on bodies of any size.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from memex.dedup.numerals import bounds, cjk_values, strip_bounds

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

_POLARITY_EN = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|neither|nor|without|avoid|avoids|avoided|"
    r"disable|disabled|disallow|forbid|forbidden|prohibit|prohibited|"
    r"don't|doesn't|didn't|isn't|aren't|wasn't|weren't|won't|wouldn't|shouldn't|"
    r"can't|cannot|couldn't|mustn't|dont|doesnt|cant|shouldnt|wont)\b",
    re.IGNORECASE,
)
_POLARITY_ZH = re.compile(r"不|没|别|勿|禁止|无须|无需|避免|未|莫|非")
# Words that contain a negation character but do not negate anything.
_ZH_NOT_NEGATION = re.compile(
    r"不同|不断|不过|不少|不久|不仅|不管|不论|不一|差不多|区别|特别|分别|别人|类别|级别|识别|"
    r"告别|性别|个别|非常|未来|除非|是非"
)


# Number words as the digits they stand for, so "retried twice" and "2
# times", "two cores" and "2 cores" carry the same value. "one" is left out:
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


def _possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word


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


def _numbers(text: str) -> set[str]:
    """Numbers, dates, versions and quantities, canonical (see above).
    Chinese numerals, clock times, durations and weekdays are read as the
    values they state (四张 = 4, 十点 = 10点 = 10:00, 半小时 = 30分钟;
    memex/dedup/numerals.py)."""
    numbers, text = cjk_values(text)
    numbers |= {_canonical_number(m.group(0).lower().replace(",", ".")) for m in _VALUE.finditer(text)}
    # "Fridays" is Friday; "GitHub's" is GitHub.
    words = {_singular_day(_possessive(w.lower())) for w in _WORD.findall(text)}
    numbers |= {_WORD_DIGITS.get(w, w) for w in words & (_NUMBER_WORDS | _MONTHS_DAYS) if w not in _NOT_QUANTITIES}
    return numbers


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
    return _numbers(text) | _identifiers(text)


def _stem(word: str) -> str:
    """A crude English stem, enough to match "owns"/"owned", "uploads"/"upload",
    "GitHub's"/"GitHub"."""
    word = _possessive(word.lower())
    for suffix in ("ing", "ers", "er", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


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
        lower = _possessive(word.lower())
        if lower in _NUMBER_WORDS or _singular_day(lower) in _MONTHS_DAYS:
            continue  # already counted as a value
        # Only the few characters before the word decide; a bounded look-back
        # keeps this linear in the text (slicing the whole prefix for every
        # capitalized word was quadratic: 10 s for 54 KB of names).
        if _SENTENCE_START.search(text, max(0, m.start() - _LOOK_BACK), m.start()):
            if lower in _COMMON_STARTERS or _stem(lower) in _COMMON_STARTERS or lower.endswith(("ly", "ing")):
                continue
            opening.add(lower)
        else:
            inside.add(lower)
    return inside, opening - inside


def _names(text: str) -> set[str]:
    inside, opening = _name_sets(text)
    return inside | opening


def value_tokens(text: str) -> set[str]:
    """The numbers, dates, versions, quantities and names a text mentions
    (numbers in the canonical form they are compared in: v2.1 -> 2.1)."""
    text = unicodedata.normalize("NFKC", text)
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
    na, nb = unicodedata.normalize("NFKC", a), unicodedata.normalize("NFKC", b)
    if _numbers(na) != _numbers(nb):
        return True
    ida, idb = _identifiers(na), _identifiers(nb)
    if ida - idb and idb - ida:
        return True
    stems_a = {_stem(p) for w in _WORD.findall(na) for p in (w, *w.split("-"))}
    stems_b = {_stem(p) for w in _WORD.findall(nb) for p in (w, *w.split("-"))}
    # "Google-style" is matched by "Google style": every part is there.
    lost_a = {n for n in _names(na) if not {_stem(p) for p in n.split("-")} <= stems_b and n not in ida}
    lost_b = {n for n in _names(nb) if not {_stem(p) for p in n.split("-")} <= stems_a and n not in idb}
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
    units = _substitution_units(text)
    # A hyphenated name ("Full-text") is several units: find it by its first
    # part, take the word after its last part.
    parts = {n: [_stem(p) for p in n.split("-")] for n in names}
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
    va = _values(unicodedata.normalize("NFKC", a))
    vb = _values(unicodedata.normalize("NFKC", b))
    return va != vb


# "X, not Y" names an alternative (like "instead of Y"), it negates nothing.
_CONTRAST_NOT = re.compile(r",\s*(?:and\s+|but\s+)?not\b", re.IGNORECASE)


# How many content words after an English negator it is taken to negate: the
# first, the verb or noun it binds ("never use", "not enabled", "no deploys").
_NEGATION_SCOPE = 1


def _polarity(text: str) -> tuple[int, bool, set[str]]:
    """(parity of negations, whether a Chinese one counts, stems of the
    content words English negators reach)."""
    from memex.text import STOPWORDS  # local: text.py must not depend on values.py

    text = _CONTRAST_NOT.sub(" instead ", unicodedata.normalize("NFKC", text))
    # 不低于 / 不超过 are bounds ("at least", "at most"), compared by
    # differs_in_opposites, not negations.
    zh = _POLARITY_ZH.findall(_ZH_NOT_NEGATION.sub(" ", strip_bounds(text)))
    reached: set[str] = set()
    count = len(zh)
    for m in _POLARITY_EN.finditer(text):
        count += 1
        words = [w for w in _ASCII_WORD.findall(text[m.end() : m.end() + 120].lower()) if w not in STOPWORDS]
        reached |= {_stem(w) for w in words[:_NEGATION_SCOPE]}
    return count % 2, bool(zh), reached


def differs_in_polarity(a: str, b: str) -> bool:
    """True when one text negates what the other states ("use X" / "never use X").

    Counts negation words (English and Chinese) on each side; an odd count
    on one side and an even count on the other is a flip, provided the
    negation reaches something the other text states: the content word
    right after an English negator appears in the other text. So
    "the wheels break with numpy 2" / "the wheels do not work with numpy 2"
    (a negated synonym) is no flip, while "use tabs" / "never use tabs" is.
    Chinese negators, unscoped, always count. "X, not Y" is a contrast.
    """
    pa, zh_a, reach_a = _polarity(a)
    pb, zh_b, reach_b = _polarity(b)
    if pa == pb:
        return False
    odd_zh, odd_reach, other = (zh_a, reach_a, b) if pa else (zh_b, reach_b, a)
    if odd_zh:
        return True
    other_stems = {_stem(w) for w in _ASCII_WORD.findall(unicodedata.normalize("NFKC", other).lower())}
    return bool(odd_reach & other_stems)


_ANTONYMS_EN = (
    ("dark", "light"), ("light", "heavy"), ("true", "false"), ("on", "off"), ("min", "max"),
    ("minimum", "maximum"), ("increase", "decrease"), ("before", "after"), ("left", "right"),
    ("up", "down"), ("open", "closed"), ("public", "private"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("tabs", "spaces"), ("allow", "deny"), ("accept", "reject"),
    ("include", "exclude"), ("upper", "lower"), ("first", "last"), ("short", "long"),
    ("brief", "long"), ("more", "less"), ("more", "fewer"), ("high", "low"), ("fast", "slow"),
    ("large", "small"), ("big", "small"), ("old", "new"), ("older", "newer"), ("black", "white"),
    ("enable", "disable"), ("enabled", "disabled"), ("always", "sometimes"), ("local", "remote"),
    ("internal", "external"), ("read", "write"), ("input", "output"), ("client", "server"),
    ("start", "stop"), ("morning", "evening"), ("morning", "afternoon"), ("day", "night"),
    ("like", "dislike"), ("likes", "dislikes"), ("love", "hate"), ("loves", "hates"),
    ("success", "failure"), ("pass", "fail"), ("passes", "fails"), ("add", "remove"),
    ("static", "dynamic"), ("horizontal", "vertical"), ("ascending", "descending"),
)
_ANTONYMS_ZH = (
    ("深色", "浅色"), ("上午", "下午"), ("详细", "简短"), ("开启", "关闭"), ("打开", "关闭"),
    ("最大", "最小"), ("增加", "减少"), ("之前", "之后"), ("以前", "以后"), ("喜欢", "讨厌"),
    ("同步", "异步"), ("公开", "私有"), ("本地", "远程"), ("成功", "失败"), ("横向", "纵向"),
    ("升序", "降序"), ("白天", "晚上"), ("启用", "禁用"), ("允许", "拒绝"),
)
_RELATIONS = frozenset(
    "over instead than not versus vs rather unlike except but replaced replaces replace before after".split()
)
# Words that all name the rejected alternative: "Redis over RabbitMQ",
# "Redis instead of RabbitMQ", "Redis rather than RabbitMQ", "Redis, not
# RabbitMQ", "Redis replaced RabbitMQ" compare as one relation.
_ALTERNATIVE = {"over": "over", "instead": "over", "rather": "over", "versus": "over", "vs": "over",
                "unlike": "over", "replaced": "over", "replaces": "over", "replace": "over"}
# Order in time: what follows is a phrase ("after touching pyproject.toml" /
# "after editing pyproject.toml"), so two words are kept and an overlap is
# the same order.
_TEMPORAL = frozenset({"before", "after"})
_ASCII_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_+#-]|\.(?=[a-z0-9]))*")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# Chinese characters too common to tell two facts apart.
_ZH_STOP_CHARS = frozenset("的了是在我有和就不都也很到要会着这那们吗呢吧啊与及或等被把让给对从为而以之于其中个一")


def differs_in_opposites(a: str, b: str) -> bool:
    """One text has a word and the other its opposite ("dark mode" / "light mode"),
    or the two bound a value from different sides (不低于 / 低于, 至少 / 最多)."""
    ba, bb = bounds(unicodedata.normalize("NFKC", a)), bounds(unicodedata.normalize("NFKC", b))
    if ba and bb and ba != bb:
        return True
    wa = set(_ASCII_WORD.findall(unicodedata.normalize("NFKC", a).lower()))
    wb = set(_ASCII_WORD.findall(unicodedata.normalize("NFKC", b).lower()))
    for x, y in _ANTONYMS_EN:
        if (x in wa and y in wb and y not in wa and x not in wb) or (
            y in wa and x in wb and x not in wa and y not in wb
        ):
            return True
    for x, y in _ANTONYMS_ZH:
        if (x in a and y in b and y not in a and x not in b) or (
            y in a and x in b and x not in a and y not in b
        ):
            return True
    return False


def _neighbours_of_relations(words: list[str]) -> dict[str, set[str]]:
    """For each comparison word, the first content word that follows it (the
    next two for before/after)."""
    from memex.text import STOPWORDS  # local: text.py must not depend on values.py

    out: dict[str, set[str]] = {}
    # Walk backwards carrying the next content words, so the text is read
    # once (looking ahead from every relation word was quadratic).
    after: list[str] = []
    for word in reversed(words):
        if word in _RELATIONS:
            keep = after[:2] if word in _TEMPORAL else after[:1] or [""]
            out.setdefault(_ALTERNATIVE.get(word, word), set()).update(_stem(w) for w in keep)
        elif word not in STOPWORDS:
            after = [word, *after[:1]]
    return out


def _relation_words(text: str) -> list[str]:
    return _ASCII_WORD.findall(_CONTRAST_NOT.sub(" instead ", unicodedata.normalize("NFKC", text)).lower())


def differs_in_relation(a: str, b: str) -> bool:
    """The same comparison with its sides changed ("pytest over unittest" /
    "unittest over pytest", "main, not develop" / "develop, not main",
    "linters before the tests" / "tests before the docs"), or what one text
    rejects stated plainly by the other ("tabs over spaces" / "spaces for
    indentation").

    Relation words present in both texts are compared, so a paraphrase that
    drops the comparison word is not flagged on that account.
    """
    wa, wb = _relation_words(a), _relation_words(b)
    ra, rb = _neighbours_of_relations(wa), _neighbours_of_relations(wb)
    for w in ra.keys() & rb.keys():
        if (ra[w].isdisjoint(rb[w]) if w in _TEMPORAL else ra[w] != rb[w]):
            return True
    for words, other, other_rel in ((wa, wb, rb), (wb, wa, ra)):
        if "over" in other_rel:
            continue  # both compare: the loop above decided
        # Everything the other text puts after a relation word is not
        # stated plainly there ("better than requests").
        placed = set().union(*other_rel.values()) if other_rel else set()
        plain = {_stem(x) for x in other} - placed
        if _rejected(words) & plain:
            return True
    return False


_PREFERENCE = re.compile(r"^(?:prefer|pick|chose|choose|favou?r|like)")


def _rejected(words: list[str]) -> set[str]:
    """What the text names as the rejected alternative. "over" counts only
    beside a word of preference ("prefers tabs over spaces"): alone it is
    as often a place ("runs on FTS5 over text")."""
    if not any(_PREFERENCE.match(w) for w in words):
        words = [w for w in words if w not in ("over", "replaced", "replaces", "replace")]
    return _neighbours_of_relations(words).get("over", set())


_UNIT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+(?:[.'][^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)*")


def _substitution_units(text: str, function_words: bool = False) -> list[str]:
    """Content words in order (stemmed), Chinese as single characters; with
    ``function_words`` the stopwords stay (they mark roles: from/to, by)."""
    from memex.text import STOPWORDS  # local: text.py must not depend on values.py

    out = []
    for unit in _UNIT.findall(unicodedata.normalize("NFKC", text).casefold()):
        if not function_words and (unit in STOPWORDS or unit in _ZH_STOP_CHARS):
            continue
        if len(unit) == 1 and unit.isascii() and not unit.isdigit():
            continue
        out.append(_stem(unit))
    return out


def _common_ends(ua: list[str], ub: list[str]) -> tuple[int, int]:
    """Lengths of the common prefix and of the common suffix after it."""
    short = min(len(ua), len(ub))
    head = 0
    while head < short and ua[head] == ub[head]:
        head += 1
    tail = 0
    while tail < short - head and ua[-1 - tail] == ub[-1 - tail]:
        tail += 1
    return head, tail


def substitutes_one_word(a: str, b: str) -> bool:
    """The same sentence with one word swapped in place ("use httpx instead of
    requests" / "use aiohttp instead of requests").

    Near-copies never swap a word, and a paraphrase reorders or rewords
    more than one; a single in-place swap is how a changed value that is
    not a number (a library, a colour, a city) usually looks.

    Linear: one word swapped in place means the two unit lists agree
    outside one position, so stripping their common prefix and suffix
    must leave exactly one unit on each side (a general diff was
    quadratic and worse on repetitive bodies: minutes for 54 KB).
    """
    ua, ub = _substitution_units(a), _substitution_units(b)
    if len(ua) != len(ub) or len(ua) < 2:
        return False
    head, tail = _common_ends(ua, ub)
    return len(ua) - head - tail == 1


# Role swaps are looked for only in a differing stretch this short: longer
# ones are not one sentence with two words exchanged, and the search over
# splits is cubic in the stretch.
MAX_SWAP_SPAN = 40


def swaps_roles(a: str, b: str) -> bool:
    """The same words with two of them (or two runs) exchanged across the
    sentence: "Alice owns billing and Bob owns auth" / "Bob owns billing and
    Alice owns auth", "never deploy on Fridays; fine on Mondays" / "never
    deploy on Mondays; fine on Fridays", "migrate from MySQL to Postgres" /
    "migrate from Postgres to MySQL".

    Same bag of words (Jaccard 1.0), so no set-based check sees it. Outside
    their common ends, one text must read X M Y and the other Y M X with a
    non-empty M between: a paraphrase that moves a clause ("run tests before
    committing" / "before committing, run tests") swaps adjacent runs (empty
    M) and is not a role swap. Function words count: they mark the roles
    ("from X to Y") and keep a passive paraphrase ("the cache is warmed by
    the loader" / "the loader warms the cache") from being the same bag.
    """
    ua, ub = _substitution_units(a, True), _substitution_units(b, True)
    if len(ua) != len(ub) or ua == ub or sorted(ua) != sorted(ub):
        return False
    head, tail = _common_ends(ua, ub)
    ra, rb = ua[head : len(ua) - tail], ub[head : len(ub) - tail]
    n = len(ra)
    if n > MAX_SWAP_SPAN:
        return False
    for lx in range(1, n - 1):
        if ra[:lx] != rb[n - lx :]:
            continue
        for ly in range(1, n - lx):
            if rb[:ly] == ra[n - ly :] and ra[lx : n - ly] == rb[ly : n - lx]:
                return True
    return False


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
    "below threshold": "the score is under merge_threshold",
    "complete link": "similar, but not to every member of the other's cluster",
}


def conflict_reason(a: str, b: str) -> str | None:
    """The name of the first guard that keeps the texts apart, or None."""
    return next((name for name, guard in GUARDS if guard(a, b)), None)


def conflicts(a: str, b: str) -> bool:
    """The two texts cannot be the same fact: a value, the polarity, an
    opposite, the sides of a comparison, one swapped word or two swapped
    roles differ."""
    return conflict_reason(a, b) is not None

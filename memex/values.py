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


def _values(text: str) -> set[str]:
    numbers = {m.group(0).lower().replace(",", ".") for m in _VALUE.finditer(text)}
    numbers |= {m.group(0).lower().rstrip(".:") for m in _IDENTIFIER.finditer(text)}
    words = {w.lower() for w in _WORD.findall(text)}
    numbers |= words & (_NUMBER_WORDS | _MONTHS_DAYS)
    cjk = _CJK_NUMBER.findall(_CJK_NON_NUMBERS.sub(" ", text))
    return numbers | set(cjk)


def _stem(word: str) -> str:
    """A crude English stem, enough to match "owns"/"owned", "uploads"/"upload"."""
    word = word.lower()
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
        lower = word.lower()
        if lower in _NUMBER_WORDS or lower in _MONTHS_DAYS:
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
    """The numbers, dates, versions, quantities and names a text mentions."""
    text = unicodedata.normalize("NFKC", text)
    return _values(text) | _names(text)


def differs_in_value(a: str, b: str) -> bool:
    """True when the two texts carry different numbers, dates, versions or names.

    Numbers, dates, versions and identifiers must match exactly. A name
    counts as changed when the other text does not have the word at all (a
    capitalized word that the other text writes in lower case or inflected,
    "Redis" / "redis", "Uploads" / "upload", is the same word). A capitalized
    word that merely opens a sentence counts only when the other text has an
    unmatched name of its own ("Alice prefers X" / "Bob prefers X"), since
    "Format with black" / "Use black" just starts differently. Texts with no
    values at all never differ in value.
    """
    na, nb = unicodedata.normalize("NFKC", a), unicodedata.normalize("NFKC", b)
    if _values(na) != _values(nb):
        return True
    inside_a, opening_a = _name_sets(na)
    inside_b, opening_b = _name_sets(nb)
    stems_a = {_stem(w) for w in _WORD.findall(na)}
    stems_b = {_stem(w) for w in _WORD.findall(nb)}
    lost_a = {n for n in inside_a | opening_a if _stem(n) not in stems_b}
    lost_b = {n for n in inside_b | opening_b if _stem(n) not in stems_a}
    if lost_a - opening_a or lost_b - opening_b:
        return True
    return bool(lost_a and lost_b)


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
_RELATIONS = frozenset("over instead than not versus vs rather unlike except but".split())
_ASCII_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_+#-]|\.(?=[a-z0-9]))*")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# Chinese characters too common to tell two facts apart.
_ZH_STOP_CHARS = frozenset("的了是在我有和就不都也很到要会着这那们吗呢吧啊与及或等被把让给对从为而以之于其中个一")


def differs_in_opposites(a: str, b: str) -> bool:
    """One text has a word and the other its opposite ("dark mode" / "light mode")."""
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
    """For each comparison word, the first content word that follows it."""
    from memex.text import STOPWORDS  # local: text.py must not depend on values.py

    out: dict[str, set[str]] = {}
    # Walk backwards carrying the next content word, so the text is read
    # once (looking ahead from every relation word was quadratic).
    after = ""
    for word in reversed(words):
        if word in _RELATIONS:
            out.setdefault(word, set()).add(_stem(after))
        if word not in STOPWORDS:
            after = word
    return out


def differs_in_relation(a: str, b: str) -> bool:
    """The same comparison with its sides changed ("pytest over unittest" /
    "unittest over pytest", "main, not develop" / "develop, not main").

    Only relation words present in both texts are compared, so a paraphrase
    that drops the comparison word is not flagged.
    """
    ra = _neighbours_of_relations(_ASCII_WORD.findall(unicodedata.normalize("NFKC", a).lower()))
    rb = _neighbours_of_relations(_ASCII_WORD.findall(unicodedata.normalize("NFKC", b).lower()))
    return any(ra[w] != rb[w] for w in ra.keys() & rb.keys())


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


def conflicts(a: str, b: str) -> bool:
    """The two texts cannot be the same fact: a value, the polarity, an
    opposite, the sides of a comparison, one swapped word or two swapped
    roles differ."""
    return (
        differs_in_value(a, b)
        or differs_in_polarity(a, b)
        or differs_in_opposites(a, b)
        or differs_in_relation(a, b)
        or substitutes_one_word(a, b)
        or swaps_roles(a, b)
    )

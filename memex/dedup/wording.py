"""Word-level guards: a flipped polarity, an opposite, the sides of a
comparison, one word swapped in place, two roles exchanged.

An embedding model scores "use tabs" / "never use tabs", "dark mode" /
"light mode", "pytest over unittest" / "unittest over pytest" and
"Alice owns billing and Bob owns auth" / "Bob owns billing and Alice owns
auth" as near-identical, yet each pair is two facts. These checks look at
the words; :mod:`memex.dedup.values` compares the numbers, dates, versions
and names, and lists every guard in order (``GUARDS``).
docs/consolidation.md measures each.

Every check is linear in the length of the texts (or bounded): they run
inside the write lock on bodies of any size.
"""

from __future__ import annotations

import re

from memex.dedup.numerals import bounds, strip_bounds
from memex.text import HAN_RANGES, is_han, nfkc
from memex.text import possessive as possessive  # dedup's guards take these from here
from memex.text import stem as stem


_ASCII_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_+#-]|\.(?=[a-z0-9]))*")
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
# A negated word that is one word of its own: 不喜欢 is 讨厌 ("dislikes"), so
# "用户讨厌开会" / "用户很不喜欢开会" state the same thing, and 不喜欢 / 喜欢
# are opposites like 讨厌 / 喜欢.
_ZH_NEGATED_WORD = re.compile(r"不太?喜欢")


def _zh_plain(text: str) -> str:
    return _ZH_NEGATED_WORD.sub("讨厌", text)


# Number words as the digits they stand for, so "retried twice" and "2
# times", "two cores" and "2 cores" carry the same value. "one" is left out:


_CONTRAST_NOT = re.compile(r",\s*(?:and\s+|but\s+)?not\b", re.IGNORECASE)


# How many content words after an English negator it is taken to negate: the
# first, the verb or noun it binds ("never use", "not enabled", "no deploys").
_NEGATION_SCOPE = 1


def _polarity(text: str) -> tuple[int, bool, set[str]]:
    """(parity of negations, whether a Chinese one counts, stems of the
    content words English negators reach)."""
    from memex.text import STOPWORDS  # local: text.py must not depend on values.py

    text = _CONTRAST_NOT.sub(" instead ", nfkc(text))
    # 不低于 / 不超过 are bounds ("at least", "at most"), compared by
    # differs_in_opposites, not negations.
    zh = _POLARITY_ZH.findall(_ZH_NOT_NEGATION.sub(" ", strip_bounds(_zh_plain(text))))
    reached: set[str] = set()
    count = len(zh)
    for m in _POLARITY_EN.finditer(text):
        count += 1
        words = [w for w in _ASCII_WORD.findall(text[m.end() : m.end() + 120].lower()) if w not in STOPWORDS]
        reached |= {stem(w) for w in words[:_NEGATION_SCOPE]}
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
    other_stems = {stem(w) for w in _ASCII_WORD.findall(nfkc(other).lower())}
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
# Chinese characters too common to tell two facts apart.
_ZH_STOP_CHARS = frozenset("的了是在我有和就不都也很到要会着这那们吗呢吧啊与及或等被把让给对从为而以之于其中个一")


def differs_in_opposites(a: str, b: str) -> bool:
    """One text has a word and the other its opposite ("dark mode" / "light mode"),
    or the two bound a value from different sides (不低于 / 低于, 至少 / 最多)."""
    ba, bb = bounds(nfkc(a)), bounds(nfkc(b))
    if ba and bb and ba != bb:
        return True
    wa = set(_ASCII_WORD.findall(nfkc(a).lower()))
    wb = set(_ASCII_WORD.findall(nfkc(b).lower()))
    for x, y in _ANTONYMS_EN:
        if (x in wa and y in wb and y not in wa and x not in wb) or (
            y in wa and x in wb and x not in wa and y not in wb
        ):
            return True
    a, b = _zh_plain(a), _zh_plain(b)
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
            out.setdefault(_ALTERNATIVE.get(word, word), set()).update(stem(w) for w in keep)
        elif word not in STOPWORDS:
            after = [word, *after[:1]]
    return out


def _relation_words(text: str) -> list[str]:
    return _ASCII_WORD.findall(_CONTRAST_NOT.sub(" instead ", nfkc(text)).lower())


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
        plain = {stem(x) for x in other} - placed
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


# Chinese as single characters (one is about a word), other scripts by words.
_UNIT = re.compile(rf"[{HAN_RANGES}]|[^\W_{HAN_RANGES}]+(?:[.'][^\W_{HAN_RANGES}]+)*")


def substitution_units(text: str, function_words: bool = False) -> list[str]:
    """Content words in order (stemmed), Chinese as single characters; with
    ``function_words`` the stopwords stay (they mark roles: from/to, by)."""
    from memex.text import STOPWORDS  # local: text.py must not depend on values.py

    out = []
    for unit in _UNIT.findall(nfkc(text).casefold()):
        if not function_words and (unit in STOPWORDS or unit in _ZH_STOP_CHARS):
            continue
        if len(unit) == 1 and unit.isascii() and not unit.isdigit():
            continue
        out.append(stem(unit))
    return out


def common_ends(ua: list[str], ub: list[str]) -> tuple[int, int]:
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
    ua, ub = substitution_units(a), substitution_units(b)
    if len(ua) != len(ub) or len(ua) < 2:
        return False
    head, tail = common_ends(ua, ub)
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
    ua, ub = substitution_units(a, True), substitution_units(b, True)
    if len(ua) != len(ub) or ua == ub or sorted(ua) != sorted(ub):
        return False
    head, tail = common_ends(ua, ub)
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


# How many units (words; CJK characters) two texts must open with to share a
# topic, and how little of the rest they may share to say different things.
MIN_SHARED_OPENING = 4
MAX_REST_OVERLAP = 0.25


def changes_statement(a: str, b: str) -> bool:
    """The same opening, then a different statement: "用户偏好用中文回复" /
    "用户偏好简洁的回答", "The user wants commit messages in the imperative
    mood" / "... in the past tense". A multilingual model scores such
    pairs like paraphrases (0.93-0.95 on the query side), though only the
    topic is shared.

    The texts open with at least :data:`MIN_SHARED_OPENING` equal units;
    what follows (after any common ending) is non-empty on both sides,
    shares no Latin word, name or number, and under
    :data:`MAX_REST_OVERLAP` of its content characters. A paraphrase
    rewords the opening or keeps the fact's words ("数据库连接池的大小是20" /
    "数据库连接池最多20个连接" share "20"). Not one of :data:`GUARDS
    <memex.dedup.values.GUARDS>`: dedup asks it where the multilingual
    model's cosine decides (docs/models.md); consolidation does not.
    """
    from memex.text import STOPWORDS  # local: text.py must not depend on this module

    ua = _UNIT.findall(nfkc(a).casefold())
    ub = _UNIT.findall(nfkc(b).casefold())
    head, tail = common_ends(ua, ub)
    if head < MIN_SHARED_OPENING:
        return False
    rest_a = {u for u in ua[head : len(ua) - tail] if u not in STOPWORDS and u not in _ZH_STOP_CHARS}
    rest_b = {u for u in ub[head : len(ub) - tail] if u not in STOPWORDS and u not in _ZH_STOP_CHARS}
    if not rest_a or not rest_b:
        return False
    shared = rest_a & rest_b
    if any(not is_han(u) for u in shared):
        return False
    return len(shared) / len(rest_a | rest_b) < MAX_REST_OVERLAP

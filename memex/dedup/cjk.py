"""Chinese, Japanese and Korean text in dedup: when cosine may decide, and
the changed values a multilingual model scores like paraphrases.

Words are not separated by spaces in these scripts, so the word-level
guards of :mod:`memex.dedup.wording` see a Chinese sentence as single
characters. The checks here run only where cosine decides for CJK text
(a model profile with ``cjk_cosine``, the multilingual one); measured in
docs/models.md ("Chinese dedup").
"""

from __future__ import annotations

import re

from memex.text import CJK_RANGES, cjk_share, has_cjk, nfkc

# The bundled all-MiniLM-L6-v2 is an English model: most Chinese characters
# become [UNK], so two unrelated Chinese sentences can score a cosine of
# 1.0. Unless the model's profile trusts it with CJK (multilingual-e5),
# cosine only decides a duplicate when both texts are mostly not CJK.
MAX_CJK_SHARE = 0.2


def cosine_trusted(text: str) -> bool:
    """Whether ``text`` is mostly not CJK (an English model's cosine means something)."""
    return cjk_share(text) < MAX_CJK_SHARE


# One CJK character, or one run of other letters and digits (a Latin word:
# "slack", "utc", "redis7"); a Latin run never swallows the CJK after it.
_SWAP_UNIT = re.compile(rf"[{CJK_RANGES}]|[^\W_{CJK_RANGES}]+")
MAX_SWAPPED_CJK = 4  # characters: a name, a place, a product ("法兰克福", "飞书", "北京时间")
MIN_KEPT_CJK = 4  # units the two sentences share around the swap


def _a_name(units: list[str]) -> bool:
    """At most MAX_SWAPPED_CJK CJK characters, or a single Latin word."""
    cjk = sum(1 for u in units if has_cjk(u))
    if cjk:
        return cjk == len(units) <= MAX_SWAPPED_CJK
    return len(units) == 1


def swaps_cjk_span(a: str, b: str) -> bool:
    """One sentence with one short span replaced in place and the rest kept:
    how a changed name or place looks in Chinese, where words are not
    separated (:func:`memex.dedup.wording.substitutes_one_word` sees one
    swapped word; here a name is several characters). Either side of the
    swap may be a Latin word ("团队用飞书沟通" / "团队用Slack沟通", "时间用UTC" /
    "时间用北京时间")."""
    from difflib import SequenceMatcher  # only on a write's dedup check, not on search's start-up

    ua = _SWAP_UNIT.findall(nfkc(a).casefold())
    ub = _SWAP_UNIT.findall(nfkc(b).casefold())
    ops = [op for op in SequenceMatcher(None, ua, ub, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = ops[0]
    kept = len(ua) - (i2 - i1)
    swapped = ua[i1:i2] + ub[j1:j2]
    return (
        _a_name(ua[i1:i2]) and _a_name(ub[j1:j2]) and kept >= MIN_KEPT_CJK
        and any(has_cjk(u) for u in swapped)
    )


# "Only needs" / "only uses": the requirement of the other text narrowed
# ("发布前必须跑完整的回归测试" / "发布前只需要跑冒烟测试", 0.95 with
# multilingual-e5 on the passage side). 只有…才 ("only if") restates a
# requirement and is not among them.
_NARROWED = re.compile(r"只需|仅需|只用|只要求")


def narrows_requirement(a: str, b: str) -> bool:
    """One text says what "only" needs doing and the other does not."""
    return bool(_NARROWED.search(a)) != bool(_NARROWED.search(b))


def changes_cjk_value(a: str, b: str) -> bool:
    """A changed value in CJK text that the value guards do not see."""
    return swaps_cjk_span(a, b) or narrows_requirement(a, b)

"""The one place that decides what counts as Chinese, Japanese or Korean
text, how English words are stemmed and how text is cut into search tokens
(memex.text). Two senses of "CJK" are kept on purpose, each pinned here:
Han (Chinese characters, one about a word) and CJK (Han, kana and hangul,
the scripts taken character by character)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memex.context.extract import extract_rules
from memex.context.tokens import heuristic_count
from memex.dedup.cjk import cosine_trusted
from memex.dedup.wording import substitution_units
from memex.search.fusion import coverage
from memex.text import (
    cjk_count,
    cjk_share,
    han_count,
    has_cjk,
    has_han,
    has_hangul,
    is_han,
    possessive,
    stem,
    tokens,
)

PACKAGE = Path(__file__).resolve().parent.parent / "memex"


@pytest.mark.parametrize(("char", "cjk", "han"), [
    ("中", True, True),  # unified ideograph
    ("㐀", True, True),  # extension A
    ("豈", True, True),  # compatibility ideograph
    ("𠀀", True, True),  # extension B (outside the BMP)
    ("か", True, False),  # hiragana
    ("カ", True, False),  # katakana
    ("한", True, False),  # hangul syllable
    ("ㅎ", False, False),  # a lone jamo is not a syllable
    ("a", False, False),
    ("é", False, False),
    ("。", False, False),  # CJK punctuation is punctuation, not a script
    ("Ｓ", False, False),  # full-width Latin
])
def test_each_character_is_sorted_into_one_or_both_senses(char: str, cjk: bool, han: bool) -> None:
    assert has_cjk(char) is cjk
    assert has_han(char) is han
    assert is_han(char) is han
    assert has_hangul(char) is (char == "한")


def test_counts_and_share() -> None:
    assert cjk_count("用户はソウル에 살아요 ok") == 10  # 用户 は ソウル 에 살아요: 2 + 1 + 3 + 1 + 3
    assert han_count("用户はソウル") == 2
    assert cjk_share("   ") == 0.0
    assert cjk_share("中a") == 0.5


def test_tokens_cut_every_cjk_script_into_bigrams() -> None:
    assert tokens("Redis 缓存配置") == ["redis", "缓存", "存配", "配置"]
    assert tokens("ソウル") == ["ソウ", "ウル"]
    assert tokens("서울") == ["서울"]
    assert tokens("GitHub's v1.2 API") == ["github's", "v1.2", "api"]


@pytest.mark.parametrize(("word", "expected"), [
    ("owns", "own"), ("owned", "own"), ("uploads", "upload"), ("GitHub's", "github"),
    ("deploying", "deploy"), ("use", "use"), ("is", "is"),
])
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stem_joins_the_forms_of_a_word() -> None:
    assert stem("prefers") == stem("prefer")
    assert stem("deploys") == stem("deployed") == stem("deploying")


def test_possessive() -> None:
    assert possessive("Anna's") == possessive("Anna\u2019s") == "Anna"


def test_callers_use_the_sense_they_need() -> None:
    """Token estimates and cosine trust take kana and hangul as CJK; dedup's
    word units and the length of an extracted rule count Chinese characters."""
    assert heuristic_count("ソウル") == 3  # one token per character, like 中文
    assert not cosine_trusted("ソウルに住んでいます")
    # Dedup's units: Chinese one character each, a Japanese kana run a word.
    assert substitution_units("用户 すし") == ["用", "户", "すし"]
    # A rule of four Chinese characters is long enough (twelve letters elsewhere).
    assert [e.text for e in extract_rules([{"role": "user", "content": "必须测试"}])] == ["必须测试"]
    # Search coverage keeps CJK bigrams whole and stems English words.
    assert coverage("deploys 缓存", "We deployed 缓存 settings") == (2, 2)


_RANGE = re.compile(r"\\u(?:3040|3400|4e00|ac00)|[\u3040\u3400\u4e00\uac00]-")


def test_no_other_module_spells_a_cjk_range() -> None:
    """Every CJK rule goes through memex.text; a second spelling drifts (six did)."""
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "text.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _RANGE.search(node.value):
                spelled.append(str(path.relative_to(PACKAGE)))
    assert spelled == []

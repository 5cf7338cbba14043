"""Chinese numbers, times, durations and bounds in the form the value guards compare.

The value guard (:mod:`memex.dedup.values`) compares the numbers two texts
state. Chinese writes one value many ways: 四张 / 4块 (four), 十点 / 10点 /
10:00 (ten o'clock), 三十分钟 / 半小时 (thirty minutes), 一个月 / 30天,
百分之八十 / 80%. Read as raw characters they differ and every Chinese
paraphrase that restates a number in another form was refused as a
"changed value". :func:`cjk_values` reads them as values: the same value
gives the same token, a different value a different one (四张 / 八张 still
differ). docs/write-path.md has the measured effect.

What is read (NFKC first, so full-width digits are ASCII already):

- numerals: 一..九, 零/〇, 两, 十/百/千/万/亿 compounds (二十五, 一百零五,
  两万五千), digits with 万/亿 (3万 = 30000), 百分之N (a percentage);
- clock times: [上午|下午|晚上|凌晨...] N点/时/時 [M分|半|整] -> "H:MM",
  afternoon and evening hours moved past noon (下午三点 = 15:00), the small
  hours of the night not (夜里两点 = 凌晨两点 = 2:00);
- durations: N 毫秒/秒/分钟/小时/钟头/天/周/星期/个月/年, 半小时, 一个半小时 ->
  seconds (a month is 30 days, a year 365), so 一个月 equals 30天, and
  每个季度 equals 三个月;
- weekdays: 周一 / 星期一 / 礼拜一 -> "monday", the word the English side
  of the guard already uses;
- bounds: 不低于 / 至少 / 以上 are one "at least", 不超过 / 最多 / 以内 one
  "at most"; they are comparison words, not negations, and two texts with
  opposite bounds disagree (:func:`bounds`).

A space between a number and its unit ("45 分钟") changes nothing. Each
pattern is a single regular-expression pass: linear in the text.
"""

from __future__ import annotations

import re

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
           "八": 8, "九": 9}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_NUMERAL = "零〇一二两三四五六七八九十百千万亿"
# A number: Chinese numerals, or ASCII digits (with decimals) optionally
# scaled by 万/亿.
_NUM = rf"(?:\d+(?:\.\d+)?[万亿]?|[{_NUMERAL}]+)"

# Words that contain a numeral character but carry no quantity.
NON_NUMBERS = re.compile(
    r"统一|一起|一样|一直|一定|一些|一般|一致|唯一|进一步|一旦|一下|一切|一律|万一|"
    r"一边|不一|同一|一向|一贯|十分(?!钟)|千万|万不|一次性|一同|一再|一度|一共|"
    r"一方面|一会|之一|三思|五花八门|乱七八糟|一模一样|百度|万维网|"
    # 一点 is "a little" unless a time of day is around it (下午一点, 一点半).
    r"(?<!上午|下午|晚上|凌晨|中午|早上)(?<![零〇一二两三四五六七八九十])一点(?![半整钟0-9零〇一二两三四五六七八九十])"
)
_WEEKDAY_NAMES = {"一": "monday", "二": "tuesday", "三": "wednesday", "四": "thursday", "五": "friday",
                  "六": "saturday", "日": "sunday", "天": "sunday", "末": "weekend"}
_WEEKDAY = re.compile(r"(?:周|星期|礼拜)([一二三四五六日天末])")
_AFTERNOON = ("下午", "晚上", "傍晚", "夜里", "晚")
# 夜里两点 and 晚上一点 are small hours (2:00, 1:00), not 14:00 / 13:00.
_NIGHT = ("晚上", "夜里", "晚")
_SMALL_HOURS = 5
# A quarter of a year, the count implied (每个季度, 一季度): three months.
_QUARTER = re.compile(r"(?:每|一)个?季度")
_QUARTER_SECONDS = 3 * 2592000
_TIME = re.compile(
    rf"(上午|早上|早晨|中午|下午|晚上|傍晚|夜里|凌晨|晚)?\s*({_NUM})\s*[点時时](?:\s*({_NUM})\s*分|(半)|整)?(?!钟|间|候|代)"
)
# 日 is left out: 15日 is a day of the month.
_SECONDS = {"毫秒": 0.001, "秒": 1, "秒钟": 1, "分钟": 60, "小时": 3600, "个小时": 3600, "钟头": 3600, "个钟头": 3600,
            "天": 86400, "周": 604800, "个星期": 604800, "星期": 604800, "个月": 2592000,
            "年": 31536000}
_DURATION = re.compile(
    rf"({_NUM})?\s*(个)?(半)?(毫秒|秒钟|秒|分钟|个小时|小时|个钟头|钟头|天|周|个星期|星期|个月|年)(半)?"
)
_PERCENT = re.compile(rf"百分之({_NUM})")
_NUMBER = re.compile(_NUM)
# Comparison words: "at least" and "at most" in their usual spellings. The
# longer spellings come first so 不低于 is not read as 低于.
_AT_LEAST = "不低于|不少于|不小于|不短于|至少|最少|最低|以上|起码"
_AT_MOST = "不高于|不多于|不大于|不超过|不能超过|不得超过|不可超过|不长于|最多|最大|最长|最高|以内|以下|上限"
_BOUND = re.compile(rf"({_AT_LEAST})|({_AT_MOST})|(低于|少于|小于|短于)|(高于|多于|大于|超过|长于)")
_BOUND_NAMES = ("at-least", "at-most", "below", "above")


def parse_number(token: str) -> float | None:
    """二十五 -> 25, 一百零五 -> 105, 两万五千 -> 25000, 3万 -> 30000, 12 -> 12."""
    if token[0].isdigit():
        scale = _BIG_UNITS.get(token[-1], 1)
        digits = token[:-1] if scale != 1 else token
        try:
            return float(digits) * scale
        except ValueError:
            return None
    total = section = 0
    digit: int | None = None
    for ch in token:
        if ch in _DIGITS:
            if digit:  # 二〇二六: digits read one by one (一百零五: the 零 only holds a place)
                return _digit_string(token)
            digit = _DIGITS[ch]
        elif ch in _SMALL_UNITS:
            section += (1 if digit is None else digit) * _SMALL_UNITS[ch]
            digit = None
        elif ch in _BIG_UNITS:
            total += (section + (digit or 0)) * _BIG_UNITS[ch]
            section, digit = 0, None
        else:
            return None
    return float(total + section + (digit or 0))


def _digit_string(token: str) -> float | None:
    if all(ch in _DIGITS for ch in token):
        return float("".join(str(_DIGITS[ch]) for ch in token))
    return None


def _fmt(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _time(m: re.Match[str]) -> str | None:
    hour = parse_number(m.group(2))
    if hour is None or hour != int(hour) or not 0 <= hour <= 24:
        return None
    minute = 30.0 if m.group(4) else parse_number(m.group(3)) if m.group(3) else 0.0
    if minute is None or minute != int(minute) or not 0 <= minute < 60:
        return None
    if m.group(1) in _AFTERNOON and hour < 12 and not (m.group(1) in _NIGHT and hour < _SMALL_HOURS):
        hour += 12
    return f"{int(hour)}:{int(minute):02d}"


def _duration(m: re.Match[str]) -> str | None:
    count_text, _, half_before, unit, half_after = m.groups()
    count = parse_number(count_text) if count_text else (0.0 if half_before else None)
    if count is None:
        return None
    if unit == "年" and count >= 1000:
        return None  # 2026年 is a year, not 2,026 years
    count += 0.5 if (half_before or half_after) else 0.0
    return f"{_fmt(round(count * _SECONDS[unit], 6))} s"


def cjk_values(text: str) -> tuple[set[str], str]:
    """The values a (NFKC) text states in Chinese forms, and the text with
    those spans blanked out (for the caller's own number pass)."""
    text = NON_NUMBERS.sub(" ", text)
    found: set[str] = set()

    def take(read: str | None, m: re.Match[str]) -> str:
        if read is None:
            return m.group(0)
        found.add(read)
        return " "

    text = _WEEKDAY.sub(lambda m: take(_WEEKDAY_NAMES[m.group(1)], m), text)
    text = _TIME.sub(lambda m: take(_time(m), m), text)
    text = _DURATION.sub(lambda m: take(_duration(m), m), text)
    text = _QUARTER.sub(lambda m: take(f"{_QUARTER_SECONDS} s", m), text)
    text = _PERCENT.sub(lambda m: take(_number_token(m.group(1)), m), text)
    for m in _NUMBER.finditer(text):
        token = m.group(0)
        if token == "一" and text[m.end() : m.end() + 1] not in _DATE_UNITS:
            # A lone 一 is mostly an article or "once" (一个迭代, 跑一次), as
            # the English side leaves out "one" and "once"; 一小时, 一点,
            # 十一, 一号 (the 1st) and 1个 were read above or stay numbers.
            continue
        if not token[0].isdigit() or token[-1] in _BIG_UNITS:  # plain ASCII numbers are the caller's
            read = _number_token(token)
            if read is not None:
                found.add(read)
    return found, _NUMBER_CJK.sub(" ", text)


_DATE_UNITS = ("号", "日", "月")
_NUMBER_CJK = re.compile(rf"[{_NUMERAL}]+|\d+(?:\.\d+)?[万亿]")


def _number_token(token: str) -> str | None:
    value = parse_number(token)
    return None if value is None else _fmt(value)


def bounds(text: str) -> set[str]:
    """The comparison words a (NFKC) text uses: "at-least", "at-most",
    "below", "above"."""
    return {_BOUND_NAMES[m.lastindex - 1] for m in _BOUND.finditer(text) if m.lastindex}


def strip_bounds(text: str) -> str:
    """The text without its comparison words (不低于 negates nothing)."""
    return _BOUND.sub(" ", text)

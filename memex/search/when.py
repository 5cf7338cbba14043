"""Relative time in a query ("last week", "yesterday", "上周") as a window of dates.

"What did we decide last week about the cache?" names a time as well as a
topic; memories created in that window get a bonus in search
(:attr:`memex.search.fusion.Fusion.time_boost`). Windows are whole days in UTC,
half-open ``[start, end)``; weeks are calendar weeks starting on Monday.
Only expressions relative to ``now`` are read; absolute dates are left to
the words themselves.
"""

from __future__ import annotations

import datetime as dt
import re

_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS_ZH = "一二三四五六日"
_NUMBERS = {"two": 2, "three": 3, "2": 2, "3": 3, "两": 2, "二": 2, "三": 3}

_EN = re.compile(
    r"\b(?P<yesterday>yesterday)\b|\b(?P<today>today|this morning)\b|\b(?P<thisweek>this week)\b"
    r"|\b(?P<lastweek>last week)\b|\b(?P<n>two|three|2|3) weeks ago\b"
    r"|\bon (?P<wd>" + "|".join(_WEEKDAYS_EN) + r")\b",
    re.IGNORECASE,
)
_ZH = re.compile(
    r"(?P<yesterday>昨天)|(?P<today>今天)|(?P<thisweek>这周|本周)|(?P<lastweek>上周|上个星期|上星期)"
    r"|(?P<n>两|二|三)周前|(?:周|星期)(?P<wd>[一二三四五六日])"
)


# A bare weekday is often a plan ("can we deploy on Friday?"); it names a past
# day only next to words that look back.
_PAST_EN = re.compile(r"\b(last|did|decided|agreed|said|was|were|discussed|talked|mentioned|settled)\b", re.I)
_PAST_ZH = re.compile("了|过|定的|说的|讨论的|聊的")


def _day(moment: dt.datetime) -> dt.datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def window(query: str, now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    """The days a query's relative time expression names, or None."""
    match = _EN.search(query) or _ZH.search(query)
    if match is None:
        return None
    today = _day(now.astimezone(dt.timezone.utc))
    monday = today - dt.timedelta(days=today.weekday())
    one_day, one_week = dt.timedelta(days=1), dt.timedelta(days=7)
    kind = match.lastgroup
    if kind == "yesterday":
        return today - one_day, today
    if kind == "today":
        return today, today + one_day
    if kind == "thisweek":
        return monday, monday + one_week
    if kind == "lastweek":
        return monday - one_week, monday
    if kind == "n":
        weeks = _NUMBERS[match.group("n").lower()]
        return monday - weeks * one_week, monday - (weeks - 1) * one_week
    if not (_PAST_EN.search(query) or _PAST_ZH.search(query)):
        return None
    name = match.group("wd").lower()
    wanted = _WEEKDAYS_EN.index(name) if name in _WEEKDAYS_EN else _WEEKDAYS_ZH.index(name)
    # The latest such weekday before today ("on Tuesday" asked on a Thursday).
    back = (today.weekday() - wanted) % 7 or 7
    start = today - dt.timedelta(days=back)
    return start, start + one_day


def parse_created(text: str) -> dt.datetime | None:
    """A memory's ``created`` (ISO 8601, "Z" or an offset) as an aware datetime."""
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def inside(created: str, span: tuple[dt.datetime, dt.datetime]) -> bool:
    moment = parse_created(created)
    return moment is not None and span[0] <= moment < span[1]

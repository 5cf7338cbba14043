"""Consolidation's reading of "carries": stricter than dedup's.

Consolidation hides a memory for good at the end of a session, where a
duplicate dropped at capture is only not written twice, so it reads
"carries" more strictly than :func:`memex.dedup.subject.keeps_apart` does
(issue 28: a group's representative carries the group's information, or
the group is not merged). Used by memex/consolidation/consolidate.py only;
chosen on REALTALK's choosing chats (docs/write-path.md, "Real
conversations").
"""

from __future__ import annotations

from memex.dedup.cjk import cosine_trusted
from memex.dedup.subject import acts, parts, wording
from memex.dedup.talk import apart, pointers

# A statement of at most this many words of content ("Just took a test",
# "Shiver me timbers", "I don't really like fish") says what it says through
# the talk around it; a longer turn holding its words says something else
# with them. Only the same words carry it.
SHORT_WORDS = 2
# A short turn that points at whom it is said to ("Then you must like
# Ellis") or with a word its representative does not use may point at
# something else. A turn of a conversation stating two words or more, or
# pointing with "that", "it", "she", "they" or "the same", is read by
# memex.dedup.talk.leans_on_talk, as dedup reads it; these two readings
# add the short notes without a speaker, one-word turns and the pointing "you".
POINTER_WORDS = 3


def stays_apart(kept: str, cand: str) -> str | None:
    """Why consolidation may not hide ``cand`` behind ``kept``, or None:
    :func:`memex.dedup.talk.apart` (the subject checks, then a turn that
    leans on the talk), then "short": ``cand`` states at most
    :data:`SHORT_WORDS` words of content, asking nothing, with no greeting,
    thanks, offer or farewell, and ``kept`` is not the same words;
    "pointer": ``cand`` states at most :data:`POINTER_WORDS` words of
    content and points with a word ``kept`` does not use (:func:`pointers`).
    A question or small talk (a greeting, thanks, offer or farewell: "Thanks,
    your help means a lot") is read as :func:`keeps_apart` reads it."""
    reason = apart(kept, cand)
    if reason is not None or not (cosine_trusted(kept) and cosine_trusted(cand)):
        return reason
    if wording(kept) == wording(cand):
        return None
    stated, asked, asks = parts(cand)
    if asks or acts(cand):
        return None  # a question or small talk: read as dedup reads it
    if len(stated) <= SHORT_WORDS:
        return "short"
    if len(stated) <= POINTER_WORDS and pointers(cand) - pointers(kept):
        return "pointer"
    return None


def carries(kept: str, cand: str) -> bool:
    """Whether consolidation may hide ``cand`` behind ``kept`` (:func:`stays_apart`)."""
    return stays_apart(kept, cand) is None

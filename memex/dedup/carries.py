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

import re

from memex.dedup.cjk import cosine_trusted
from memex.dedup.subject import acts, body, keeps_apart, parts, wording

# A statement of at most this many words of content ("Just took a test",
# "Shiver me timbers", "I don't really like fish") says what it says through
# the talk around it; a longer turn holding its words says something else
# with them. Only the same words carry it.
SHORT_WORDS = 2
# Words that point outside the turn: what "that", "it", "she", "they",
# "you" or "the same" name in a short turn is in another turn ("That's basically
# just British food", "Yeah but they dont know that", "Feel the same as when
# I went to bed"). A short turn pointing with a word its representative does
# not use may point at something else. In a longer one the word mostly points
# inside it ("numpy is pinned below 2.0 because the ONNX wheels break with
# it"), so only turns of at most POINTER_WORDS words of content are read so.
POINTER_WORDS = 3
_POINTERS = {
    "that": "that", "thats": "that", "this": "this", "these": "these", "those": "those",
    "it": "it", "its": "it", "itself": "it", "he": "he", "him": "he", "his": "he", "hes": "he",
    "she": "she", "her": "she", "shes": "she", "they": "they", "them": "they", "their": "they",
    "theyre": "they", "same": "same",
    # Whom the turn is said to ("Then you must like Ellis" is about the
    # other person, not about the team the representative praises).
    "you": "you", "your": "you", "yours": "you", "yourself": "you", "youre": "you", "u": "you",
}
_POINTER_WORD = re.compile(r"[a-z]+(?:['’][a-z]+)?")


def pointers(text: str) -> frozenset[str]:
    """The pointing words of ``text``'s body (:data:`_POINTERS`), each read
    as its plain form ("that's", "thats" -> "that"; "her" -> "she")."""
    out = set()
    for tok in _POINTER_WORD.findall(body(text).casefold()):
        head = re.split(r"['’]", tok)[0]
        word = _POINTERS.get(tok.replace("'", "").replace("’", "")) or _POINTERS.get(head)
        if word is not None:
            out.add(word)
    return frozenset(out)


def stays_apart(kept: str, cand: str) -> str | None:
    """Why consolidation may not hide ``cand`` behind ``kept``, or None:
    :func:`keeps_apart`, then "short": ``cand`` states at most
    :data:`SHORT_WORDS` words of content, asking nothing, with no greeting,
    thanks, offer or farewell, and ``kept`` is not the same words;
    "pointer": ``cand`` states at most :data:`POINTER_WORDS` words of
    content and points with a word ``kept`` does not use (:func:`pointers`).
    A question or small talk (a greeting, thanks, offer or farewell: "Thanks,
    your help means a lot") is read as :func:`keeps_apart` reads it."""
    reason = keeps_apart(kept, cand)
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

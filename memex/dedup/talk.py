"""Turns that lean on the talk around them: carried only by the same words.

A turn of a conversation often says what it says through the turns around
it. "I think that was a good movie" names its film in the turn before; said
twice in one evening about two films, the two turns share every word and
an embedding scores them as one. "What did you do today?" asks about the
day it is asked on, "any other recommendations?" about whatever was just
recommended. Such a turn, stored, is a memory of its own: no other turn
carries it, only the same words (REALTALK's choosing chats,
docs/write-path.md "Real conversations"; on LoCoMo's and Topical-Chat's
choosing parts no duplicate is of this kind).

Dedup, the turn-echo guard and consolidation ask :func:`leans_on_talk`
beside :func:`memex.dedup.subject.keeps_apart`.
Small talk (a greeting, thanks, offer or farewell) is read by
:func:`keeps_apart`'s acts, not here: "How's it going?" greets.
"""

from __future__ import annotations

import re

from memex.dedup.cjk import cosine_trusted
from memex.dedup.subject import acts, body, parts, speaker, wording
from memex.text import plain_apostrophes

# Words that point outside the turn, each read as its plain form.
_POINTERS = {
    "that": "that", "thats": "that", "this": "this", "these": "these", "those": "those",
    "it": "it", "its": "it", "itself": "it", "he": "he", "him": "he", "his": "he", "hes": "he",
    "she": "she", "her": "she", "shes": "she", "they": "they", "them": "they", "their": "they",
    "theyre": "they", "same": "same",
    # Whom the turn is said to (consolidation reads it: "Then you must like
    # Ellis" is about the other person; memex.dedup.carries).
    "you": "you", "your": "you", "yours": "you", "yourself": "you", "youre": "you", "u": "you",
}
_POINTER_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# What a statement points at with these is in another turn; "you" is whom
# it is said to, which :func:`memex.dedup.subject.other_subject` reads.
STATEMENT_POINTERS = frozenset("that this these those it he she they same".split())


def pointers(text: str) -> frozenset[str]:
    """The pointing words of ``text``'s body, each read as its plain form
    ("that's", "thats" -> "that"; "her" -> "she")."""
    out = set()
    for tok in _POINTER_WORD.findall(plain_apostrophes(body(text)).casefold()):
        word = _POINTERS.get(tok.replace("'", "")) or _POINTERS.get(tok.split("'")[0])
        if word is not None:
            out.add(word)
    return frozenset(out)


def leans_on_talk(kept: str, cand: str) -> str | None:
    """Why ``cand`` is carried by no other wording than its own, or None.

    "question": ``cand`` asks (what it asks is in the talk it is asked in);
    "pointer": ``cand``, a turn with a ``Speaker:`` prefix, states something
    with a word that points at another turn (:data:`STATEMENT_POINTERS`). Neither when ``kept`` is the same
    words, when ``cand`` greets, thanks, offers or takes leave (small talk
    is read by its acts), or for text that is mostly CJK (left to the other
    layers, as :mod:`memex.dedup.subject` leaves it).
    """
    if not (cosine_trusted(kept) and cosine_trusted(cand)):
        return None
    if wording(kept) == wording(cand) or acts(cand):
        return None
    if parts(cand)[2]:
        return "question"
    if speaker(cand) is not None and pointers(cand) & STATEMENT_POINTERS:
        # A note written to be read alone points inside itself ("numpy
        # stays below 2.0 because the ONNX wheels break with it"); a turn
        # said by someone points at the talk.
        return "pointer"
    return None

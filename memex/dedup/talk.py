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

A statement said by someone is the same kind of memory: said again in
other words, on another day or in answer to something else, it is news of
its own moment ("my car runs great" days after "so far it runs smoothly").
On every choosing set only small talk was ever rightly dropped by a
similarity layer.

Dedup and consolidation ask :func:`apart` (the subject checks of
:func:`memex.dedup.subject.keeps_apart`, then these); the turn-echo guard
asks :func:`leans_on_talk` beside its own reading of a restatement.
Small talk (a greeting, thanks, offer or farewell) is read by
:func:`keeps_apart`'s acts, not here: "How's it going?" greets.
"""

from __future__ import annotations

import re

from memex.dedup.cjk import cosine_trusted
from memex.dedup.subject import acts, body, keeps_apart, parts, speaker, wording
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
# A turn with a ``Speaker:`` prefix stating this many words of content or
# more is carried only by the same words, small talk around it or not
# ("Thanks! My car has been running great since"). On every choosing set
# (REALTALK, LoCoMo, Topical-Chat, MSC; docs/write-path.md "Real
# conversations") each right drop of a turn by a similarity layer was small
# talk stating at most one word (one offer of four aside), and each wrong
# one a statement of two or more.
STATEMENT_WORDS = 2


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

    "statement": ``cand``, a turn with a ``Speaker:`` prefix, states at
    least :data:`STATEMENT_WORDS` words of content (small talk around them
    or not);
    "question": ``cand`` asks (what it asks is in the talk it is asked in);
    "pointer": ``cand``, a turn with a ``Speaker:`` prefix, states something
    with a word that points at another turn (:data:`STATEMENT_POINTERS`).
    None when ``kept`` is the same words or the text is mostly CJK (left to
    the other layers, as :mod:`memex.dedup.subject` leaves it); "question"
    and "pointer" not when ``cand`` greets, thanks, offers or takes leave
    (small talk is read by its acts).
    """
    if not (cosine_trusted(kept) and cosine_trusted(cand)):
        return None
    if wording(kept) == wording(cand):
        return None
    stated, _, asks = parts(cand)
    if speaker(cand) is not None and len(stated) >= STATEMENT_WORDS:
        # Said by someone, a statement is an utterance of its moment: said
        # again, on another day or in answer to something else, it is news
        # again ("my car runs great" days after "so far it runs smoothly").
        return "statement"
    if acts(cand):
        return None
    if asks:
        return "question"
    if speaker(cand) is not None and pointers(cand) & STATEMENT_POINTERS:
        # A note written to be read alone points inside itself ("numpy
        # stays below 2.0 because the ONNX wheels break with it"); a turn
        # said by someone points at the talk.
        return "pointer"
    return None


def apart(kept: str, cand: str) -> str | None:
    """Why ``cand`` is not carried by ``kept``: :func:`memex.dedup.subject.keeps_apart`'s
    reason, else :func:`leans_on_talk`'s, else None."""
    return keeps_apart(kept, cand) or leans_on_talk(kept, cand)

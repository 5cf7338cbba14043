"""Who a memory is about and what it says: the checks that keep two
statements apart when an embedding scores them alike.

On conversations people really had (docs/write-path.md, "Real
conversations"), two turns of one topic score like paraphrases: "Emi: I've
been to the Grand Canyon" and "Elise: the Grand Canyon is worth a
helicopter tour", a question and its answer, "I went to the group
yesterday" and "the group made me feel accepted". A duplicate says nothing
the kept memory does not, about the same subject; these checks look for
what an embedding does not see:

- the **subject**: a ``Speaker:`` prefix names who says it (two speakers'
  turns are two memories); first person on one side and someone named or
  addressed on the other is about two people;
- **a question is not its answer**: a text that asks something and one
  that states something;
- **new words**: the content words one text has and the other lacks, after
  a crude stem, leaving out phatic words (greetings, thanks, farewells,
  "wow", "awesome") that say nothing about anyone. A date, a place, a
  reason or a caption the kept memory lacks is such a word;
- **small talk**: a greeting, thanks or farewell is carried only by a turn
  that does the same; a turn of no content word and no such act (a
  reaction: "True!", "You too.") by no other turn at all.

They read English words only: for text that is mostly Chinese, Japanese or
Korean (where words are not separated) they keep out of the way and the
other layers decide, as before.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memex.dedup.cjk import cosine_trusted
from memex.dedup.values import names
from memex.dedup.wording import stem
from memex.text import SPEAKER_PREFIX, STOPWORDS, content_tokens, plain_apostrophes, strip_injected

# A prefix that labels a note rather than naming who speaks ("Note: ...",
# "Decision: ..."): not a speaker.
_LABELS = frozenset(
    """note notes tip tips todo fixme warning warn caution important reminder remember fact
    facts decision decisions preference preferences constraint rule rules summary context
    status update fix bug issue question answer example examples info error result output
    step steps goal plan idea lesson gotcha postmortem observation hint why how what when
    where who later now today""".split()
)

# Words that carry a social function and no information about anyone:
# greetings, farewells, thanks, acknowledgements and exclamations. A turn
# made only of them ("Thanks, Evan! I really appreciate it.") repeats
# nothing a later question could need.
_PHATIC = frozenset(
    w
    for w in """hey hi hello hiya yo bye goodbye cheers later soon ya thanks thank thx appreciate
    appreciated grateful yes yeah yep yup sure definitely absolutely totally indeed agreed agree
    okay ok alright exactly wow cool great awesome amazing nice good glad fantastic wonderful
    lovely really oh ah haha lol hmm please sorry worries anytime again yay super stoked gonna
    wanna gotta greatly""".split()
) | frozenset(
    # Emphasis: "run the whole test suite before every single commit" says
    # what "run the test suite before every commit" says.
    "whole entire single every very quite just actually simply basically literally truly".split()
) | frozenset(
    # Modal verbs frame a statement ("must not use" / "do not use").
    "must shall might may".split()
) | frozenset(
    # Inflections of the words above (compared as written, not stemmed:
    # "lovely" and "love" share a stem).
    "thanked thanking appreciates appreciating".split()
)
# Set phrases of the same kind, taken out before the words are read: their
# words ("see", "take", "wait", "support", "one") say something elsewhere.
_PHATIC_PHRASES = re.compile(
    r"\b(?:can'?t wait|have a (?:good|great|nice) (?:one|day|time|night|weekend)|take it easy|take care(?! of)"
    r"|(?:thanks|thank you) (?:so much )?for (?:the|your) (?:support|help|kind words|encouragement)"
    r"|(?:your|the|for the) (?:kind words|support|encouragement)|your words|sure thing|no (?:problem|worries)"
    r"|(?:it )?means? (?:a lot|so much|the world)|a lot|so much|of course|you'?re welcome"
    r"|(?:good|great|nice) to (?:see|hear from|talk to|chat with|catch up with) you(?: again)?"
    r"|(?:good|great|nice) (?:talking|chatting) (?:to|with) you|(?:let'?s )?catch up (?:soon|later)"
    r"|how(?:'s| is) it going|how have you been|how'?ve you been|what'?s (?:been )?up|what'?s new|anything new"
    r"|what (?:have|'?ve) you been up to|how are you(?: doing)?"
    r"|since (?:the |our )?last time|since we (?:last )?(?:talked|chatted|spoke)|long time no (?:see|talk|chat)"
    r"|(?:it'?s )?been a while|hope (?:all is|you'?re|everything is) (?:good|well|ok|okay|doing (?:good|well))"
    r"|(?:talk|speak) (?:to you )?(?:soon|later)|see (?:you|ya)(?: (?:soon|later|around))?"
    r"|catch you (?:later|soon)"
    # Leave-taking the farewell act names (below): nothing else in them.
    r"|(?:good|great|nice|fun) (?:talking|chatting|chat)(?: (?:to|with) you)?|(?:thanks|thank you) for the chat"
    r"|enjoy the rest of your (?:day|night|evening|weekend)|good (?:day|night)"
    # Surprise and agreement said to the turn before ("No, serious?", "Are
    # you serious?", "Makes sense, I guess"): reactions, chosen on
    # Topical-Chat's third choosing block (docs/write-path.md).
    r"|(?:are )?(?:you )?serious(?:ly)?(?=\s*[?!])|no way|(?:that |it )?makes? (?:total |perfect )?sense|i guess"
    # Sympathy said to the turn before ("Oh dang that sucks", "Dang"):
    # REALTALK's choosing chats.
    r"|(?:dang|damn|darn)(?: (?:it|that sucks))?|that sucks)\b",
    re.IGNORECASE,
)
# What a phatic turn does: greet, thank, offer help, take leave. A turn made only of
# phatic words says nothing but that, so it is carried by a turn of the
# same speaker that does the same ("Thanks, Evan! I really appreciate it."
# by "Thanks, Evan. Your support means a lot."), never by one that does
# not (a greeting is not carried by "Totally agree. I'm off to do some
# research."). Agreement and exclamations ("yeah", "wow", "awesome") beside
# other words add nothing to keep; a turn of nothing else is a reaction
# (keeps_apart).
_ACTS = {
    "greeting": re.compile(
        r"\b(?:hey|hi|hello|hiya|(?:good|great|nice) to (?:see|hear from|talk to|chat with|catch up with|meet) you"
        r"|how(?:'s| is) it going|how have you been|how'?ve you been|what'?s up|long time no (?:see|talk|chat)"
        r"|been a while|(?<!a )good (?:morning|afternoon|evening))\b"
        # A bare "Morning!" opening a turn, as people text it (REALTALK).
        r"|^\W*(?:oh,? )?(?:and )?morning\b", re.IGNORECASE),
    "thanks": re.compile(r"\b(?:thanks|thank you|thx|appreciate|appreciated|grateful|means? (?:a lot|so much))\b",
                         re.IGNORECASE),
    "offer": re.compile(
        r"\b(?:i'?m|i am) (?:always )?here (?:for you|if you need|to help)|let me know if you need|if you need anything"
        r"|(?:happy|glad) to help|always here\b", re.IGNORECASE),
    "farewell": re.compile(
        r"\b(?:bye|goodbye|see (?:you|ya)|take care(?! of)|take it easy|(?:talk|speak) (?:to you )?(?:soon|later)"
        r"|catch you (?:later|soon)|have a (?:good|great|nice) (?:one|day|night|weekend|time)"
        # Taking leave by saying how the talk was, or by wishing the rest
        # of a day: how such turns read on Topical-Chat's choosing part
        # (docs/write-path.md, "Real conversations").
        r"|(?:good|great|nice|fun) (?:talking|chatting|chat)\b(?: (?:to|with) you)?|(?:thanks|thank you) for the chat"
        r"|enjoy the rest of your (?:day|night|evening|weekend)|good (?:day|night)|cheers)\b|^\s*later\b",
        re.IGNORECASE),
}


def acts(text: str) -> frozenset[str]:
    """The phatic acts of ``text``: "greeting", "thanks", "offer" (of
    help), "farewell"."""
    b = body(text)
    return frozenset(name for name, pattern in _ACTS.items() if pattern.search(b))


# Contractions whose first part is a function word ("i'm", "that's",
# "can't"): no content of their own.
_FUNCTION_HEADS = frozenset("can don won didn doesn isn aren wasn weren let there here".split())
# "I" as the subject (not "my", "me": "in my life" says who owns, not who does).
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll)\b")
_SECOND_PERSON = re.compile(r"\b(?:you|you're|you've|you'd|you'll)\b", re.IGNORECASE)
# A sentence ends at . ! or ? before a space or the end ("Python 3.11" and
# "api.example.com" are not split), or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_INTERROGATIVE = re.compile(r"\b(?:what|where|when|who|whom|whose|why|how|which)\b")
_QUESTION_WORDS = frozenset("what where when who whom whose why how which".split())


def speaker(text: str) -> str | None:
    """The name a ``Speaker:`` prefix gives, lower case; None without one
    (or when the prefix labels a note: "Note:", "Decision:")."""
    m = SPEAKER_PREFIX.match(text.lstrip())
    if m is None:
        return None
    name = m.group(0).rstrip(" \t:：").casefold()
    return None if name in _LABELS else name


def body(text: str) -> str:
    """The text after a speaker prefix (and without what memex injects)."""
    text = strip_injected(text).lstrip()
    return text[SPEAKER_PREFIX.match(text).end():] if speaker(text) is not None else text  # type: ignore[union-attr]


# A name said to its addressee ("Thanks, Maria!", "Cool, John.", "Maria,
# that's great"): whom a turn speaks to, not what it says.
_VOCATIVE = re.compile(
    r"(?:^|(?<=[,.!?])\s*|\b(?i:hey|hi|hello|bye|thanks|thank you|yes|yeah|yep|wow|oh|congrats|sorry|sure|well"
    r"|see ya|see you|take care|later|thing)\s+)"
    r"[A-Z][\w'-]*(?=\s*[,.!?]|\s*$)"
)


def _content(text: str) -> frozenset[str]:
    """Stems of the content words of a piece of text, phatic words, the
    name of whom it addresses and function-word contractions left out."""
    out = set()
    for tok in content_tokens(_PHATIC_PHRASES.sub(" ", _VOCATIVE.sub(" ", text))):
        head = tok.split("'")[0]
        if "'" in tok and (head in STOPWORDS or head in _FUNCTION_HEADS):
            continue
        if tok not in _PHATIC:
            out.add(stem(tok))
    return frozenset(out)


@lru_cache(maxsize=4096)
def parts(text: str) -> tuple[frozenset[str], frozenset[str], bool]:
    """(words it states, words it asks about, whether it asks at all).

    A sentence ending in a question mark asks when it has a content word or
    a question word ("Where is that?"), not when it is a set phrase ("How's
    it going?", "Hey Joanna, what's been up?"). The rest states.
    """
    stated: set[str] = set()
    asked: set[str] = set()
    asks = False
    for sentence in _SENTENCE_END.split(body(text)):
        if _asks(sentence):
            # What a question asks is in its question word too: "Where is
            # it?" is not "Who is this letter from?".
            question = _content(sentence) | set(_INTERROGATIVE.findall(_PHATIC_PHRASES.sub(" ", sentence).lower()))
            asks = asks or bool(question)
            asked |= question
        else:
            stated |= _content(sentence)
    return frozenset(stated), frozenset(asked), asks


# A question typed without its question mark, as people text ("Do you play
# games", "What team games do you like", "Where do i get a box"): a sentence
# with no end mark that opens, after a word such as "oh" or "so", with a
# verb before its subject or with a question word before a verb or subject
# (not "What a day", "What the heck"). Chosen on REALTALK's choosing chats.
_BARE_QUESTION = re.compile(
    r"^\W*(?:(?:oh|ah|so|but|and|ok|okay|alright|well|wait|yeah|cool|nice|wow|lol|haha|hmm|um|also|then|hey)\W+)*"
    r"(?:(?:do|does|did|can|could|would|will|should|is|are|was|were|have|has)\s+(?:you|i|we|they|he|she|it|u)\b"
    r"|(?:what|where|when|who|why|how|which)(?:\s+\w+){0,2}?\s+(?:do|does|did|is|are|was|were|would|should"
    r"|could|can|will|have|has|i|you|we|they|he|she)\b)",
    re.IGNORECASE,
)


def _asks(sentence: str) -> bool:
    """Whether a sentence asks: it ends in a question mark, or it has no end
    mark and reads as a question (:data:`_BARE_QUESTION`)."""
    end = sentence.rstrip()
    if end.endswith("?"):
        return True
    return not end.endswith((".", "!")) and _BARE_QUESTION.match(end) is not None


def words(text: str) -> frozenset[str]:
    """Stems of the content words of ``text``'s body (phatic words out)."""
    stated, asked, _ = parts(text)
    return stated | asked


# Two stems share a word when one begins the other ("embedd" /
# "embedding", "commit" / "committ"; five letters at least: "help" is not
# "helpful") or they begin alike for
# long enough ("allergy" / "allergic"): the crude stemmer leaves such
# pairs apart.
_SHARED_START = 5
_SHARED_ROOT = 6


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) >= _SHARED_START and long.startswith(short):
        return True
    return len(short) >= _SHARED_ROOT and long[:_SHARED_ROOT] == short[:_SHARED_ROOT]


def _missing(these: frozenset[str], have: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in these - have if not any(_same_word(w, h) for h in have))


def new_words(kept: str, cand: str) -> frozenset[str]:
    """What ``cand`` says in words ``kept`` does not have: a statement's
    words against what ``kept`` states, a question's against what it asks
    (an answer is not its question, nor a question its answer)."""
    ks, ka, _ = parts(kept)
    cs, ca, _ = parts(cand)
    return _missing(cs, ks) | _missing(ca, ka)


def _named(text: str) -> set[str]:
    """Probable names in the body ("Marta moved to Lisbon": marta, lisbon)."""
    return {n for n in names(body(text)) if n != "i" and not n.startswith("i'")}


def other_subject(a: str, b: str) -> str | None:
    """Why ``a`` and ``b`` are about different people, or None.

    "speaker": two speaker prefixes name two people. "person": one says
    "I" and the other says "you" (and not "I"), or one says "I" and the
    other names someone the first does not (its own speaker aside).
    """
    sa, sb = speaker(a), speaker(b)
    if sa is not None and sb is not None and sa != sb:
        return "speaker"
    ba, bb = body(a), body(b)
    first_a, first_b = bool(_FIRST_PERSON.search(ba)), bool(_FIRST_PERSON.search(bb))
    if first_a == first_b:
        return None
    if sa is not None or sb is not None:
        # One speaker's "I" is that speaker, and a name in a turn is mostly
        # whom it addresses: the speaker prefixes decide (above).
        return None
    mine, other = (ba, bb) if first_a else (bb, ba)
    if _SECOND_PERSON.search(other) and not _SECOND_PERSON.search(mine):
        return "person"
    return "person" if _named(other) - _named(mine) else None


# A paraphrase swaps a word or two ("runs on PostgreSQL 15" / "use
# PostgreSQL 15"): a candidate may bring new words when it drops at least as
# many of the kept memory's, and they are at most this share of its words
# (a swap in a short turn, "thanks for your support" / "thanks for always
# being there", changes what it says). Chosen on the labelled pairs
# (docs/write-path.md, "Real conversations").
SWAPPED_SHARE = 0.34
SWAPPED_WORDS = 2
SWAP_MIN_WORDS = 5
SWAP_SLACK = 2


_WORD = re.compile(r"[\w']+")


def wording(text: str) -> tuple[str, ...]:
    """The words of the body in order, case and punctuation left out; a body
    of no word at all (an emoji, "*?") is its symbols, so that two such
    turns are the same only when they are the same signs."""
    b = body(text)
    found = tuple(_WORD.findall(plain_apostrophes(b).casefold()))
    return found if found else tuple("".join(b.split()))


# A yes or a no opening a turn answers the turn before it. With a word or
# two of content after it ("Yes, and Lee too", "No, never in winter") the
# answer is most of what the turn says; chosen on Topical-Chat's second
# choosing block (docs/write-path.md, "Real conversations").
_ANSWER = re.compile(r"^\W*(?:(yes|yeah|yep|yup|yea|ya)|(no|nope|nah))\b", re.IGNORECASE)
SHORT_ANSWER_WORDS = 2


def _answer(text: str) -> str | None:
    """"yes" or "no" when the body opens with one, else None."""
    m = _ANSWER.match(body(text))
    return None if m is None else ("yes" if m.group(1) else "no")


def short_answer(text: str) -> str | None:
    """"yes" or "no" for a turn that opens with that answer, asks nothing
    and states at most :data:`SHORT_ANSWER_WORDS` words of content. A
    greeting, thanks or farewell after the yes ("Yeah. Anyway, thanks for
    your time!") is small talk, which :func:`acts` decides: None."""
    answer = _answer(text)
    if answer is None or acts(text):
        return None
    stated, asked, asks = parts(text)
    return answer if not asks and len(stated) <= SHORT_ANSWER_WORDS else None


def keeps_apart(kept: str, cand: str) -> str | None:
    """Why ``cand`` is not a duplicate of ``kept`` (it may say something
    the kept memory does not, or be about someone else), or None.

    "speaker" / "person": another subject (see :func:`other_subject`);
    "question": ``cand`` asks what ``kept`` does not ask, asks less than
    ``kept`` asks, or answers what ``kept`` only asks; "adds": ``cand``
    states words ``kept`` does not, beyond a paraphrase's swapped word, or
    does a greeting, thanks, offer or farewell ``kept`` does not;
    "reaction": ``cand`` has no word of content and no such act ("True!",
    "You too.", or a question in question words only: "What is it?") and
    ``kept`` is not the same words; "answer": ``cand`` is a
    short yes or no (:func:`short_answer`) ``kept`` does not open with. Text that is mostly CJK
    is left to the other layers (None).
    """
    if not (cosine_trusted(kept) and cosine_trusted(cand)):
        return None
    reason = other_subject(kept, cand)
    if reason is not None:
        return reason
    ks, ka, kept_asks = parts(kept)
    cs, ca, cand_asks = parts(cand)
    # A question the kept memory does not ask (no swapped word let through),
    # or an answer to a memory that only asks.
    if (cand_asks and not kept_asks) or _missing(ca, ka) or (cs and kept_asks and not ks):
        return "question"
    if cand_asks and _missing(ka, ca):
        # The kept memory asks what this question does not: another question
        # ("Do you have a favorite team?" / "... favorite college football
        # team?"), not the same one said with more words.
        return "question"
    cand_acts = acts(cand)
    if cand_acts - acts(kept):
        return "adds"  # a greeting, thanks or a farewell the kept memory does not say
    if short_answer(cand) and short_answer(cand) != _answer(kept):
        # "Yes, and Lee too" answers the turn before it, as a reaction does:
        # not carried by a statement that answers nothing.
        return "answer"
    if _says_nothing(cs, ca, cand_acts) and wording(kept) != wording(cand):
        # A reaction answers the turn before it: carried by no other turn,
        # only by the same words.
        return "reaction"
    if _fragment(cs, ca, cand_acts) and wording(kept) != wording(cand):
        # One word of content and nothing else ("Or like", "Just woke up",
        # "It's a cat!", "With my crush"): what it says is in the turn it
        # follows, not in that word, so a fuller turn holding the word does
        # not carry it; only the same words do.
        return "fragment"
    added = new_words(kept, cand)
    if not added:
        return None
    dropped = new_words(cand, kept)
    n = len(words(cand))
    swapped = len(added) <= len(dropped) <= len(added) + SWAP_SLACK
    if swapped and n >= SWAP_MIN_WORDS and len(added) <= min(SWAPPED_WORDS, SWAPPED_SHARE * n):
        return None
    return "adds"


# Words that place what a turn states at the moment it is said: "It's a
# nice day out today" said in another session tells of another day
# (memex/dedup/pipeline.py). Chosen on REALTALK's choosing chats.
_MOMENT = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|now|right now|rn|this (?:morning|afternoon|evening|week|weekend)|the weekend)\b",
    re.IGNORECASE,
)


def of_the_moment(text: str) -> bool:
    """Whether ``text`` states something of the day or moment it is said
    (:data:`_MOMENT`), small talk aside ("How are you today?" greets)."""
    if not cosine_trusted(text) or acts(text):
        return False
    return _MOMENT.search(body(text)) is not None


def is_reaction(text: str) -> bool:
    """Whether ``text`` is a reaction, as :func:`keeps_apart` reads one:
    English text that states no word of content, asks none (a question in
    question words only, "What is it?", asks none) and greets, thanks,
    offers or takes leave in no way ("True!", "You too.", "Good for them!")."""
    if not cosine_trusted(text):
        return False
    stated, asked, _ = parts(text)
    return _says_nothing(stated, asked, acts(text))


# A statement of at most this many words of content, asking nothing, with
# no greeting, thanks, offer or farewell, is a fragment of the talk (chosen
# on REALTALK's choosing chats, docs/write-path.md "Real conversations").
FRAGMENT_WORDS = 1


def _fragment(stated: frozenset[str], asked: frozenset[str], done: frozenset[str]) -> bool:
    """A statement of at most :data:`FRAGMENT_WORDS` words of content and no
    act (a question is judged as a question: "So where is the stadium?")."""
    return not done and asked <= _QUESTION_WORDS and len(stated) <= FRAGMENT_WORDS


def _says_nothing(stated: frozenset[str], asked: frozenset[str], done: frozenset[str]) -> bool:
    """No content word stated, none asked beyond question words, no act (a reaction's parts)."""
    return not (stated or done) and asked <= _QUESTION_WORDS


def covers(kept: str, cand: str) -> bool:
    """``cand`` says nothing ``kept`` does not, about the same subject."""
    return keeps_apart(kept, cand) is None


# An agent restating a hook's capture frames it in words of its own ("User
# wants ...", "... including the trace id field"): up to this many new
# words, and at most a third of its words (the turn-echo guard,
# memex/dedup/pipeline.py; chosen on the labelled pairs).
RESTATED_WORDS = 2
RESTATED_SHARE = 0.34
# A turn of fewer content words than this that brings a new one says
# something new ("I love country too" after "I love football"): in so short
# a turn there is no framing to restate with (small talk aside: a thanks or
# farewell is the framing). Chosen on Topical-Chat's
# choosing parts (docs/write-path.md, "Real conversations").
RESTATE_MIN_WORDS = 4


def restates(capture: str, cand: str) -> bool:
    """Whether ``cand`` could be an agent's restatement of ``capture``:
    the same subject, no question the capture does not ask (nor an answer
    to one it only asks), and at most a few new words."""
    if not (cosine_trusted(capture) and cosine_trusted(cand)):
        return True  # the Jaccard of the echo guard decides alone, as before
    reason = keeps_apart(capture, cand)
    if reason is None:
        return True
    if reason != "adds" or acts(cand) - acts(capture):
        return False
    added = new_words(capture, cand)
    n = len(words(cand))
    # Thanks or a farewell the capture also says ("Thanks, Evan. I'll keep
    # you posted on my progress") frames its words: no floor there.
    short = n < RESTATE_MIN_WORDS and not acts(cand)
    return not short and len(added) <= min(RESTATED_WORDS, RESTATED_SHARE * n)

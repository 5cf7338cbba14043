"""Read Topical-Chat (alexa/Topical-Chat) as conversations for the dedup checks.

Topical-Chat is public data nobody here wrote: about 11,000 chats between
two crowd workers on a topic they were given facts about (greetings,
reactions, thanks and farewells included, as people chat). memex never
ships it and no test needs it; bring one split with

    git --git-dir=<mirror of github.com/alexa/Topical-Chat> show HEAD:conversations/test_freq.json > test_freq.json

and point a script at that file (or at a folder holding it). Its data
licence (CDLA-Sharing 1.0) asks that shared copies keep it, and memex is
MIT: no Topical-Chat text is kept here. The labels
(``scripts/data/topical_labels.jsonl``) name turns by chat id and turn
number only, and this module rebuilds the texts from the local copy.

Each chat is one capture session, one memory per turn: ``Ann: text`` for
``agent_1`` and ``Ben: text`` for ``agent_2`` (a name, as an agent
importing a chat would write; ``agent_1`` is no speaker prefix memex
reads). Turn ids are ``D1:N`` (session 1, turn N from 1), as in LoCoMo, so
the scripts that judge LoCoMo judge these unchanged.

The set is fixed by rule, not by what the code does with it: the first
:data:`SET_SIZE` chats of ``test_freq.json`` in sorted id order; in that
order they alternate between the choosing part (even places) and the
reporting part (odd places). A second choosing block, ``choose2``, is the
next :data:`BLOCK2_SIZE` chats in that order (places 200-299): chosen on
only, never reported, added when the first set's reporting part had been
read, so that rules for the errors left there are chosen on chats nobody
here had seen. A third choosing block, ``choose3``, comes from another
split, ``valid_freq.json`` (bring it the same way, beside
``test_freq.json``): its first :data:`BLOCK3_SIZE` chats in sorted id
order, chosen on only, never reported; added when the errors left on the
reporting halves (a farewell against the speaker's earlier farewells,
thanks behind thanks) had no example in the first two choosing blocks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402

SPLIT_FILE = "test_freq.json"
SET_SIZE = 200
BLOCK2_SIZE = 100
BLOCK3_FILE = "valid_freq.json"
BLOCK3_SIZE = 200
HALVES = ("choose", "report", "all", "choose2", "choose3")
SPEAKERS = {"agent_1": "Ann", "agent_2": "Ben"}


def parse(chat_id: str, raw: dict[str, Any]) -> locomo.Conversation:
    """One chat as a conversation of one session, empty turns left out
    (their numbers kept, so ids stay those of the file)."""
    turns = []
    for n, message in enumerate(raw.get("content", ()), 1):
        text = " ".join(str(message.get("message", "")).split())
        agent = str(message.get("agent", ""))
        if not text:
            continue
        speaker = SPEAKERS.get(agent, agent.replace("_", "").capitalize() or "Someone")
        turns.append(locomo.Turn(chat_id, 1, "", f"D1:{n}", speaker, text, ""))
    return locomo.Conversation(chat_id, (SPEAKERS["agent_1"], SPEAKERS["agent_2"]), tuple(turns), ())


def _file(path: Path, name: str = SPLIT_FILE) -> Path:
    """The split file ``name``: PATH itself, under the folder PATH, or
    beside the file PATH (``valid_freq.json`` next to ``test_freq.json``)."""
    if path.is_dir():
        found = sorted(path.rglob(name))
        if not found:
            raise SystemExit(f"topical_chat: no {name} under {path} (see scripts/topical_chat.py)")
        return found[0]
    if name != SPLIT_FILE and path.name != name:
        beside = path.with_name(name)
        if not beside.exists():
            raise SystemExit(f"topical_chat: no {name} beside {path} (see scripts/topical_chat.py)")
        return beside
    return path


def load(path: str | Path, name: str = SPLIT_FILE) -> list[locomo.Conversation]:
    """Every chat of the split file at PATH (or under the folder PATH, or
    beside the file PATH when ``name`` is another split), in sorted id order."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SystemExit(f"topical_chat: {p} does not exist (see scripts/topical_chat.py for how to bring it)")
    data = json.loads(_file(p, name).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not data:
        raise SystemExit(f"topical_chat: {p} is not a Topical-Chat split (an object of chats by id)")
    return [parse(k, data[k]) for k in sorted(data)]


def split(chats: Iterable[locomo.Conversation], half: str, size: int | None = None) -> list[locomo.Conversation]:
    """The set (the first ``size`` chats, :data:`SET_SIZE` by default), then
    ``choose`` (even places), ``report`` (odd) or ``all``; ``choose2`` is
    the :data:`BLOCK2_SIZE` chats after the set, all for choosing. (``choose3``
    is another file's: :func:`select`.)"""
    if half not in HALVES:
        raise SystemExit(f"topical_chat: unknown half {half!r} ({', '.join(HALVES)})")
    ordered = sorted(chats, key=lambda c: c.id)
    end = SET_SIZE if size is None else size
    if half == "choose2":
        return ordered[end : end + BLOCK2_SIZE]
    chosen = ordered[:end]
    if half == "all":
        return chosen
    return [c for k, c in enumerate(chosen) if k % 2 == (0 if half == "choose" else 1)]


def select(path: str | Path, half: str, ids: list[str] | None = None) -> list[locomo.Conversation]:
    """The chats of ``half`` (``--half``), only ``ids`` when given (``--conversation``).

    With ``half`` "all" the ids may name any chat of the file, so a chat
    held back from the set is checked the same way (its pairs unlabelled
    until someone labels them). ``choose3`` is the first
    :data:`BLOCK3_SIZE` chats of :data:`BLOCK3_FILE` in id order."""
    if half == "choose3":
        block = load(path, BLOCK3_FILE)[:BLOCK3_SIZE]
        return [c for c in block if c.id in ids] if ids else block
    chats = load(path)
    if ids and half == "all":
        return [c for c in chats if c.id in ids]
    chosen = split(chats, half)
    return [c for c in chosen if c.id in ids] if ids else chosen


def load_all(path: str | Path) -> list[locomo.Conversation]:
    """The chats of both split files the labels name (``test_freq.json``,
    and ``valid_freq.json`` when it is there)."""
    chats = load(path)
    try:
        return chats + load(path, BLOCK3_FILE)
    except SystemExit:
        return chats


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else SPLIT_FILE
    chats = load(where)
    for half in HALVES:
        part = select(where, half) if half == "choose3" else split(chats, half)
        print(f"{half:7s} chats {len(part):3d}  turns {sum(len(c.turns) for c in part):5d}")

"""Read MemoryBank's English conversations as conversations for the dedup checks.

MemoryBank (Zhong et al., "MemoryBank: Enhancing Large Language Models with
Long-Term Memory", AAAI 2024; github.com/zhongwanjun/MemoryBank-SiliconFriend,
MIT licence) is public data nobody here wrote: ChatGPT playing 15 users of
different personalities, each talking with an AI companion on ten days
(``eval_data/en/memory_bank_en.json``). Like LoCoMo it is written by a
language model; unlike every other set here it is a user talking with an
assistant, day after day, as an agent's chats are. memex never ships it and
no test needs it. Bring it from a clone or mirror (MIRROR: its git
directory):

    git --git-dir=MIRROR show HEAD:eval_data/en/memory_bank_en.json > DIR/memory_bank_en.json

and point a script at that file (or at DIR). Only turn ids are kept here
(``scripts/data/memorybank_labels.jsonl``), as for the other sets; this
module rebuilds the texts from the local copy.

Each user is one conversation (its id the user's first name) and each day
one capture session; each exchange gives two memories, ``Name: query`` then
``Companion: response`` (the user's first name, as an agent importing a
chat would write it). Turn ids are ``D<day>:<place>`` (both from 1, days in
date order, places counting both speakers), as in LoCoMo, so the scripts
that judge LoCoMo judge these unchanged. A turn with no text is left out,
its id unused. The probing questions name no evidence turn, so there is no
retrieval figure for this set.

The split is fixed by rule, by user, not by what the code does with it: in
order of the first name, users alternate between ``choose`` (even places,
from 0; 8 users) and ``report`` (odd places; 7 users); ``all`` = both.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402

HALVES = ("choose", "report", "all")
ASSISTANT = "Companion"
FILE_NAMES = ("memory_bank_en.json", "eval_data/en/memory_bank_en.json")


def first_name(name: str) -> str:
    """The user's first name, letters only ("John Zhang" -> "John")."""
    word = (name.split() or [""])[0]
    return "".join(ch for ch in word if ch.isalpha())


def parse(name: str, raw: dict[str, Any]) -> locomo.Conversation:
    """One user's ten days: each exchange as the user's turn, then the companion's."""
    user = first_name(str(raw.get("name") or name))
    if not user:
        raise SystemExit(f"memorybank: user {name!r} has no name of letters")
    history = raw.get("history")
    if not isinstance(history, dict):
        raise SystemExit(f"memorybank: user {name!r} has no history of days")
    turns = []
    for day, date in enumerate(sorted(history), 1):
        place = 0
        for exchange in history[date] or []:
            if not isinstance(exchange, dict):
                raise SystemExit(f"memorybank: user {name!r}, {date}: an exchange is not an object")
            for who, field in ((user, "query"), (ASSISTANT, "response")):
                place += 1
                text = " ".join(str(exchange.get(field) or "").split())
                if text:
                    turns.append(locomo.Turn(user, day, date, f"D{day}:{place}", who, text, ""))
    return locomo.Conversation(user, (user, ASSISTANT), tuple(turns), ())


def file_of(path: str | Path) -> Path:
    """The English memory-bank file at PATH (the file, or a folder holding it)."""
    return locomo.data_file(path, FILE_NAMES, "memorybank")


def load(path: str | Path) -> list[locomo.Conversation]:
    """Every user's conversation, in order of the first name."""
    f = file_of(path)
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except ValueError as e:
        raise SystemExit(f"memorybank: {f} is not JSON ({e})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SystemExit(f"memorybank: {f} is not a memory bank (an object of users)")
    convs = [parse(name, raw) for name, raw in data.items()]
    ids = [c.id for c in convs]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"memorybank: {f}: two users share a first name")
    return sorted(convs, key=lambda c: c.id)


def split(users: list[locomo.Conversation], half: str) -> list[locomo.Conversation]:
    """``choose`` (even places in name order), ``report`` (odd) or ``all``."""
    if half not in HALVES:
        raise SystemExit(f"memorybank: unknown half {half!r} ({', '.join(HALVES)})")
    ordered = sorted(users, key=lambda c: c.id)
    return ordered if half == "all" else ordered[0 if half == "choose" else 1::2]


def select(path: str | Path, half: str, ids: list[str] | None = None) -> list[locomo.Conversation]:
    """The users of ``half``, only ``ids`` when given."""
    users = split(load(path), half)
    return [c for c in users if not ids or c.id in ids]


if __name__ == "__main__":
    everything = load(sys.argv[1] if len(sys.argv) > 1 else ".")
    for half in ("choose", "report"):
        part = split(everything, half)
        print(f"{half:7s} users {len(part):2d}  turns {sum(len(c.turns) for c in part):5d}  {[c.id for c in part]}")

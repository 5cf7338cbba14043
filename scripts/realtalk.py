"""Read REALTALK (danny911kr/REALTALK) as conversations for the dedup checks.

REALTALK is public data nobody here wrote: chats that pairs of real people
had over 21 days on a messaging app, in sessions (one a day, about), with
questions whose evidence is named by dialogue turn. Unlike Topical-Chat's
single-session chats between strangers, the same two people talk again
session after session, as LoCoMo's speakers do.
memex never ships it and no test needs it; bring it from a mirror or clone
of github.com/danny911kr/REALTALK (MIRROR: its git directory):

    git --git-dir=MIRROR show HEAD:data/Chat_3_Kevin_Paola.json > DIR/Chat_3_Kevin_Paola.json

once per chat file of ``data/`` (``git --git-dir=MIRROR ls-tree --name-only
HEAD data/`` lists them; the held-back chat need not be copied), or use a
clone's ``data`` folder as it is, and point a script at DIR (or at one file).
The repository states no licence, so no REALTALK text is kept here: the
labels (``scripts/data/realtalk_labels.jsonl``) name turns by chat and
dialogue id only, and this module rebuilds the texts from the local copy.

Each chat is one conversation (its id the file's name, ``Chat_3_Kevin_Paola``)
and each of its sessions one capture session; each turn is one memory,
``Name: text``, the speaker's first name as a prefix memex reads ("Fahim
Khan" is ``Fahim:``; "elise" ``Elise:``), with the session's date. A turn
with no text (an image alone) is left out; the others keep the dataset's
``dia_id``, which the questions' evidence names. Those ids do not restart
with each session (a session may begin at ``D2:29``); within a chat each is
unique in the published files, and where one is not, every turn holding it
is renamed ``S<session>:<place in the session>`` and evidence naming it is
left out (it would be ambiguous).

The split is fixed by rule, by chat, not by what the code does with it:

- ``Chat_1_Emi_Elise`` is **held back**: never loaded into any half, never
  read, never labelled (it is kept for reviewers to check the rules on).
  Its file is skipped by name before it is opened, and pointing a script
  at it is refused;
- ``choose`` = chats 3, 5, 8 and 10 (3,676 turns): rules are chosen here;
- ``report`` = chats 2, 4, 6, 7 and 9: run once, after the rules are fixed;
- ``all`` = both halves (never chat 1).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402

HELD_BACK = 1
CHOOSE = (3, 5, 8, 10)
REPORT = (2, 4, 6, 7, 9)
HALVES = ("choose", "report", "all")
_FILE = re.compile(r"Chat_(\d+)_[^/\\]*\.json")
# "D12:3", "D 2:18", "D17;39" (a typo), a range "D12:3-D12:5", in any list.
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*[:;]\s*(\d+)(?:\s*-\s*D\s*(\d+)\s*:\s*(\d+))?")


def chat_number(path: str | Path) -> int | None:
    """The number of a ``Chat_N_A_B.json`` file, None for another name."""
    m = _FILE.fullmatch(Path(path).name)
    return int(m.group(1)) if m else None


def _name(raw: str) -> str:
    """A speaker prefix memex reads: the first name, capitalised."""
    first = raw.split()[0] if raw.split() else "Someone"
    return first[:1].upper() + first[1:]


def evidence(raw: Any) -> tuple[str, ...]:
    """The turn ids a question's evidence names, as the turns are named
    (``D12:3``), ranges within one session spelled out."""
    out: list[str] = []
    for item in raw or ():
        for m in _EVIDENCE.finditer(str(item)):
            s, n, s2, n2 = m.groups()
            if s2 is not None and int(s2) == int(s) and int(n2) >= int(n):
                out.extend(f"D{int(s)}:{k}" for k in range(int(n), int(n2) + 1))
                continue
            out.append(f"D{int(s)}:{int(n)}")
            if s2 is not None:
                out.append(f"D{int(s2)}:{int(n2)}")
    return tuple(dict.fromkeys(out))


def parse(chat_id: str, raw: dict[str, Any]) -> locomo.Conversation:
    """One chat: its sessions in order, turns with text only, ids as above."""
    numbers = sorted(
        int(m.group(1)) for k in raw if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(raw[k], list)
    )
    rows: list[tuple[int, int, str, dict[str, Any]]] = []
    for s in numbers:
        for place, t in enumerate(raw[f"session_{s}"], 1):
            rows.append((s, place, str(t.get("dia_id", "")), t))
    counts = Counter(dia for _, _, dia, _ in rows)
    clashing = {dia for dia, n in counts.items() if n > 1 or not dia}
    turns = []
    for s, place, dia, t in rows:
        text = " ".join(str(t.get("clean_text") or t.get("text") or "").split())
        if not text:
            continue
        turn_id = f"S{s}:{place}" if dia in clashing else dia
        date = str(raw.get(f"session_{s}_date_time", t.get("date_time", "")))
        turns.append(locomo.Turn(chat_id, s, date, turn_id, _name(str(t.get("speaker", ""))), text, ""))
    names = raw.get("name") or {}
    speakers = (_name(str(names.get("speaker_1", ""))), _name(str(names.get("speaker_2", ""))))
    questions = tuple(
        locomo.Question(
            conversation=chat_id,
            question=str(q.get("question", "")),
            answer=str(q.get("answer", "")),
            evidence=tuple(e for e in evidence(q.get("evidence")) if e not in clashing),
            category=int(q.get("category", 0) or 0),
        )
        for q in raw.get("qa", ())
    )
    return locomo.Conversation(chat_id, speakers, tuple(turns), questions)


def _refuse(n: int | None, path: Path) -> None:
    if n == HELD_BACK:
        raise SystemExit(f"realtalk: {path.name} is held back (never loaded; see scripts/realtalk.py)")


def files(path: str | Path) -> list[Path]:
    """The chat files at PATH (a folder of ``Chat_*.json`` or a clone
    whose ``data/`` holds them, or one such file), the held-back chat never among them."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SystemExit(f"realtalk: {p} does not exist (see scripts/realtalk.py for how to bring it)")
    if p.is_dir():
        # The folder itself or its data/ (a clone's root); not below that:
        # the repository's data/locomo/ holds LoCoMo in this layout. The
        # held-back chat is skipped by name, before any file is opened.
        folder = p if any(p.glob("Chat_*.json")) else p / "data"
        found = [f for f in sorted(folder.glob("Chat_*.json")) if chat_number(f) not in (None, HELD_BACK)]
        if not found:
            raise SystemExit(f"realtalk: no Chat_N_*.json files under {p}")
        return found
    n = chat_number(p)
    _refuse(n, p)
    if n is None:
        raise SystemExit(f"realtalk: {p.name} is not a REALTALK chat file (Chat_N_A_B.json)")
    return [p]


def load(path: str | Path) -> list[locomo.Conversation]:
    """Every chat at PATH but the held-back one, by chat number."""
    chats: dict[int, locomo.Conversation] = {}
    for f in files(path):
        n = chat_number(f)
        assert n is not None and n != HELD_BACK
        if n in chats:
            continue
        data = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not any(re.fullmatch(r"session_\d+", k) for k in data):
            raise SystemExit(f"realtalk: {f} is not a REALTALK chat (no session_N)")
        chats[n] = parse(f.stem, data)
    return [chats[n] for n in sorted(chats)]


def number(conv: locomo.Conversation) -> int | None:
    return chat_number(f"{conv.id}.json")


def split(chats: list[locomo.Conversation], half: str) -> list[locomo.Conversation]:
    """``choose``, ``report`` or ``all`` (both; never the held-back chat)."""
    if half not in HALVES:
        raise SystemExit(f"realtalk: unknown half {half!r} ({', '.join(HALVES)})")
    wanted = {"choose": CHOOSE, "report": REPORT, "all": CHOOSE + REPORT}[half]
    return [c for c in chats if number(c) in wanted]


def select(path: str | Path, half: str, ids: list[str] | None = None) -> list[locomo.Conversation]:
    """The chats of ``half`` (``--half``), only ``ids`` when given
    (``--conversation``: the chat's id, ``Chat_3_Kevin_Paola``, or its number)."""
    chats = split(load(path), half)
    if not ids:
        return chats
    return [c for c in chats if c.id in ids or str(number(c)) in ids]


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else "."
    everything = load(where)
    for half in HALVES:
        part = split(everything, half)
        print(f"{half:7s} chats {len(part):2d}  turns {sum(len(c.turns) for c in part):5d}"
              f"  questions {sum(len(c.retrieval_questions) for c in part):4d}")

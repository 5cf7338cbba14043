"""Read Multi-Session Chat (MSC) as conversations for the dedup checks.

MSC (Xu, Szlam and Weston, "Beyond Goldfish Memory", ACL 2022) is public
data nobody here wrote: crowd workers, each given a persona, chatting with
the same partner again in later sessions, hours or days after the last
(the first session is a PersonaChat chat). People wrote every turn; no
language model did. memex never ships it and no test needs it. It is
published with ParlAI (``msc`` task); a public git repository that holds
the ParlAI build is github.com/Nitrogen216/Rsum (MIRROR: its git directory):

    git --git-dir=MIRROR show HEAD:data/msc/msc/msc_dialogue/session_3/test.txt > DIR/session_3_test.txt

and point a script at that file (or at DIR). Its third-session file holds
each pair's three sessions: ``previous_dialogs`` (sessions 1 and 2) and
``dialog`` (session 3). The data's terms are not stated beside it, so no
MSC text is kept here: the labels (``scripts/data/msc_labels.jsonl``) name
turns by episode id and turn id only, and this module rebuilds the texts
from the local copy.

Each episode is one conversation (its id the file's ``initial_data_id``,
``test_0``) and each of its sessions one capture session; each turn is one
memory, ``Cam: text`` for the first speaker and ``Dee: text`` for the
second (a name, as an agent importing a chat would write; ``Speaker 1`` is
no prefix memex reads as a person). The previous sessions' turns name no
speaker: they alternate, the first speaker first (the personas they state
agree). In session 3 a turn names its speaker (``Speaker 1``), except that
a few first turns carry a worker number instead; those are placed by the
same alternation. Turn ids are ``D<session>:<place>`` (both from 1), as in
LoCoMo, so the scripts that judge LoCoMo judge these unchanged. A turn
with no text is left out, its id unused.

The split is fixed by rule, by episode, not by what the code does with it:
the first :data:`SET_SIZE` episodes of ``session_3/test.txt`` in order of
their number (``test_N``); in that order they alternate between

- ``choose`` (even places, from 0): rules are chosen here;
- ``report`` (odd places): run once, after the rules are fixed;
- ``all`` = both.

A second choosing block, ``choose2``, is the next :data:`BLOCK2_SIZE`
episodes in that order (places 120-359): chosen on only, never reported,
added before anything was labelled when the code of the day merged no pair
of the 60 ``choose`` episodes (long persona turns rarely share words), so
that the errors left on other sets' reporting halves have more chances to
show on data written by people. A third, ``choose3``, is the rest of
``test.txt`` (places 360 on, 141 episodes), chosen on only, never
reported, added when ``choose2`` showed four merges and three echo
refusals, before it was labelled. The ``valid.txt`` split is **held
back**: never loaded into any half (a file of ``valid_N`` episodes is
refused), kept for reviewers and later blocks. MSC has no questions with
evidence, so there is no retrieval figure for it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402

SET_SIZE = 120
BLOCK2_SIZE = 240
HALVES = ("choose", "report", "all", "choose2", "choose3")
SPEAKERS = ("Cam", "Dee")
FILE_NAMES = ("session_3_test.txt", "session_3/test.txt", "test.txt")
_ID = re.compile(r"test_(\d+)")


def episode_number(episode: str) -> int | None:
    """N of ``test_N``; None for another id (``valid_N`` is never loaded)."""
    m = _ID.fullmatch(episode)
    return int(m.group(1)) if m else None


def _who(raw_id: Any, place: int) -> str:
    """The speaker of the turn at ``place`` (from 1): its own ``Speaker N``
    when it names one, else the alternation, first speaker first."""
    m = re.fullmatch(r"Speaker ([12])", str(raw_id or "").strip())
    n = int(m.group(1)) if m else (1 if place % 2 else 2)
    return SPEAKERS[n - 1]


def parse(raw: dict[str, Any]) -> locomo.Conversation:
    """One episode: its previous sessions then its last, turns with text only."""
    episode = str((raw.get("metadata") or {}).get("initial_data_id", ""))
    previous = raw.get("previous_dialogs") or []
    sessions = [p.get("dialog") or [] for p in previous] + [raw.get("dialog") or []]
    # How long before the last session each earlier one was ("5 days 1 hour ago").
    when = [str(p.get("time_back") or "") for p in previous] + ["last session"]
    turns = []
    for s, (dialog, date) in enumerate(zip(sessions, when), 1):
        for place, t in enumerate(dialog, 1):
            text = " ".join(str(t.get("text") or "").split())
            if text:
                turns.append(locomo.Turn(episode, s, date, f"D{s}:{place}", _who(t.get("id"), place), text, ""))
    return locomo.Conversation(episode, SPEAKERS, tuple(turns), ())


def file_of(path: str | Path) -> Path:
    """The third-session file at PATH (the file, or a folder holding it)."""
    return locomo.data_file(path, FILE_NAMES, "msc")


def load(path: str | Path) -> list[locomo.Conversation]:
    """Every test episode, by number (the ``valid`` split is refused)."""
    f = file_of(path)
    rows: dict[int, dict[str, Any]] = {}
    for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as e:
            raise SystemExit(f"msc: {f}:{n} is not an MSC episode ({e})") from None
        if not isinstance(raw, dict) or "dialog" not in raw or not isinstance(raw.get("metadata"), dict):
            raise SystemExit(f"msc: {f}:{n} is not an MSC episode (no dialog or metadata)")
        number = episode_number(str(raw["metadata"].get("initial_data_id", "")))
        if number is None:
            raise SystemExit(f"msc: {f}:{n} is not a test episode (test_N); point at session_3's test.txt")
        if len(raw.get("previous_dialogs") or ()) != 2:
            raise SystemExit(f"msc: {f}:{n} has not two previous sessions; point at session_3's test.txt")
        rows.setdefault(number, raw)
    return [parse(rows[n]) for n in sorted(rows)]


def split(episodes: list[locomo.Conversation], half: str) -> list[locomo.Conversation]:
    """``choose`` (even places of the set in number order), ``report``
    (odd), ``all`` (both), ``choose2`` (the next block) or ``choose3`` (the rest)."""
    if half not in HALVES:
        raise SystemExit(f"msc: unknown half {half!r} ({', '.join(HALVES)})")
    ordered = sorted(episodes, key=lambda c: episode_number(c.id) or 0)
    if half == "choose2":
        return ordered[SET_SIZE:SET_SIZE + BLOCK2_SIZE]
    if half == "choose3":
        return ordered[SET_SIZE + BLOCK2_SIZE:]
    ordered = ordered[:SET_SIZE]
    if half == "all":
        return ordered
    return ordered[0 if half == "choose" else 1::2]


def select(path: str | Path, half: str, ids: list[str] | None = None) -> list[locomo.Conversation]:
    """The episodes of ``half``, only ``ids`` when given (``test_0`` or ``0``)."""
    episodes = split(load(path), half)
    if not ids:
        return episodes
    return [c for c in episodes if c.id in ids or str(episode_number(c.id)) in ids]


if __name__ == "__main__":
    everything = load(sys.argv[1] if len(sys.argv) > 1 else ".")
    for half in ("choose", "choose2", "choose3"):
        part = split(everything, half)
        print(f"{half:7s} episodes {len(part):3d}  turns {sum(len(c.turns) for c in part):5d}")

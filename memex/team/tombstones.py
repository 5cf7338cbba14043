"""Erasure across a team vault: the shared key, applying teammates' erasures, what history holds.

The tombstones are the erased list itself (``.memex/erased.txt``, memex/erased_list.py):
keyed hashes of erased bodies and ids, no text, committed with the vault. For
every clone to read them, every clone needs the same key (``.memex/erase.key``,
git-ignored). The key travels outside git, from teammate to teammate
(``memex sync --key-file``); the repository holds only its fingerprint
(``.memex/erase-key.id``, an HMAC of a constant under the key), so a clone
with another key or none is stopped before it could merge lists it cannot
read. Why not commit the key, and what that costs: docs/team.md, "The key".

After a pull, a memory file whose body or id a teammate erased is erased here
through the real erase path (memex/erase.py): its file, every derived index
row, copies with the same text (also ones added here before the sync), and
the local audit line.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memex import layout
from memex.erased import erased_list
from memex.errors import MemoryFileError, MemoryNotFound, SyncError
from memex.files.memory_file import decode, parse, read
from memex.records import path_id

if TYPE_CHECKING:
    from memex.vault import Vault

KEY_ID_NAME = layout.ERASE_KEY_ID_NAME
KEY_NAME = layout.ERASE_KEY_NAME
KEY_FILE = f"{layout.MEMEX_DIR}/{KEY_NAME}"  # vault-relative, as messages name it
REASON = "memex sync: erased in the team vault by a teammate"
_KEY_ID_LABEL = b"memex team erase key id v1"


def fingerprint(key: bytes) -> str:
    """The key's public fingerprint (reveals nothing that helps test a guess)."""
    return "hmac-sha256:" + hmac.new(key, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:32]


def _read_key(path: Path) -> bytes | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SyncError(f"{path}: cannot read the erasure key: {exc}") from exc
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise SyncError(f"{path}: not an erasure key (expected hex, as {KEY_FILE} holds)") from None
    if len(key) < 16:
        raise SyncError(f"{path}: the erasure key is too short ({len(key)} bytes)")
    return key


def local_key(memex_dir: Path) -> bytes | None:
    erased_list.restore_key(memex_dir)  # from its spare in git's folder, if `git clean -fdx` took it
    return _read_key(memex_dir / KEY_NAME)


def install_key(memex_dir: Path, key_file: Path) -> str:
    """Copy the team's key from ``key_file`` (a teammate's .memex/erase.key); returns what happened."""
    key = _read_key(key_file)
    if key is None:
        raise SyncError(f"--key-file: {key_file} does not exist")
    # Not local_key: a key the user moved away must not come back from its spare (memex/erased/spare.py) here.
    have = _read_key(memex_dir / KEY_NAME)
    if have == key:
        return "already installed"
    if have is not None:
        raise SyncError(
            f"{memex_dir / KEY_NAME}: this clone already has another erasure key; "
            "texts it erased are listed under that key. Move it away only if its erased list is empty "
            "or already shared with the team, then run `memex sync --key-file` again"
        )
    fd = os.open(memex_dir / KEY_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    erased_list.restore_key(memex_dir)  # its spare copy follows
    return "installed"


def create_key(memex_dir: Path) -> bytes:
    """The key this clone makes when the team has none yet (as the erased list makes it)."""
    erased_list.remember(memex_dir, [])  # remembers nothing; creates the key (O_EXCL, mode 0600)
    key = local_key(memex_dir)
    assert key is not None
    return key


def check_key(memex_dir: Path, team_id: str | None) -> str:
    """Is this clone's key the team's? Returns "ok" or "new" (no team key yet); raises otherwise."""
    key = local_key(memex_dir)
    if team_id is None:
        return "new"
    if key is None:
        raise SyncError(
            "this clone has no erasure key, and the team's is needed to read the vault's erased list "
            f"(and to add to it): ask a teammate for their {KEY_FILE} (over a private channel) "
            "and run `memex sync --key-file PATH`"
        )
    if fingerprint(key) != team_id.strip():
        raise SyncError(
            f"{memex_dir / KEY_NAME} is not the team's erasure key (fingerprints differ: "
            f"{fingerprint(key)} here, {team_id.strip()} in the vault); get the team's key from a "
            "teammate and install it with `memex sync --key-file PATH` after moving this one away"
        )
    return "ok"


@dataclass
class Applied:
    ids: list[str]
    files: int


def _erased_ids(vault: Vault, conflict_copies: bool) -> list[str]:
    """Ids of memory files on disk whose body or id is on the erased list."""
    from memex.health import drift

    found: list[str] = []
    for rel in drift(vault).erased_restored:
        try:
            mf, _ = read(vault.root / rel, vault.config.max_file_bytes, vault.root)
        except MemoryFileError:
            continue
        value = mf.meta.get("id")
        found.append(str(value) if value not in (None, "") else path_id(rel))
    return list(dict.fromkeys(found + (_conflict_copies(vault) if conflict_copies else [])))


def _conflict_copies(vault: Vault) -> list[str]:
    """Second versions a body conflict made (memex/team/merge.py) of a memory now erased.

    They are copies of it, as the files ``cp`` makes are: an erasure takes them too.
    """
    from memex.team.merge import CONFLICT_KEY, CONFLICT_ID

    guard = erased_list.Guard(vault.memex_dir)
    guard.refresh()
    if guard.size == 0:
        return []
    found: list[str] = []
    for hit in vault.list(include_superseded=True):
        if not CONFLICT_ID.match(hit.id):
            continue
        original = vault.get(hit.id).meta.get(CONFLICT_KEY)
        if original not in (None, "") and guard.erased_id(str(original)):
            found.append(hit.id)
    return found


def apply(vault: Vault, conflict_copies: bool = True) -> Applied:
    """Erase here what teammates erased (call after a reindex has seen the pulled files)."""
    from memex.erase.steps import erase

    done = Applied([], 0)
    for memory_id in _erased_ids(vault, conflict_copies):
        try:
            result = erase(vault, memory_id, reason=REASON)
        except MemoryNotFound:
            continue  # an earlier erase of this loop took it as a copy
        done.ids += [i for i in result.erased if i not in done.ids]
        done.files += result.files_deleted
    return done


def erased_blobs(top: Path, memex_dir: Path) -> int:
    """How many objects in the git store (reachable or not) hold an erased memory file.

    Reads every object once (``git cat-file --batch-all-objects``); a blob
    counts when it parses as a memory file whose body or id the erased list
    holds.
    """
    guard = erased_list.Guard(memex_dir)
    try:
        guard.refresh()
    except Exception as exc:  # a list without its key cannot be checked
        raise SyncError(str(exc)) from exc
    try:
        proc = subprocess.Popen(
            ["git", "-C", str(top), "cat-file", "--batch-all-objects", "--batch", "--unordered"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        raise SyncError(f"git cat-file failed in {top}: {exc}") from exc
    count = 0
    assert proc.stdout is not None
    with proc:
        stream = proc.stdout
        while header := stream.readline():
            parts = header.split()
            if len(parts) != 3:
                continue
            size = int(parts[2])
            data = stream.read(size)
            stream.read(1)
            if parts[1] == b"blob" and _holds_erased(data, guard):
                count += 1
    return count


def _holds_erased(data: bytes, guard: erased_list.Guard) -> bool:
    try:
        mf = parse(decode(data, Path("blob")), Path("blob"))
    except MemoryFileError:
        return False
    if not mf.body.strip():
        return False
    value = mf.meta.get("id")
    return guard.erased(mf.body) or (value not in (None, "") and guard.erased_id(str(value)))

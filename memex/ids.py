"""Memory ids as people type them: any unique prefix, in any case (as git
takes commit ids).

An id is a ULID (``01KA3V9Q...``, upper case) or, for a hand-written file
without one, ``p`` and 25 hex digits; people type the first few characters,
often in lower case. :func:`resolve` turns what was typed into the one full
id it names. The CLI and the MCP tools resolve every id they are given
before calling the library, whose functions take full ids only (a
program's id is exact; a prefix that was unique yesterday may not be today).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memex.errors import AmbiguousId, MemoryNotFound

if TYPE_CHECKING:
    from memex.vault import Vault

# Shorter prefixes are not looked up (git's floor too): a ULID's first
# characters are its creation time, shared by every memory of the same era.
MIN_PREFIX = 4
# Candidates an ambiguous prefix names.
SHOWN = 5


def resolve(vault: Vault, typed: str, argument: str = "id") -> str:
    """The full id ``typed`` names: itself when it is an id, else the one id
    it begins (ignoring case). MemoryNotFound when none; AmbiguousId, naming
    the candidates, when several."""
    typed = typed.strip()
    store = vault.store
    if store.row_by_id(typed) is not None:
        return typed
    if len(typed) < MIN_PREFIX:
        raise MemoryNotFound(typed)
    found = store.ids_with_prefix(typed, SHOWN + 1)
    if not found:
        raise MemoryNotFound(typed)
    if len(found) == 1:
        return found[0]
    shown = found[:SHOWN]
    rows = {i: store.row_by_id(i) for i in shown}
    candidates = [(i, _preview(row.body if row is not None else "")) for i, row in rows.items()]
    raise AmbiguousId(argument, typed, candidates, more=len(found) > SHOWN)


def _preview(body: str, limit: int = 40) -> str:
    flat = " ".join(body.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

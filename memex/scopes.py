"""Which scopes a memory may have, and what to say about a typo.

A scope is ``user``, ``project:NAME``, ``agent:NAME``, ``resources`` (the
documents the MCP server imports), or ``KIND:NAME`` for a kind the vault adds
in ``.memex/config.toml``::

    [scopes]
    extra_kinds = ["team"]      # then team:platform is a scope

Anything else is refused wherever a scope comes in (CLI, MCP, hooks, the
Python API) with a :class:`~memex.errors.ScopeError`, and a near miss gets
"did you mean": ``usr`` is ``user``, ``projects:memex`` is
``project:memex``. A typo must not quietly make a new folder of memories
that no search in the right scope will find (docs/cli.md).

Hand-written files are not refused: a file in ``memories/notes/`` is indexed
with the scope its folder gives (``notes``), and ``memex doctor`` lists it
(:func:`unknown_scopes`) until it is moved or the kind is configured.
Moving it to another scope silently would lose where the person put it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from memex.config import CONFIG_RELPATH, Config, string_list
from memex.errors import ConfigError, ScopeError

# Scopes without a name: the person, and imported reference documents.
BARE_KINDS: tuple[str, ...] = ("user", "resources")
# Kinds that need a name after ':'.
NAMED_KINDS: tuple[str, ...] = ("project", "agent")
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class ScopeRules:
    named: tuple[str, ...] = NAMED_KINDS
    bare: tuple[str, ...] = BARE_KINDS

    def forms(self) -> str:
        """The valid forms, for an error message."""
        return ", ".join([*self.bare, *(f"{k}:NAME" for k in self.named)])

    def problem(self, scope: str) -> tuple[str, str | None] | None:
        """Why ``scope`` is not valid and what it probably meant; None when valid."""
        text = scope.strip()
        if not text:
            return "must not be empty", None
        kind, sep, name = text.partition(":")
        name = name.strip()
        if kind in self.bare:
            return None if not sep else (f"{text!r}: {kind!r} takes no name", kind)
        if kind in self.named:
            if sep and name:
                return None
            return f"{text!r}: {kind!r} needs a name, as in {kind}:NAME", None
        import difflib  # only for this hint; not on every command's start-up

        guess = difflib.get_close_matches(kind.lower(), [*self.bare, *self.named], n=1, cutoff=0.6)
        suggestion = None
        if guess:
            suggestion = guess[0] if guess[0] in self.bare else f"{guess[0]}:{name or 'NAME'}"
        return f"{text!r} is not a scope", suggestion

    def check(self, scope: str, origin: str = "scope") -> str:
        """``scope`` stripped, or a :class:`ScopeError` naming ``origin``."""
        found = self.problem(scope)
        if found is None:
            return scope.strip()
        reason, suggestion = found
        hint = f"; did you mean {suggestion!r}?" if suggestion else "."
        more = (
            f" Scopes are {self.forms()} (add kinds with [scopes] extra_kinds in {CONFIG_RELPATH.as_posix()})."
        )
        raise ScopeError(origin, scope, f"{reason}{hint}{more}", suggestion)

    def valid(self, scope: str) -> bool:
        return self.problem(scope) is None


def rules_for(config: Config) -> ScopeRules:
    """The scope rules of a vault: the built-in kinds plus ``[scopes] extra_kinds``."""
    where = f"{CONFIG_RELPATH.as_posix()} [scopes]"
    extra = string_list(config.section("scopes"), "extra_kinds", (), where)
    for kind in extra:
        if not _KIND.match(kind):
            raise ConfigError(f"{where}: extra_kinds: {kind!r} must be a lower-case word (letters, digits, - or _)")
        if kind in BARE_KINDS:
            raise ConfigError(f"{where}: extra_kinds: {kind!r} is built in and takes no name")
    return ScopeRules(named=tuple(dict.fromkeys([*NAMED_KINDS, *extra])))


def check_filter(rules: ScopeRules, in_use: Callable[[str], bool], scopes: Iterable[str] | None) -> None:
    """A scope a search or list narrows to: valid, or held by some indexed
    memory (``in_use``: a hand-written folder doctor reports); anything else
    is a typo that would only ever match nothing. The caller asks the index:
    this module sits below it (docs/design.md, "Layers")."""
    for scope in scopes or ():
        if rules.valid(scope):
            continue
        if in_use(scope):
            continue
        rules.check(scope)


def unknown_scopes(rules: ScopeRules, path_scopes: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Indexed memories (``(path, scope)`` pairs from the index) whose scope
    is not valid (hand-written files in an unknown folder, or a ``scope:``
    typed by hand), for ``memex doctor``."""
    out: list[dict[str, Any]] = []
    for path, scope in path_scopes:
        found = rules.problem(str(scope))
        if found is not None:
            reason, suggestion = found
            out.append({"path": path, "scope": scope, "reason": reason, "suggestion": suggestion})
    return out


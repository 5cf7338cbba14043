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

A scope is one text however it is typed: it is NFKC-normalised (full-width
``ｐｒｏｊｅｃｔ`` is ``project``, a no-break space a space), and a control,
format or bidi character (U+202E turns the text around on screen, U+200B is
invisible) is refused: either would make a second scope that looks like a
real one, holding memories that no search of the real one finds.

Hand-written files are not refused: a file in ``memories/notes/`` is indexed
with the scope its folder gives (``notes``), and ``memex doctor`` lists it
(:func:`unknown_scopes`) until it is moved or the kind is configured.
Moving it to another scope silently would lose where the person put it.
"""

from __future__ import annotations

import re
import unicodedata
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
# Characters a scope never holds: control (Cc), format (Cf: zero-width
# characters, bidi controls and marks, the soft hyphen, BOM), line and
# paragraph separators, private use, surrogates, unassigned code points.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})


def normalize(scope: str) -> str:
    """``scope`` as memex stores it: NFKC, without surrounding whitespace."""
    return unicodedata.normalize("NFKC", scope).strip()


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` a scope must not hold, named; else None."""
    for char in text:
        if unicodedata.category(char) in _HIDDEN:
            return f"U+{ord(char):04X} ({unicodedata.name(char, 'an unnamed character').lower()})"
    return None


@dataclass(frozen=True)
class ScopeRules:
    named: tuple[str, ...] = NAMED_KINDS
    bare: tuple[str, ...] = BARE_KINDS

    def forms(self) -> str:
        """The valid forms, for an error message."""
        return ", ".join([*self.bare, *(f"{k}:NAME" for k in self.named)])

    def problem(self, scope: str) -> tuple[str, str | None] | None:
        """Why ``scope`` is not valid and what it probably meant; None when
        valid (as :func:`normalize` makes it)."""
        text = normalize(scope)
        hidden = hidden_character(text)
        if hidden is not None:
            visible = "".join(c for c in text if unicodedata.category(c) not in _HIDDEN).strip()
            return (f"{text!r} holds {hidden}, an invisible or control character",
                    visible if visible and self.problem(visible) is None else None)
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
        """``scope`` normalised (:func:`normalize`), or a :class:`ScopeError` naming ``origin``."""
        found = self.problem(scope)
        if found is None:
            return normalize(scope)
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


def check_filter(rules: ScopeRules, in_use: Callable[[str], bool], scopes: Iterable[str] | None) -> list[str]:
    """The scopes a search or list narrows to, as the index holds them: each
    valid (then normalised), or held by some indexed memory as given
    (``in_use``: a hand-written folder doctor reports); anything else is a
    typo that would only ever match nothing. The caller asks the index: this
    module sits below it (docs/design.md, "Layers")."""
    out = []
    for scope in scopes or ():
        if rules.valid(scope):
            out.append(normalize(scope))
        elif in_use(scope):
            out.append(scope)
        else:
            rules.check(scope)
    return out


def unknown_scopes(rules: ScopeRules, path_scopes: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Indexed memories (``(path, scope)`` pairs from the index) whose scope
    is not valid (hand-written files in an unknown folder, or a ``scope:``
    typed by hand), for ``memex doctor``."""
    out: list[dict[str, Any]] = []
    for path, scope in path_scopes:
        found = rules.problem(str(scope))
        if found is None and normalize(str(scope)) != str(scope).strip():
            # Valid only once normalised: as written it is a scope of its own.
            found = f"{scope!r} is written with look-alike characters", normalize(str(scope))
        if found is not None:
            reason, suggestion = found
            out.append({"path": path, "scope": scope, "reason": reason, "suggestion": suggestion})
    return out


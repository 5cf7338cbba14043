"""Plug-ins: import formats, embedding models and agent integrations from other packages.

A package adds one by naming an object in an entry point group of its
``pyproject.toml`` (docs/plugins.md)::

    [project.entry-points."memex.importers"]
    jsonl = "memex_jsonl:importer"

- ``memex.importers``: a format for ``memex import --format NAME``
  (:class:`memex.importers.source.Importer`);
- ``memex.models``: an ``[embedding] model = "NAME"`` / ``memex init --model
  NAME`` (a callable returning an :class:`memex.embedding.embed.Embedder`);
- ``memex.agents``: ``memex install NAME``, ``memex uninstall NAME`` and
  ``memex hook NAME`` (:class:`memex.agents.integrations.Agent`).

memex's own formats, models and agents are entries of the same groups,
written the same way (:data:`BUILTIN`; memex's pyproject.toml lists them
too, and tests/test_plugins.py keeps the two equal), and go through the same
loader. They are found without reading any package's metadata: importing
``importlib.metadata`` and scanning the installed packages costs a process
tens of milliseconds, which a hook or a search that uses only memex's own
never pays. Other packages' entries are read the first time a name memex
does not know is asked for, or a whole group is listed, and each is
imported only when it is used.

A plug-in that cannot be loaded (an import error, a missing object, an
object of the wrong shape) is one line on stderr naming it and the package
it came from, never a traceback, and memex carries on without it: it never
takes a built-in's place (a plug-in reusing one of memex's names is ignored,
with that line). ``MEMEX_PLUGINS=0`` turns every other package's entries off.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memex.errors import PluginError

IMPORTERS = "memex.importers"
MODELS = "memex.models"
AGENTS = "memex.agents"
GROUPS = (IMPORTERS, MODELS, AGENTS)
OWN_DISTRIBUTION = "memex-vault"  # memex.distribution.DISTRIBUTION, kept import-free here
ENV_SWITCH = "MEMEX_PLUGINS"

# memex's own entries, in the order auto-detection tries the formats.
BUILTIN: dict[str, dict[str, str]] = {
    IMPORTERS: {
        "obsidian": "memex.importers.formats:OBSIDIAN",
        "claude-md": "memex.importers.formats:CLAUDE_MD",
        "basic-memory": "memex.importers.formats:BASIC_MEMORY",
        "chatgpt": "memex.importers.formats:CHATGPT",
        "claude-ai": "memex.importers.formats:CLAUDE_AI",
        "mem0": "memex.importers.formats:MEM0",
    },
    MODELS: {
        "auto": "memex.embedding.embed:bundled_model",
        "multilingual": "memex.embedding.embed:multilingual_model",
    },
    AGENTS: {
        "claude-code": "memex.agents.integrations:CLAUDE_CODE",
        "codex": "memex.agents.integrations:CODEX",
        "openclaw": "memex.agents.integrations:OPENCLAW",
    },
}
# Names no plug-in may take: settings and commands that are not entries.
RESERVED = {MODELS: frozenset({"none"}), AGENTS: frozenset({"mcp"}), IMPORTERS: frozenset({"auto"})}

# What each group's object must have (docs/plugins.md); a model's entry is a
# callable that builds the model.
REQUIRED = {IMPORTERS: ("read",), AGENTS: ("install", "uninstall")}
SHAPES = {
    IMPORTERS: "an import format (an object with read(source))",
    AGENTS: "an agent integration (an object with install(setup) and uninstall(setup))",
    MODELS: "a model factory (a callable that builds the model)",
}

# An entry point's value: "module.path:attr.path", optionally followed by [extras].
_VALUE = re.compile(r"^\s*(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+))?\s*(?:\[.*\])?\s*$")


@dataclass(frozen=True)
class Entry:
    """One name in a group: where its object is, and which package registered it."""

    group: str
    name: str
    value: str
    dist: str = OWN_DISTRIBUTION
    version: str = ""

    @property
    def builtin(self) -> bool:
        return self.dist == OWN_DISTRIBUTION

    @property
    def label(self) -> str:
        """How a message names it: ``plug-in 'jsonl' (memex.importers, from memex-jsonl 0.1)``."""
        if self.builtin:
            return f"memex's own {self.name!r} ({self.group})"
        origin = f"{self.dist} {self.version}".strip()
        return f"plug-in {self.name!r} ({self.group}, from {origin})"

    def fail(self, reason: str) -> PluginError:
        return PluginError(f"{self.label} {reason}")

    def load(self) -> Any:
        """The object the entry names, imported now (once per process) and
        checked for what its group needs of it."""
        key = (self.group, self.name, self.value)
        if key in _LOADED:
            return _LOADED[key]
        found = _VALUE.match(self.value)
        if found is None:
            raise self.fail(f"names {self.value!r}, which is not 'module:object'")
        try:
            obj: Any = importlib.import_module(found["module"])
            for part in (found["attr"] or "").split(".") if found["attr"] else ():
                obj = getattr(obj, part)
        except Exception as exc:  # noqa: BLE001 - whatever a plug-in's import raises is its failure, not memex's
            raise self.fail(f"cannot be loaded ({type(exc).__name__}: {exc})") from exc
        missing = [m for m in REQUIRED.get(self.group, ()) if not callable(getattr(obj, m, None))]
        if missing or (self.group == MODELS and not callable(obj)):
            raise self.fail(f"is not {SHAPES[self.group]}; see memex help plugins")
        _LOADED[key] = obj
        return obj


_LOADED: dict[tuple[str, str, str], Any] = {}
_FOUND: dict[str, list[Entry]] = {}
_SAID: set[str] = set()
_HELD: list[list[str]] = []


def enabled() -> bool:
    """Whether other packages' entries are read (``MEMEX_PLUGINS=0`` turns them off)."""
    return os.environ.get(ENV_SWITCH, "").strip().lower() not in ("0", "false", "no", "off")


def warn(line: str) -> None:
    """Say ``line`` on stderr, once per process: a broken plug-in is reported, never raised past memex."""
    if line not in _SAID:
        _SAID.add(line)
        if _HELD:
            _HELD[-1].append(line)
        else:
            print(f"memex: {line}", file=sys.stderr)


@contextmanager
def held() -> Iterator[list[str]]:
    """Collect what :func:`warn` says meanwhile instead of printing it: for a
    caller whose own error already says it (``memex init --model``)."""
    _HELD.append([])
    try:
        yield _HELD[-1]
    finally:
        _HELD.pop()


def builtin(group: str, name: str) -> Entry | None:
    """memex's own entry called ``name``, found without reading any package metadata."""
    value = BUILTIN[group].get(name)
    return None if value is None else Entry(group, name, value)


def entries(group: str) -> list[Entry]:
    """Every entry of ``group``: memex's own first (in :data:`BUILTIN` order), then
    other packages' by name. Reads the installed packages' metadata (once)."""
    own = [Entry(group, name, value) for name, value in BUILTIN[group].items()]
    return own + _others(group)


def names(group: str) -> list[str]:
    return [e.name for e in entries(group)]


def find(group: str, name: str) -> Entry | None:
    """The entry called ``name``: memex's own without a scan, else another package's."""
    return builtin(group, name) or next((e for e in _others(group) if e.name == name), None)


def _others(group: str) -> list[Entry]:
    if not enabled():
        return []
    if group not in _FOUND:
        _FOUND[group] = _scan(group)
    return _FOUND[group]


def _scan(group: str) -> list[Entry]:
    from importlib import metadata

    try:
        points = list(metadata.entry_points(group=group))
    except Exception as exc:  # noqa: BLE001 - damaged metadata of some package: memex's own still work
        warn(f"cannot read the installed packages' {group} entry points ({type(exc).__name__}: {exc})")
        return []
    taken = set(BUILTIN[group]) | RESERVED.get(group, frozenset())
    found: dict[str, Entry] = {}
    for point in sorted(points, key=lambda p: (p.name, _dist_name(p))):
        dist = _dist_name(point)
        if _normal(dist) == _normal(OWN_DISTRIBUTION):
            continue  # memex's own, listed in its pyproject.toml: BUILTIN holds them
        version = getattr(getattr(point, "dist", None), "version", "") or ""
        entry = Entry(group, point.name, point.value, dist, version)
        if point.name in taken:
            warn(f"{entry.label} is ignored: {point.name!r} is memex's own")
        elif point.name in found:
            warn(f"{entry.label} is ignored: {found[point.name].label} has that name")
        else:
            found[point.name] = entry
    return list(found.values())


def _dist_name(point: Any) -> str:
    dist = getattr(point, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return str(name) if name else "an unnamed package"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def load_all(group: str) -> list[tuple[Entry, Any]]:
    """Every entry of ``group`` loaded; one that cannot be is said (:func:`warn`) and left out."""
    out = []
    for entry in entries(group):
        try:
            out.append((entry, entry.load()))
        except PluginError as exc:
            if entry.builtin:
                raise
            warn(f"{exc}; memex carries on without it")
    return out


def report() -> list[dict[str, str]]:
    """Every entry of every group, loaded: where it comes from, and ``ok`` or
    why it cannot be used (``memex plugins``)."""
    rows = []
    for group in GROUPS:
        for entry in entries(group):
            try:
                entry.load()
                status = "ok"
            except PluginError as exc:
                status = str(exc).removeprefix(entry.label).strip()
            origin = "memex" if entry.builtin else f"{entry.dist} {entry.version}".strip()
            rows.append({"group": group, "name": entry.name, "from": origin, "object": entry.value,
                         "status": status})
    return rows


def forget() -> None:
    """Read the installed packages again on next use (after installing one in-process, in tests)."""
    _FOUND.clear()
    _LOADED.clear()
    _SAID.clear()

"""``memex install openclaw``: memex as OpenClaw's context engine.

OpenClaw reads its config from ``$OPENCLAW_CONFIG_PATH``, else
``$OPENCLAW_STATE_DIR/openclaw.json``, else ``~/.openclaw/openclaw.json``.
memex merges into it, leaving every other key as it was:

- ``plugins.load.paths`` gets the plugin folder shipped in this package
  (``memex/agents/openclaw_plugin``), so upgrading memex upgrades the plugin;
- ``plugins.entries.memex`` = ``{enabled: true, config: {command}}`` where
  ``command`` starts ``memex [--vault V] openclaw-engine``;
- ``plugins.slots.contextEngine`` = ``"memex"`` (the slot is exclusive: the
  engine it named before is reported, and uninstall puts it back);
- ``plugins.slots.memory`` = ``"memex"``: OpenClaw's memory search reads
  memex instead of its own ``memory-core`` (likewise reported and put back);
- ``plugins.allow`` gets ``memex`` only when the file has an allow list.

Uninstall takes out exactly these. The file is JSON5 to OpenClaw; memex
edits only a file that is plain JSON (what ``openclaw config set`` writes)
and otherwise says so and changes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memex.agents.install import load_json, write_json
from memex.errors import InvalidArgument

PLUGIN_ID = "memex"
PLUGIN_DIR = Path(__file__).resolve().parent / "openclaw_plugin"
# Where uninstall finds what each slot named before memex.
_PREVIOUS = "memexPreviousContextEngine"
_PREVIOUS_MEMORY = "memexPreviousMemory"


def config_path(home: Path | None = None, env: dict[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    if environ.get("OPENCLAW_CONFIG_PATH"):
        return Path(environ["OPENCLAW_CONFIG_PATH"]).expanduser()
    if environ.get("OPENCLAW_STATE_DIR"):
        return Path(environ["OPENCLAW_STATE_DIR"]).expanduser() / "openclaw.json"
    return (home or Path.home()) / ".openclaw" / "openclaw.json"


def _table(parent: dict[str, Any], key: str, path: Path, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidArgument(str(path), f"'{where}' must be an object; memex left the file unchanged")
    return value


def _list(parent: dict[str, Any], key: str, path: Path, where: str) -> list[Any]:
    value = parent.setdefault(key, [])
    if not isinstance(value, list):
        raise InvalidArgument(str(path), f"'{where}' must be a list; memex left the file unchanged")
    return value


def install_plugin(path: Path, command: list[str], plugin_dir: Path = PLUGIN_DIR) -> dict[str, Any]:
    settings = load_json(path)
    before = repr(settings)
    plugins = _table(settings, "plugins", path, "plugins")
    paths = _list(_table(plugins, "load", path, "plugins.load"), "paths", path, "plugins.load.paths")
    folder = str(plugin_dir)
    # An older memex's folder (another venv) would load a second copy of the same id.
    stale = [p for p in paths if isinstance(p, str) and p != folder and Path(p).name == plugin_dir.name
             and (Path(p) / "openclaw.plugin.json").exists() is False]
    for old in stale:
        paths.remove(old)
    if folder not in paths:
        paths.append(folder)
    entries = _table(plugins, "entries", path, "plugins.entries")
    entry = _table(entries, PLUGIN_ID, path, f"plugins.entries.{PLUGIN_ID}")
    entry["enabled"] = True
    _table(entry, "config", path, f"plugins.entries.{PLUGIN_ID}.config")["command"] = command
    slots = _table(plugins, "slots", path, "plugins.slots")
    previous = slots.get("contextEngine")
    if previous not in (None, PLUGIN_ID, "legacy"):
        plugins[_PREVIOUS] = previous
    slots["contextEngine"] = PLUGIN_ID
    # OpenClaw's default memory plugin is memory-core: only another choice is kept for uninstall.
    previous_memory = slots.get("memory")
    if previous_memory not in (None, PLUGIN_ID):
        plugins[_PREVIOUS_MEMORY] = previous_memory
    slots["memory"] = PLUGIN_ID
    if isinstance(plugins.get("allow"), list) and PLUGIN_ID not in plugins["allow"]:
        plugins["allow"].append(PLUGIN_ID)
    changed = repr(settings) != before
    if changed:
        write_json(path, settings)
    out: dict[str, Any] = {"config": str(path), "plugin": folder, "engine": PLUGIN_ID, "changed": changed}
    if previous not in (None, PLUGIN_ID, "legacy"):
        out["replaced_engine"] = previous
    if previous_memory not in (None, PLUGIN_ID):
        out["replaced_memory"] = previous_memory
    return out


def uninstall_plugin(path: Path, plugin_dir: Path = PLUGIN_DIR) -> dict[str, Any]:
    settings = load_json(path)
    plugins = settings.get("plugins")
    removed = 0
    if isinstance(plugins, dict):
        load = plugins.get("load")
        if isinstance(load, dict) and isinstance(load.get("paths"), list) and str(plugin_dir) in load["paths"]:
            load["paths"].remove(str(plugin_dir))
            removed += 1
            if not load["paths"]:
                del load["paths"]
            if not load:
                del plugins["load"]
        entries = plugins.get("entries")
        if isinstance(entries, dict) and entries.pop(PLUGIN_ID, None) is not None:
            removed += 1
            if not entries:
                del plugins["entries"]
        slots = plugins.get("slots")
        if isinstance(slots, dict) and slots.get("contextEngine") == PLUGIN_ID:
            previous = plugins.pop(_PREVIOUS, None)
            if isinstance(previous, str):
                slots["contextEngine"] = previous
            else:
                del slots["contextEngine"]
            removed += 1
        if isinstance(slots, dict) and slots.get("memory") == PLUGIN_ID:
            previous_memory = plugins.pop(_PREVIOUS_MEMORY, None)
            if isinstance(previous_memory, str):
                slots["memory"] = previous_memory
            else:
                del slots["memory"]
            removed += 1
        if isinstance(slots, dict) and not slots:
            del plugins["slots"]
        if isinstance(plugins.get("allow"), list) and PLUGIN_ID in plugins["allow"]:
            plugins["allow"].remove(PLUGIN_ID)
            removed += 1
        if not plugins:
            del settings["plugins"]
    if removed:
        write_json(path, settings)
    return {"config": str(path), "removed": removed, "changed": bool(removed)}

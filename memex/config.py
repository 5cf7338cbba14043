"""The vault's settings: ``.memex/config.toml``, every key optional.

Core settings are typed attributes of :class:`Config`. A feature module keeps
its own settings in its own TOML table and reads it with
:meth:`Config.section`, so that adding a feature never touches this file.
The documented defaults live in ``vault-template/.memex/config.toml``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memex.config_trust import Layers, read_layers
from memex.errors import ConfigError
from memex.layout import CONFIG_LOCAL_RELPATH, template_dir
from memex.layout import CONFIG_RELPATH as CONFIG_RELPATH  # how messages name the file

BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True)
class Config:
    default_scope: str = "user"
    max_file_bytes: int = 1024 * 1024
    embedding_model: str = "auto"
    chunk_chars: int = 800
    chunk_overlap: int = 120
    # Where the derived index lives: "sqlite" (index.db in the vault) or
    # "postgres" (a shared server, index_url; docs/postgres.md).
    index_backend: str = "sqlite"
    index_url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    # Settings ignored and why, unknown keys with the nearest known name (doctor,
    # `memex sync`, the first command: memex/config_trust.py).
    notices: tuple[str, ...] = ()
    # "table.key" -> the file its value came from (messages name it).
    origin: dict[str, str] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """The TOML table ``[name]`` (empty when absent)."""
        value = self.raw.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{CONFIG_RELPATH}: [{name}] must be a table")
        return value


def _typed(table: dict[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    value = table.get(key, default)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"{where}: {key} must be {kind.__name__}, got {value!r}")
    return value


def setting(section: dict[str, Any], key: str, default: Any, where: str) -> Any:
    """Read one key of a feature's section, checked against the default's type."""
    return _typed(section, key, type(default), default, where)


def fraction(section: dict[str, Any], key: str, default: float, where: str) -> float:
    """A threshold or share: a number from 0 to 1."""
    value = float(setting(section, key, float(default), where))
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{where}: {key} must be from 0 to 1, got {value}")
    return value


def string_list(section: dict[str, Any], key: str, default: Sequence[str], where: str) -> tuple[str, ...]:
    """A list of strings (source names, categories, glob patterns)."""
    value = setting(section, key, list(default), where)
    if not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def load_config(root: Path) -> Config:
    """The vault's settings: the user's own file, the vault's shared file and
    its local file, merged; what only this machine may set is taken from the
    first and the last only (:mod:`memex.config_trust`)."""
    layers = read_layers(root)
    raw = layers.raw
    for name in ("vault", "index", "embedding"):
        if not isinstance(raw.get(name, {}), dict):
            raise ConfigError(f"{layers.origin.get(name, layers.shared)}: [{name}] must be a table")
    vault, index, embedding = (raw.get(n, {}) for n in ("vault", "index", "embedding"))

    def typed(table: dict[str, Any], name: str, key: str, kind: type, default: Any) -> Any:
        return _typed(table, key, kind, default, layers.where(name, key))

    cfg = Config(
        default_scope=typed(vault, "vault", "default_scope", str, Config.default_scope),
        max_file_bytes=typed(index, "index", "max_file_bytes", int, Config.max_file_bytes),
        embedding_model=typed(embedding, "embedding", "model", str, Config.embedding_model),
        chunk_chars=typed(index, "index", "chunk_chars", int, Config.chunk_chars),
        chunk_overlap=typed(index, "index", "chunk_overlap", int, Config.chunk_overlap),
        index_backend=typed(index, "index", "backend", str, Config.index_backend),
        index_url=typed(index, "index", "url", str, "") or None,
        raw=raw,
        notices=tuple(layers.notices + _hints(layers)),
        origin=dict(layers.origin),
    )
    if cfg.max_file_bytes <= 0:
        raise ConfigError(f"{layers.where('index', 'max_file_bytes')}: index.max_file_bytes must be positive")
    if not 0 <= cfg.chunk_overlap < cfg.chunk_chars:
        raise ConfigError(f"{layers.where('index', 'chunk_overlap')}: index.chunk_overlap must be in [0, chunk_chars)")
    where = layers.where("index", "backend")
    if cfg.index_backend not in BACKENDS:
        raise ConfigError(f"{where}: index.backend must be one of {', '.join(BACKENDS)}, got {cfg.index_backend!r}")
    if cfg.index_backend == "postgres" and not cfg.index_url:
        raise ConfigError(
            f"{where}: index.backend = \"postgres\" needs index.url, a PostgreSQL connection string "
            "such as \"postgresql://memex@db.example/memex\" (memex help postgres)"
        )
    return cfg


def _hints(layers: Layers) -> list[str]:
    """Keys memex does not know, in each file that holds them (a typo would
    otherwise change nothing without a word), and an index url no backend uses."""
    known = known_keys(*(
        (template_dir() / rel).read_text(encoding="utf-8") for rel in (CONFIG_RELPATH, CONFIG_LOCAL_RELPATH)
    ))
    out = [f"{label}: {found}; memex ignores it" for label, raw in layers.files for found in unknown_keys(raw, known)]
    index = layers.raw.get("index", {})
    if isinstance(index, dict) and index.get("url") and index.get("backend", "sqlite") == "sqlite":
        out.append(
            f"{layers.labels.get(layers.where('index', 'url'), CONFIG_RELPATH.as_posix())}: [index] url is set but backend is \"sqlite\", so the index stays in "
            f"{CONFIG_RELPATH.parent.as_posix()}/index.db; set backend = \"postgres\" beside it to use the server"
        )
    return out


_TABLE = re.compile(r"^\s*\[", re.M)
_MODEL_LINE = re.compile(r"^#?[ \t]*model[ \t]*=.*$", re.M)


def with_embedding_model(text: str, model: str) -> str:
    """``text`` (a config file) with ``[embedding] model`` set to ``model``.

    The template's commented default (``# model = "auto"``) becomes the
    setting, so the comments explaining it stay beside it; a file without
    the table gains one at the end.
    """
    line = "model = " + json.dumps(model, ensure_ascii=False)  # a JSON string is a TOML basic string
    header = re.search(r"^\[embedding\][ \t]*$", text, re.M)
    if header is None:
        out = text.rstrip("\n") + "\n\n[embedding]\n" + line + "\n"
    else:
        following = _TABLE.search(text, header.end())
        end = following.start() if following else len(text)
        found = _MODEL_LINE.search(text, header.end(), end)
        if found is None:
            out = text[: header.end()] + "\n" + line + text[header.end() :]
        else:
            out = text[: found.start()] + line + text[found.end() :]
    if tomllib.loads(out).get("embedding", {}).get("model") != model:  # never write a file that reads otherwise
        raise ConfigError(f"{CONFIG_RELPATH}: could not set [embedding] model = {model!r}")
    return out


_TEMPLATE_TABLE = re.compile(r"^#?\s*\[([a-z_.]+)\]\s*$")
_TEMPLATE_KEY = re.compile(r"\b([a-z][a-z0-9_]*)\s*=")
# Tables whose keys are the user's own names (a category's decay rate).
_OPEN_TABLES = frozenset({"decay.categories"})


def known_keys(*templates: str) -> dict[str, set[str]]:
    """Table -> the keys the vault templates document (their commented
    defaults and the keys their prose names), so a typo can be told apart."""
    known: dict[str, set[str]] = {"": set()}
    for template in templates:
        table = ""
        for line in template.splitlines():
            header = _TEMPLATE_TABLE.match(line)
            if header:
                table = header.group(1)
                known.setdefault(table, set())
            elif line.lstrip().startswith("#") or "=" in line:
                known[table].update(_TEMPLATE_KEY.findall(line))
    return known


def unknown_keys(raw: dict[str, Any], known: dict[str, set[str]]) -> list[str]:
    """Sentences naming each table or key of ``raw`` that ``known`` lacks,
    with the nearest known name: memex ignores such a key, so a typo
    would otherwise change nothing without a word. A key that belongs in
    another table (``backend`` under ``[vault]``, or above every table) is
    named with the table it belongs in."""
    found: list[str] = []
    everywhere = {key: table for table, keys in known.items() if table for key in sorted(keys)}

    def nearest(key: str, table: str) -> str:
        from difflib import get_close_matches  # only for a key memex does not know (start-up)

        if key in everywhere and everywhere[key] != table:
            return f"; did you mean [{everywhere[key]}] {key}?"
        guess = get_close_matches(key, sorted(known.get(table, set())), n=1)
        if guess:
            return f"; did you mean {guess[0]}?"
        anywhere = get_close_matches(key, sorted(everywhere), n=1)
        return f"; did you mean [{everywhere[anywhere[0]]}] {anywhere[0]}?" if anywhere else ""

    def walk(table: dict[str, Any], name: str) -> None:
        if name in _OPEN_TABLES:
            return
        for key, value in table.items():
            full = f"{name}.{key}" if name else key
            if isinstance(value, dict) and full in known:
                walk(value, full)
            elif isinstance(value, dict):
                from difflib import get_close_matches

                guess = get_close_matches(full, [t for t in known if t], n=1)
                found.append(f"unknown table [{full}]" + (f"; did you mean [{guess[0]}]?" if guess else ""))
            elif key not in known.get(name, set()):
                where = f"[{name}] " if name else ""
                found.append(f"unknown key {where}{key}{nearest(key, name)}")

    walk(raw, "")
    return found

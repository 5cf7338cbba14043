"""Which settings file may set what (docs/team.md, "Settings a teammate cannot set").

A vault's settings come from three files, lowest precedence first:

1. the user's own file, ``$MEMEX_CONFIG_DIR/config.toml`` (else
   ``$XDG_CONFIG_HOME/memex/config.toml``, else ``~/.config/memex/config.toml``):
   every vault of this user on this machine;
2. the vault's shared file, ``.memex/config.toml``: committed, pulled from
   teammates, copied with the folder;
3. the clone's own file, ``.memex/config.local.toml``: git-ignored.

A setting that runs a command, opens a connection, or reads files outside
the vault (:data:`MACHINE_ONLY`) is taken only from this machine's own
files (1 and 3), never from the shared file: anyone who can push to the
vault's remote (or write into a shared folder) can write the shared file,
and memex runs as you. Such a setting found in the shared file is ignored
and named in :attr:`Layers.notices` (doctor, ``memex sync``'s report, the
first command that reads it). This is git's rule (a repository's files
never configure what git runs; ``.git/config`` is never transferred) and
VS Code's machine-scoped settings (ignored in a workspace's settings), not
direnv's or mise's "allow this file": a shared file changes at every pull,
and an agent's hook has nobody to ask.

An own file is taken as one only when memex can tell it is: owned by this
user and not writable by others (git's ``safe.directory`` check), and, for
the vault's local file, not tracked by git (a teammate can commit a
git-ignored file with ``git add -f``). Otherwise it is read like the
shared file, and the notice says why.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memex.errors import ConfigError
from memex.layout import CONFIG_LOCAL_RELPATH, CONFIG_NAME, CONFIG_RELPATH

ENV_DIR = "MEMEX_CONFIG_DIR"
USER_CONFIG_NAME = CONFIG_NAME  # the same name as the vault's, in the user's folder
NAMED_MODELS = ("auto", "multilingual", "none")
DOCS = "`memex help team`"

# Table -> key -> what it would let a teammate do on your machine.
MACHINE_ONLY: dict[str, dict[str, str]] = {
    "context": {"extract_command": "runs a command with your session transcripts on its input"},
    "index": {
        "backend": "chooses where this clone's index lives",
        "url": "connects to a server",
        "erase_vacuum": "decides how this clone's server scrubs an erasure",
    },
    "resources": {"roots": "lets agents import files from folders outside the vault"},
    "team": {"remote": "names one of this clone's own git remotes"},
    "openclaw": {
        "capture_scope": "decides where what strangers tell your gateway is stored",
        "recall_scopes": "decides which of your memories your gateway shows strangers",
    },
    # [embedding] model: only a folder (a path to load a model from); a name is shared.
}


def machine_only(table: str, key: str, value: Any) -> str | None:
    """What the setting would let a teammate do, when only this machine may set it; else None."""
    if table == "embedding" and key == "model":
        return None if value in NAMED_MODELS else "loads a model from a folder on your machine"
    return MACHINE_ONLY.get(table, {}).get(key)


def user_config_path() -> Path:
    """The user's own settings file (see the module doc)."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser() / USER_CONFIG_NAME
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "memex" / USER_CONFIG_NAME


@dataclass
class Layers:
    """The settings of one vault, merged (:attr:`raw`), and what was set where."""

    raw: dict[str, Any] = field(default_factory=dict)
    # "table.key" -> the file its value came from (its full path: errors name it).
    origin: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    # (label, raw as written) of each file read, for the unknown-key check.
    files: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    shared: str = CONFIG_RELPATH.as_posix()
    labels: dict[str, str] = field(default_factory=dict)  # full path -> how notices name the file

    def where(self, table: str, key: str) -> str:
        """The file a setting came from (the shared one for a default)."""
        return self.origin.get(f"{table}.{key}", self.shared)


def read_layers(root: Path) -> Layers:
    """Read the three files of ``root``'s vault and merge them (see the module doc)."""
    out = Layers(shared=str(root / CONFIG_RELPATH))
    user = user_config_path()
    local = root / CONFIG_LOCAL_RELPATH
    for path, label, own in (
        (user, _home_label(user), True),
        (root / CONFIG_RELPATH, CONFIG_RELPATH.as_posix(), False),
        (local, CONFIG_LOCAL_RELPATH.as_posix(), True),
    ):
        raw = _read(path)
        if raw is None:
            continue
        out.files.append((label, raw))
        out.labels[str(path)] = label
        if own and raw:
            why = _not_own(path, root if path == local else None)
            if why is not None:
                out.notices.append(f"{label}: {why}; memex reads it like {CONFIG_RELPATH.as_posix()}")
                own = False
        if not own:
            raw = _drop_machine_only(raw, label, out.notices)
        _merge(out.raw, raw, str(path), out.origin, "")
    return out


def _home_label(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if home not in ("", "/") and text.startswith(home + os.sep) else text


def _read(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except RecursionError as exc:  # a shared file: a teammate can push any bytes
        raise ConfigError(f"{path}: arrays or tables nested too deeply to read") from exc


def _not_own(path: Path, vault_root: Path | None) -> str | None:
    """Why ``path`` cannot be taken as this user's own file; None when it can."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot be checked ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return "is owned by another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users may write it (mode {stat.S_IMODE(st.st_mode):04o}; `chmod go-w` it)"
    if vault_root is not None:
        return tracked_by_git(vault_root, CONFIG_LOCAL_RELPATH.as_posix())
    return None


def tracked_by_git(root: Path, rel: str) -> str | None:
    """None when git does not track ``root/rel``; else why it cannot count as this clone's own."""
    if shutil.which("git") is None:
        if any((folder / ".git").exists() for folder in (root, *root.parents)):
            return "git is not installed, so memex cannot tell whether a commit brought this file"
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--error-unmatch", "--", rel], capture_output=True,
            text=True, timeout=30, check=False, env={**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return "memex cannot tell whether git tracks it (git did not answer)"
    if done.returncode == 0 and done.stdout:
        return (
            "git tracks this file, so a commit (a teammate's) may have written it; if every line is yours, "
            f"`git rm --cached {rel}` makes it this clone's own again"
        )
    if done.returncode == 1 or "not a git repository" in done.stderr:
        return None  # untracked, or no repository at all
    return f"memex cannot tell whether git tracks it ({done.stderr.strip().splitlines()[-1:] or 'git failed'})"


def _drop_machine_only(raw: dict[str, Any], label: str, notices: list[str]) -> dict[str, Any]:
    """``raw`` without the settings only this machine may set, each named in ``notices``."""
    kept: dict[str, Any] = {}
    found: list[str] = []
    for table, value in raw.items():
        if not isinstance(value, dict):
            kept[table] = value
            continue
        rest = {}
        for key, setting in value.items():
            if machine_only(table, key, setting) is None:
                rest[key] = setting
            else:
                found.append(f"[{table}] {key} ({machine_only(table, key, setting)})")
        kept[table] = rest
    if found:
        these = "it" if len(found) == 1 else "them"
        notices.append(
            f"{label} sets {', '.join(found)}, which only this machine's own settings may set (a teammate can push "
            f"this file): memex ignores {these} here; if you wrote {these}, move {these} to "
            f"{CONFIG_LOCAL_RELPATH.as_posix()} (this clone) or {_home_label(user_config_path())} (all your vaults); "
            f"see {DOCS}"
        )
    return kept


def _merge(into: dict[str, Any], new: dict[str, Any], label: str, origin: dict[str, str], prefix: str) -> None:
    for key, value in new.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, label, origin, name + ".")
        elif key in into and isinstance(value, dict) != isinstance(into[key], dict):
            # A table in one file, a value in another: one of them is wrong, say which.
            culprit = origin.get(name, label) if isinstance(value, dict) else label
            raise ConfigError(f"{culprit}: [{name}] must be a table")
        else:
            into[key] = _copy(value)
            origin[name] = label
            if isinstance(value, dict):
                for inner in _keys(value, name + "."):
                    origin[inner] = label


def _copy(value: Any) -> Any:
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value


def _keys(table: dict[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    for key, value in table.items():
        out.append(prefix + key)
        if isinstance(value, dict):
            out += _keys(value, prefix + key + ".")
    return out


def machine_settings_in(path: Path) -> list[str]:
    """``[table] key`` of each setting in ``path`` that only this machine may set
    (``memex sync`` never commits such a file: a URL may hold a password)."""
    try:
        raw = _read(path) or {}
    except ConfigError:
        return []
    return [
        f"[{table}] {key}" for table, value in raw.items() if isinstance(value, dict)
        for key, setting in value.items() if machine_only(table, key, setting) is not None
    ]


def announce(notices: list[str] | tuple[str, ...], seen_file: Path, write: Callable[[str], None],
             remember: bool) -> bool:
    """Show ``notices`` once: unless ``seen_file`` says these very lines were shown
    already. ``remember``: record them as shown (someone was there to read them,
    a terminal); otherwise they are shown again next time. True when shown."""
    text = "\n".join(notices)
    try:
        seen = seen_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        seen = None
    if not notices:
        if seen is not None:
            try:
                seen_file.unlink()  # a problem that comes back later is shown again
            except OSError:
                pass
        return False
    if seen == text:
        return False
    for line in notices:
        write(f"memex: config: {line}")
    if remember:
        try:
            seen_file.parent.mkdir(parents=True, exist_ok=True)
            temp = seen_file.with_name(f".{seen_file.name}.{os.getpid()}.tmp")
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, seen_file)
        except OSError:
            pass  # shown again next time: better than never
    return True

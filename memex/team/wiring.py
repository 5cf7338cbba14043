"""What a clone needs before git may merge memory files: the merge drivers.

``.gitattributes`` (committed, so every clone uses the same rules) names the
drivers; the drivers themselves are per-clone git configuration (git never
takes commands from a repository's files), set by ``memex sync`` when they
are missing or point at another Python. The command is this interpreter's
absolute path, so the driver runs without ``memex`` on PATH.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from memex.layout import ERASE_KEY_ID_NAME, ERASED_LIST_NAME, GIT_ATTRIBUTES_NAME, MEMEX_DIR, MEMORIES_DIR
from memex.team.gitrepo import Repo

ATTRIBUTES_NAME = GIT_ATTRIBUTES_NAME
# Vault-relative names git commands and messages use.
LIST_FILE = f"{MEMEX_DIR}/{ERASED_LIST_NAME}"
KEY_ID_FILE = f"{MEMEX_DIR}/{ERASE_KEY_ID_NAME}"
MEMORY_PREFIX = f"{MEMORIES_DIR}/"
ATTRIBUTES = (
    f"{MEMORIES_DIR}/**/*.md merge=memex",
    f"{MEMEX_DIR}/{ERASED_LIST_NAME} merge=memex-erased",
)
_HEADER = "# memex sync: memory files and the erased list merge by memex's rules (memex help team)"


def drivers() -> dict[str, str]:
    """git config key -> value for the two drivers."""
    python = shlex.quote(sys.executable)
    return {
        "merge.memex.name": "memex memory file merge",
        "merge.memex.driver": f"{python} -m memex.team.merge memory %O %A %B %P",
        "merge.memex-erased.name": "memex erased list merge",
        "merge.memex-erased.driver": f"{python} -m memex.team.merge erased %O %A %B %P",
    }


def missing(repo: Repo, root: Path) -> list[str]:
    """What is not set up yet (for a dry run's report)."""
    out: list[str] = []
    path = root / ATTRIBUTES_NAME
    have = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    out += [f"{ATTRIBUTES_NAME}: {line}" for line in ATTRIBUTES if line not in have]
    for key, value in drivers().items():
        if repo.run("config", "--local", key, check=False).out.strip() != value:
            out.append(f"git config {key}")
    info = repo.git_dir / "info" / "attributes"
    have_info = info.read_text(encoding="utf-8").splitlines() if info.is_file() else []
    out += [f".git/info/attributes: {repo.prefix}{line}" for line in ATTRIBUTES if f"{repo.prefix}{line}" not in have_info]
    return out


def ensure(repo: Repo, root: Path) -> list[str]:
    """Set up what :func:`missing` lists; returns it."""
    todo = missing(repo, root)
    path = root / ATTRIBUTES_NAME
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lacking = [line for line in ATTRIBUTES if line not in text.splitlines()]
    if lacking:
        head = [] if _HEADER in text else [_HEADER]
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + "\n".join(head + lacking) + "\n"
        path.write_text(text, encoding="utf-8")
    for key, value in drivers().items():
        repo.run("config", "--local", key, value)
    _info_attributes(repo)
    return todo


def _info_attributes(repo: Repo) -> None:
    """The same lines in .git/info/attributes: during a rebase the work tree holds the
    remote's files, whose .gitattributes may not name the drivers yet (the first sync)."""
    path = repo.git_dir / "info" / "attributes"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lacking = [f"{repo.prefix}{line}" for line in ATTRIBUTES if f"{repo.prefix}{line}" not in text.splitlines()]
    if lacking:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((text.rstrip("\n") + "\n" if text.strip() else "") + "\n".join(lacking) + "\n", encoding="utf-8")

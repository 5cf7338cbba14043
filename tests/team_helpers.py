"""Three clones of one team vault and a bare remote, on this machine (real git)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memex.files.memory_file import read
from memex.team.sync import SyncReport, sync
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def _identity(root: Path, name: str) -> None:
    git(root, "config", "user.name", name)
    git(root, "config", "user.email", f"{name}@example.org")


class Team:
    """A bare remote and clones ``a``, ``b``, ``c`` (each a vault with the fake embedder)."""

    def __init__(self, base: Path, names: tuple[str, ...] = ("a", "b", "c")) -> None:
        self.base = base
        self.remote = base / "remote.git"
        git(base, "init", "-q", "--bare", "-b", "main", str(self.remote))
        self.embedder = HashEmbedder()
        first = names[0]
        root = init_vault(base / first, git=True)
        git(root, "symbolic-ref", "HEAD", "refs/heads/main")
        _identity(root, first)
        git(root, "remote", "add", "origin", str(self.remote))
        self.roots = {first: root}
        self.sync(first)
        for name in names[1:]:
            self.join(name)

    def join(self, name: str) -> SyncReport:
        root = self.base / name
        git(self.base, "clone", "-q", str(self.remote), str(root))
        _identity(root, name)
        self.roots[name] = root
        return self.sync(name, key_file=self.roots["a"] / ".memex" / "erase.key")

    @contextmanager
    def vault(self, name: str) -> Iterator[Vault]:
        with Vault(self.roots[name], embedder=self.embedder) as v:
            yield v

    def sync(self, name: str, **options: Any) -> SyncReport:
        with self.vault(name) as v:
            return sync(v, **options)

    def add(self, name: str, text: str, **options: Any) -> str:
        with self.vault(name) as v:
            result = v.add(text, **options)
            return str(result.id)

    def files(self, name: str) -> dict[str, bytes]:
        """Every memory file and the erased list, by path."""
        root = self.roots[name]
        out = {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "memories").rglob("*.md")}
        erased = root / ".memex" / "erased.txt"
        if erased.exists():
            out[".memex/erased.txt"] = erased.read_bytes()
        return out

    def index(self, name: str) -> list[tuple[str, str, str, str]]:
        """(id, path, status, body) of every indexed memory, sorted."""
        with self.vault(name) as v:
            return sorted((m.id, m.path, m.status, m.body) for m in v.list(limit=100000, include_superseded=True))

    def path_of(self, name: str, memory_id: str) -> Path:
        """Where the index says the memory's file is (it may have been deleted since)."""
        for found, path, _, _ in self.index(name):
            if found == memory_id:
                return self.roots[name] / path
        raise KeyError(memory_id)

    def body(self, name: str, memory_id: str) -> str:
        mf, _ = read(self.path_of(name, memory_id), 1 << 20)
        return mf.body


def raw_bytes_outside_git(root: Path) -> bytes:
    """Every byte of every file under ``root`` except .git/."""
    chunks: list[bytes] = []
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts or not path.is_file():
            continue
        chunks.append(path.read_bytes())
    return b"\0".join(chunks)


def copy_key(src: Path, dst: Path) -> None:
    shutil.copy(src / ".memex" / "erase.key", dst / ".memex" / "erase.key")


class Listener:
    """A TCP server that counts the connections it is offered (a teammate's 'database')."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.closed = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)  # a close in another thread does not wake accept(): look again often
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.closed = True
        self.thread.join(5)
        self.sock.close()

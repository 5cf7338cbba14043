"""No command a user can type prints a traceback.

The command tree is walked from ``memex.cli.app()`` itself, so a command or
option added later is covered without editing this file. Each command runs
in-process on a small vault (fake embedder): alone, with each option on its
own, with each pair of options, and with every option at once, each with and without ``--json``. Usage
errors and one-line ``Error:`` messages are fine; an exception escaping the
command is not.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from memex.embedding import embed
from memex.cli import app
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder

# Commands that do not return by themselves; each has its own start/stop test.
LONG_RUNNING = {
    "memex watch": "runs until stopped (tests/test_watch_process.py starts and stops it)",
    "memex mcp": "serves MCP on stdio until EOF (tests/test_mcp_server.py)",
    "memex demo": "builds its own vault with the real model, ~20 s (tests/test_core_demo.py)",
}

# One standard-input document that every `memex context ...` command accepts.
CONTEXT_INPUT = json.dumps({
    "session": "s1",
    "messages": [{"role": "user", "content": "remember that the build uses make"}],
    "token_budget": 2000,
    "pre_prompt_count": 0,
    "current_tokens": 100,
    "prompt": "remember that the build uses make",
})


def problems(args: list[str], result: Result) -> list[str]:
    """What a user would hold against this run: a traceback, or ``--json`` without JSON."""
    said = " ".join(args[2:])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return [f"{said}: {type(result.exception).__name__}: {result.exception}"]
    if "Traceback" in result.output:
        return [f"{said}: traceback in the output"]
    if "--json" in args:  # a failed run too: {"error": ...} on stdout (docs/cli.md)
        try:
            json.loads(result.stdout)
        except ValueError:
            return [f"{said}: --json printed no JSON (exit {result.exit_code}): {result.stdout[:200]!r}"]
    return []


def walk(group: click.Group, prefix: str = "memex") -> Iterator[tuple[str, click.Command]]:
    for name in sorted(group.commands):
        command = group.commands[name]
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield from walk(command, path)
        else:
            yield path, command


def _sample(param: click.Parameter, ids: dict[str, str], tmp: Path) -> list[str]:
    """A plausible value for an argument or a non-flag option."""
    name = param.name or ""
    kind = param.type
    if isinstance(kind, click.Choice):
        return [str(kind.choices[0])]
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        low = kind.min if kind.min is not None else 1
        return [str(max(low, 1) if isinstance(kind, click.IntRange) else max(float(low), 0.5))]
    if isinstance(kind, click.types.IntParamType):
        return ["3"]
    if isinstance(kind, click.types.FloatParamType):
        return ["0.5"]
    by_name = {
        "memory_id": ids["session_memory"],
        "old_id": ids["session_memory"],
        "text": "The release checklist lives in RELEASE.md",
        "query": "tabs",
        "path": str(tmp / "new-vault"),
        "name": "SQLite",
        "archive_id": "a-missing",
        "payload": "{}",
        "scope": "user",
        "session": "s1",
        "source": "user",
        "source_ref": "notes.txt#L1",
        "reason": "test",
        "category": "decision",
        "entities": "SQLite",
        "agent": "claude-code",
        "vault_path": "",  # filled in by the caller
    }
    return [by_name.get(name, "x")]


def _option_args(option: click.Option, ids: dict[str, str], tmp: Path, vault: Path) -> list[str]:
    flag = option.opts[0]
    if option.name == "vault_path":
        return [flag, str(vault)]
    if option.is_flag:
        # A flag_value group (--user / --project) shares one name: use this spelling.
        return [flag]
    return [flag, *_sample(option, ids, tmp)]


def invocations(path: str, command: click.Command, ids: dict[str, str], tmp: Path, vault: Path) -> list[list[str]]:
    """The command alone, with each option, each pair of options, and all of them."""
    words = path.split()[1:]
    base = list(words)
    for param in command.params:
        if isinstance(param, click.Argument):
            base += _sample(param, ids, tmp)
    options = [p for p in command.params if isinstance(p, click.Option) and p.name != "as_json"]
    runs = [base]
    runs += [base + _option_args(o, ids, tmp, vault) for o in options]
    runs += [
        base + _option_args(a, ids, tmp, vault) + _option_args(b, ids, tmp, vault)
        for a, b in itertools.combinations(options, 2)
    ]
    if len(options) > 1:
        everything: list[str] = list(base)
        for o in options:
            everything += _option_args(o, ids, tmp, vault)
        runs.append(everything)
    out = []
    for args in runs:
        out.append(["--vault", str(vault), *args])
        if any(p.name == "as_json" for p in command.params):
            out.append(["--vault", str(vault), *args, "--json"])
    return out


# What the walk's vault holds (key, body, scope, session); the PostgreSQL walk seeds the same.
SEED_MEMORIES = (
    ("session_memory", "The user prefers tabs over spaces", "user", "s1"),
    ("twin", "The user likes tabs over spaces", "user", "s1"),
    ("project", "The index uses [[SQLite]] in WAL mode", "project:memex", "s2"),
    ("other", "CI has two cores", "project:memex", None),
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A small vault: two sessions, similar memories, an entity, a hand-written file."""
    root = init_vault(tmp_path_factory.mktemp("tpl") / "vault", git=False)
    ids: dict[str, str] = {}
    with Vault(root, embedder=HashEmbedder()) as vault:
        for key, body, scope, session in SEED_MEMORIES:
            ids[key] = vault.add(body, scope=scope, session=session).id
        (root / "memories" / "user" / "handwritten.md").write_text("Herons nest near the river.\n")
        vault.reindex()
    return root, ids


def test_the_walk_sees_every_command() -> None:
    names = {path for path, _ in walk(app())}
    # A sanity check on the walk itself, not a list to maintain: nested groups are entered.
    assert {"memex add", "memex install claude-code", "memex context assemble"} <= names
    assert len(names) >= 30


@pytest.mark.parametrize("path", [p for p, _ in walk(app())])
def test_no_command_prints_a_traceback(
    path: str, template: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path in LONG_RUNNING:
        pytest.skip(LONG_RUNNING[path])
    command = dict(walk(app()))[path]
    src, ids = template
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # install/uninstall write here
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    cli = app()
    failures: list[str] = []
    for args in invocations(path, command, ids, tmp_path, tmp_path / "vault"):
        # Each run starts from the same vault: an erase or an init must not
        # turn the next run into a different (less interesting) case.
        shutil.rmtree(tmp_path / "vault", ignore_errors=True)
        shutil.rmtree(tmp_path / "new-vault", ignore_errors=True)
        shutil.copytree(src, tmp_path / "vault")
        stdin = CONTEXT_INPUT if path.startswith("memex context") or path == "memex hook" else None
        result = CliRunner().invoke(cli, args, input=stdin)
        failures.extend(problems(args, result))
    assert not failures, "\n".join(failures)

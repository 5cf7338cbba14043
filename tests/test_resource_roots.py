"""memory_add_resource imports only from allowed roots (docs/write-path.md):
the vault, the agent's project folder and ``[resources] roots``. It used to
follow a link in the given folder to /etc/passwd, and import any readable
Markdown anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.agents import mcp_server
from memex.agents.resources import import_markdown
from memex.errors import InvalidArgument, MemexError
from memex.vault import Vault
from tests.hook_helpers import set_config

SECRET = "The production root password is hunter2-secret-marker."


@pytest.fixture
def layout(tmp_path: Path, vault_root: Path) -> dict[str, Path]:
    (vault_root / ".memex" / "config.toml").write_text('[embedding]\nmodel = "none"\n', encoding="utf-8")
    project = tmp_path / "project"
    docs = project / "docs"
    docs.mkdir(parents=True)
    (docs / "ops.md").write_text("# Operations\n\nRotate the signing keys every 90 days.\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secrets\n\n{SECRET}\n", encoding="utf-8")
    (docs / "leak.md").symlink_to(outside / "secret.md")
    (docs / "linked").symlink_to(outside, target_is_directory=True)
    if Path("/etc/passwd").exists():
        (docs / "passwd.md").symlink_to("/etc/passwd")
    return {"vault": vault_root, "project": project, "docs": docs, "outside": outside}


def _nothing_secret_stored(root: Path) -> None:
    for file in (root / "memories").rglob("*"):
        if file.is_file():
            text = file.read_text(encoding="utf-8")
            assert "hunter2" not in text and "root:x:0:0" not in text, file


def test_a_folder_import_skips_links_out_of_the_roots_and_says_so(layout: dict[str, Path]) -> None:
    with Vault(layout["vault"], embedder=None) as vault:
        answer = import_markdown(vault, "docs", cwd=layout["project"])
        assert answer["files"] == 1 and len(answer["created"]) == 1
        refused = {Path(e["file"]).name: e["reason"] for e in answer["errors"]}
        assert set(refused) >= {"leak.md", "linked"}
        assert "outside the folders resources may be imported from" in refused["leak.md"]
        assert "symbolic link" in refused["leak.md"]
        assert [h.body.splitlines()[0] for h in vault.list(scope="resources")] == ["Operations"]
    _nothing_secret_stored(layout["vault"])


@pytest.mark.parametrize("target", ["outside/secret.md", "project/docs/leak.md", "outside"])
def test_a_path_outside_the_roots_is_refused(layout: dict[str, Path], target: str) -> None:
    path = layout["project"].parent / target
    with Vault(layout["vault"], embedder=None) as vault:
        with pytest.raises(InvalidArgument, match="outside the folders resources may be imported from"):
            import_markdown(vault, str(path), cwd=layout["project"])
    _nothing_secret_stored(layout["vault"])


def test_roots_listed_in_config_are_allowed(layout: dict[str, Path]) -> None:
    # Folders on this machine: its own settings (.memex/config.local.toml), never the shared file.
    set_config(layout["vault"], "resources", f'roots = ["{layout["outside"]}"]')
    with Vault(layout["vault"], embedder=None) as vault:
        answer = import_markdown(vault, str(layout["outside"] / "secret.md"), cwd=layout["project"])
        assert len(answer["created"]) == 1


def test_a_server_started_in_home_or_root_has_no_project_folder(layout: dict[str, Path]) -> None:
    with Vault(layout["vault"], embedder=None) as vault:
        for cwd in ("/", str(Path.home())):
            with pytest.raises(InvalidArgument, match="outside"):
                import_markdown(vault, str(layout["docs"] / "ops.md"), cwd=cwd)


def test_the_mcp_tool_takes_its_working_folder_as_the_project(
    layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(layout["project"])
    with Vault(layout["vault"], embedder=None) as vault:
        tools = mcp_server.Tools(vault)
        assert len(tools.memory_add_resource("docs/ops.md")["created"]) == 1
        with pytest.raises(MemexError, match="outside"):
            tools.memory_add_resource(str(layout["outside"]))
        if (layout["docs"] / "passwd.md").exists():
            with pytest.raises(MemexError, match="symbolic link"):
                tools.memory_add_resource(str(layout["docs"] / "passwd.md"))
    _nothing_secret_stored(layout["vault"])


def test_memory_add_resource_says_what_is_wrong_with_a_file_in_words(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: memory_add_resource on a folder holding a file that
    is not UTF-8 answered Python's codec message ("'utf-8' codec can't decode
    byte 0xff in position 0: invalid start byte"), and a binary file that
    happened to decode reached the write path section by section. The reasons
    now read as memex's own for a vault file."""
    from memex.agents.resources import import_markdown

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text("# Runbook\n\nRestart billing with kubectl rollout restart.\n", encoding="utf-8")
    (docs / "latin.md").write_bytes(b"caf\xe9 au lait\n")
    (docs / "blob.md").write_bytes(b"PK\x03\x04\x00\x00binary")
    answer = import_markdown(vault, str(docs), cwd=tmp_path)
    reasons = {Path(e["file"]).name: e["reason"] for e in answer["errors"]}
    assert reasons == {
        "latin.md": "not UTF-8 text (byte 3); not imported",
        "blob.md": "path: binary file (NUL bytes), not Markdown; not imported",
    }
    assert len(answer["created"]) == 1

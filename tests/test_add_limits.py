"""``add`` refuses what the index would never hold, and writes nothing
(docs/write-path.md): a body over ``[index] max_file_bytes`` or with a NUL
byte used to be answered ``created`` and then never be found."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex import context
from memex.agents import mcp_server
from memex.cli import app
from memex.errors import InvalidArgument, MemexError
from memex.vault import Vault
from tests.fakes import HashEmbedder

CAP = 4096


@pytest.fixture
def small_vault(vault_root: Path) -> Path:
    (vault_root / ".memex" / "config.toml").write_text(
        f'[index]\nmax_file_bytes = {CAP}\n[embedding]\nmodel = "none"\n', encoding="utf-8"
    )
    return vault_root


def _stored(root: Path) -> tuple[list[Path], int]:
    with Vault(root, embedder=None) as vault:
        return sorted((root / "memories").rglob("*.md")), len(vault.list())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("word " * (CAP // 5 + 10), "max_file_bytes"),  # the body alone is over the cap
        ("word " * (CAP // 5 - 20), "max_file_bytes"),  # under it, but not with its frontmatter
        ("a log line\x00with a NUL byte in it", "NUL"),
    ],
    ids=["over-cap", "over-cap-with-frontmatter", "nul"],
)
def test_add_refuses_what_the_index_would_not_hold(small_vault: Path, text: str, why: str) -> None:
    with Vault(small_vault, embedder=HashEmbedder()) as vault:
        with pytest.raises(InvalidArgument, match=why):
            vault.add(text)
        assert vault.add("A body that fits is still stored.").status == "created"
    files, rows = _stored(small_vault)
    assert len(files) == 1 and rows == 1


def test_a_body_just_under_the_cap_is_stored_and_found(small_vault: Path) -> None:
    with Vault(small_vault, embedder=None) as vault:
        body = "zebra " + "word " * (CAP // 5 - 60)
        result = vault.add(body)
        assert result.status == "created"
        assert vault.get(result.id).body.strip() == body.strip()
        assert [h.id for h in vault.search("zebra")] == [result.id]


class CountingInput(io.BytesIO):
    """Standard input that remembers how much was asked for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)


def test_cli_add_from_stdin_over_the_cap_is_refused_without_reading_it_all(small_vault: Path) -> None:
    stdin = CountingInput(b"remember this " * 400_000)  # 5.6 MB
    result = CliRunner().invoke(app(), ["--vault", str(small_vault), "add", "-"], input=stdin)
    assert result.exit_code == 1
    assert "max_file_bytes" in result.output and "Traceback" not in result.output
    assert stdin.taken <= CAP + 1
    assert _stored(small_vault) == ([], 0)


def test_cli_add_of_a_nul_byte_is_one_clear_line(small_vault: Path) -> None:
    result = CliRunner().invoke(app(), ["--vault", str(small_vault), "add", "-"], input=b"abc\x00def")
    assert result.exit_code == 1
    assert result.output.startswith("Error: text: holds a NUL byte")
    assert _stored(small_vault) == ([], 0)


def test_mcp_memory_add_refuses_too(small_vault: Path) -> None:
    with Vault(small_vault, embedder=None) as vault:
        tools = mcp_server.Tools(vault)
        with pytest.raises(MemexError, match="max_file_bytes"):
            tools.memory_add("x" * (CAP + 1))
    assert _stored(small_vault) == ([], 0)


def test_a_hook_capture_too_big_is_skipped_and_said_on_stderr(
    small_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = "Remember that the build log says: " + "error: linker failed\x00 " * 400
    with Vault(small_vault, embedder=None) as vault:
        answer = context.capture_keyword(vault, "sess-1", prompt)
    assert answer is not None and answer["status"] == "skipped"
    assert "memex: not captured: text:" in capsys.readouterr().err
    assert _stored(small_vault) == ([], 0)

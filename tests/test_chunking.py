"""Chunks cover what a memory's own vector cannot see, counted in word pieces."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memex.index import chunking
from memex.embedding import embed
from memex.store.rows import body_cache_keys
from memex.store.sqlite.vectors import delete as delete_vectors
from memex.config import Config
from memex.store.sqlite.meta import get_meta, set_meta
from memex.text import chunks as char_chunks
from memex.text import normalize
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.hypokit import examples

CHUNKER = chunking.TokenChunker("bundled", chunking.CharChunker(800, 120))


def _pieces(text: str) -> list[str]:
    tok = chunking.load_tokenizer("bundled")
    assert tok is not None
    tokens: list[str] = tok.encode(text, add_special_tokens=False).tokens
    return tokens


def _sentences(n: int) -> str:
    return " ".join(f"Sentence {i} says the nightly backup of shard {i} goes to bucket b{i}." for i in range(n))


def test_a_body_inside_the_window_gets_no_chunk_however_many_characters() -> None:
    body = normalize(_sentences(14))
    assert len(body) > 800  # the old character rule cut it in two chunks
    assert len(_pieces(body)) <= chunking.WINDOW
    assert CHUNKER(body) == []


def test_chinese_past_the_window_is_chunked_where_characters_saw_nothing() -> None:
    body = "数据同步每周一需要清理旧数据，修改之前要先找负责人确认。" * 14 + "最后一句：备份放在杭州机房。"
    assert len(body) < 800 and char_chunks(body, 800, 120) == [body]  # one piece: the old rule cut nothing
    assert len(_pieces(body)) > chunking.WINDOW
    pieces = CHUNKER(body)
    assert len(pieces) == 1 and pieces[0].endswith("备份放在杭州机房。")


def _check_cover(body: str) -> None:
    pieces = _pieces(body)
    chunks = CHUNKER(body)
    if len(pieces) <= chunking.WINDOW:
        assert chunks == []
        return
    assert chunks, "a body past the window must get chunks"
    seen = list(pieces[: chunking.WINDOW])  # what the body's own vector reads
    for chunk in chunks:
        assert chunk in body
        own = _pieces(chunk)
        # Cut at word starts: the chunk reads as the same pieces it had in the body.
        assert own[0] in pieces and not own[0].startswith("##")
        assert len(own) <= chunking.WINDOW + 1  # a word longer than the overlap may straddle
        seen.extend(own)
    # Every piece of the body is read by the body vector or by some chunk.
    missing = set(pieces) - set(seen)
    assert not missing
    # The last chunk reaches the end of the body.
    assert _pieces(chunks[-1])[-1] == pieces[-1]


@pytest.mark.parametrize("sentences", [13, 20, 40, 100])
def test_chunks_cover_the_whole_body(sentences: int) -> None:
    _check_cover(normalize(_sentences(sentences)))


words = st.sampled_from(
    ["backup", "nightly", "unbelievably", "deploy", "SQLite", "k8s", "e-mail", "数据", "同步", "确认。", "(note)", "42"]
)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(words, min_size=150, max_size=700))
def test_chunks_cover_any_body(parts: list[str]) -> None:
    _check_cover(normalize(" ".join(parts)))


def test_without_a_tokenizer_bodies_are_cut_by_characters(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()  # no tokenizer.json
    chunker = chunking.for_config(Config(embedding_model=str(folder), chunk_chars=300, chunk_overlap=50))
    assert isinstance(chunker, chunking.CharChunker) and chunker.rule == "chars:300/50"
    body = normalize(_sentences(10))
    assert chunker(body) == char_chunks(body, 300, 50)
    assert chunker("short") == []


def _chunk_keys(vault: Vault, memory_id: str) -> set[str]:
    return {
        str(r[0]) for r in vault.backend.conn.execute(
            "SELECT c.text_hash FROM chunks c JOIN memories m ON m.rowid = c.memory_rowid WHERE m.id = ?",
            (memory_id,),
        )
    }


def _cached(vault: Vault) -> set[str]:
    return {str(r[0]) for r in vault.backend.conn.execute("SELECT text_hash FROM embedding_cache")}


def test_an_index_cut_by_another_rule_is_re_cut_without_re_embedding_bodies(vault_root: Path) -> None:
    body = _sentences(40)
    fake = HashEmbedder()
    with Vault(vault_root, embedder=fake) as vault:
        long_one = vault.add(body)
        short_one = vault.add("The staging database is Postgres 16")
        new_keys = _chunk_keys(vault, long_one.id)
        assert len(new_keys) >= 2
        # Make it an index written by the character rule (as before this rule existed).
        old_pieces = char_chunks(normalize(body), 800, 120)
        vault.backend.conn.execute("BEGIN IMMEDIATE")
        rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (long_one.id,)).fetchone()[0]
        delete_vectors(vault.backend.conn, rowid)
        body_vec = fake.embed([normalize(body)])[0]
        vault.backend.conn.execute("INSERT INTO memory_vec(rowid, embedding) VALUES (?, ?)", (rowid, embed.to_blob(body_vec)))
        for seq, (piece, vec) in enumerate(zip(old_pieces, fake.embed(old_pieces))):
            key = embed.text_key(piece)
            vault.backend.conn.execute("INSERT INTO chunks(memory_rowid, seq, text_hash) VALUES (?, ?, ?)", (rowid, seq, key))
            vault.backend.conn.execute(
                "INSERT INTO chunk_vec(rowid, embedding) VALUES (?, ?)", (vault.backend.conn.last_insert_rowid(), embed.to_blob(vec))
            )
            vault.backend.conn.execute(
                "INSERT OR REPLACE INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?)",
                (fake.model_id, key, embed.to_blob(vec)),
            )
        vault.backend.conn.execute("DELETE FROM embedding_cache WHERE text_hash IN (%s)" % ",".join("?" * len(new_keys)), tuple(new_keys))
        set_meta(vault.backend.conn, "chunk_rule", "chars:800/120")
        vault.backend.conn.execute("COMMIT")
        old_keys = {embed.text_key(p) for p in old_pieces}
        assert _chunk_keys(vault, long_one.id) == old_keys

    fake2 = HashEmbedder()
    with Vault(vault_root, embedder=fake2) as vault:
        report = vault.reindex()
        assert get_meta(vault.backend.conn, "chunk_rule") == CHUNKER.rule
        # Only the long memory is read again, and only its new chunks are embedded.
        assert report.updated == 1 and report.unchanged == 1
        assert report.embedded == len(new_keys) == fake2.texts_embedded
        assert _chunk_keys(vault, long_one.id) == new_keys
        # The old chunks' cached vectors are gone with them.
        assert not (old_keys & _cached(vault))
        assert vault.search("Postgres staging database")[0].id == short_one.id


def test_an_edit_drops_the_old_text_vectors_from_the_cache(vault: Vault) -> None:
    old_body = "The deploy key lives in the blue vault. " + _sentences(30)
    added = vault.add(old_body)
    path = vault.root / added.path
    old_keys = set(body_cache_keys(old_body)) | _chunk_keys(vault, added.id)
    assert old_keys & _cached(vault)
    path.write_text(path.read_text(encoding="utf-8").replace("blue vault", "green safe room"), encoding="utf-8")
    assert vault.reindex().updated == 1
    kept = _chunk_keys(vault, added.id)  # tail chunks the edit did not touch stay
    assert embed.text_key(normalize(old_body)) not in _cached(vault)
    assert not ((old_keys - kept) & _cached(vault))
    # What the memory says now is cached, so a rebuild embeds nothing.
    assert vault.reindex(full=True).embedded == 0


@pytest.mark.model
def test_a_fact_past_the_window_is_found_by_meaning(model_vault: Vault) -> None:
    """The tail of a long note is invisible to its body vector; its chunk finds it."""
    vault = model_vault
    filler = " ".join(
        f"Item {i}: the {topic} checklist was reviewed and signed off."
        for i, topic in enumerate(["release", "security", "billing", "onboarding", "capacity"] * 8)
    )
    long_note = vault.add(f"Notes from the quarterly review. {filler} "
                          "Finally: whoever is on call for payments carries the red pager over the weekend.")
    assert vault.indexer.chunker(normalize(vault.get(long_note.id).body))  # it has chunks
    vault.add("The red team exercise is scheduled for March")
    vault.add("Weekend deploys need approval from two reviewers")
    query = "who has the payments pager on Saturday"
    hits = vault.search(query)
    assert hits[0].id == long_note.id
    # By meaning: the note's own vector (its first window) is far less similar than the chunk.
    qvec = embed.query_vector(vault.embedder, query)  # type: ignore[arg-type]
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (long_note.id,)).fetchone()[0]
    body_vec = embed.from_blob(vault.backend.conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone()[0])
    assert hits[0].semantic is not None and hits[0].semantic > float(body_vec @ qvec) + 0.1


def test_korean_is_counted_in_pieces_not_characters() -> None:
    body = "한국어 문장입니다. " * 20  # 200 characters, about 3 pieces each
    assert len(body) < chunking.WINDOW < len(_pieces(body))
    pieces = CHUNKER(body)
    assert pieces and pieces[-1].endswith("문장입니다.")

"""How texts are batched for the model, and that batching never changes a vector."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memex.embedding import batching, embed


@given(st.lists(st.integers(min_value=1, max_value=256), max_size=300))
def test_batches_cover_every_text_once_in_order_and_bounded(raw: list[int]) -> None:
    lengths = sorted(raw)
    batches = list(batching.batches(lengths, embed.BATCH_SIZE))
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= embed.BATCH_SIZE
        # Padding to the batch's longest text wastes at most about a quarter.
        first, last = lengths[batch[0]], lengths[batch[-1]]
        assert last <= first * batching.LENGTH_JUMP + batching.LENGTH_SLACK


def test_a_jump_in_length_starts_a_new_batch() -> None:
    lengths = [20] * 10 + [90] * 3 + [256] * 2
    assert [len(b) for b in batching.batches(lengths, embed.BATCH_SIZE)] == [10, 3, 2]


@pytest.mark.model
def test_batching_never_changes_a_vector(real_embedder) -> None:  # type: ignore[no-untyped-def]
    texts = [
        "Use ruff for linting.",
        "数据同步每周一需要清理旧数据。",
        " ".join(f"Sentence {i} about the billing retry loop and its backoff." for i in range(40)),
        "Dana owns the export job of atlas; ask her before changing it.",
        "Deploys happen on Tuesdays.",
    ] * 5
    together = real_embedder.embed(texts)
    alone = np.stack([real_embedder.embed([t])[0] for t in texts[:5]])
    assert together.shape == (25, real_embedder.dim)
    # In the caller's order, whatever the sorting inside; the int8 model's
    # dynamic quantization lets padding move a vector only in the noise.
    for k in range(5):
        assert np.allclose(together[k::5], alone[k], atol=0.02)
        assert float(together[k] @ alone[k]) > 0.999

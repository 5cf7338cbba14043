"""How texts sorted by length are cut into model calls.

A batch is padded to its longest text, so both engines embed in order of
length and cut a batch where the length jumps by more than a quarter (plus
a few tokens): padding then wastes at most about that share of the model's
work. Measured on the 2,000-memory benchmark vault: cutting by count and
size alone put a few chunks and long bodies into batches of short memories
and padded those to several times their length (+22% model time).
"""

from __future__ import annotations

from collections.abc import Iterator

LENGTH_JUMP = 1.25
LENGTH_SLACK = 8


def batches(lengths: list[int], size: int) -> Iterator[range]:
    """Index ranges of texts sorted by length: at most ``size`` each, cut
    where the length jumps."""
    start = 0
    for i, length in enumerate(lengths):
        count = i - start
        if count and (
            count >= size
            or length > lengths[start] * LENGTH_JUMP + LENGTH_SLACK
        ):
            yield range(start, i)
            start = i
    if start < len(lengths):
        yield range(start, len(lengths))

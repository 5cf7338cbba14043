"""`memex demo`, the main job: it runs end to end and shows what it claims."""

from __future__ import annotations

from memex.demo import run_demo


def test_demo_runs_end_to_end() -> None:
    lines: list[str] = []
    root = run_demo(keep=False, echo=lines.append)
    out = "\n".join(lines)
    assert not root.exists()  # the throwaway vault is removed
    assert out.count("add  created") == 6
    assert "add  duplicate (method exact)" in out
    assert "384 dimensions" in out
    assert "1 updated, 1 added" in out
    assert "not indexed: memories/project/demo/broken.md: broken YAML frontmatter" in out
    edited = out.split("search 'which indentation does the user like'")[-1].splitlines()[1]
    assert "spaces over tabs" in edited  # the hand edit is what search returns
    assert "0 embedded (cache reused)" in out
    # A question about the vault finds its answer; one about nothing in it finds nothing.
    answer = out.split("search 'how do changes get into main'")[-1].splitlines()[1]
    assert "Never push directly to main" in answer
    assert out.split("search 'recipe for banana bread'")[-1].splitlines()[1] == "  no matches"

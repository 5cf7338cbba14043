"""A team vault over git: ``memex sync`` (sync.py: the steps; rebase.py: the
rebase and what it leaves to settle; history.py: rewrites and what history
holds; report.py: the answer), the merge rules and driver (merge.py),
erasure across clones (tombstones.py), the git plumbing (gitrepo.py,
wiring.py). See docs/team.md."""

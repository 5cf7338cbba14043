"""A team vault over git: ``memex sync`` (sync.py), the merge rules and driver
(merge.py), erasure across clones (tombstones.py), the git plumbing
(gitrepo.py, wiring.py). See docs/team.md."""

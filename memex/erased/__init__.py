"""What has been erased, kept where the indexer and the write path can read
it: the keyed list of erased bodies (``erased_list``), the committed list
and audit log with their journals (``mirror``), their spare copies in git's
folder (``spare``) and the purges a store has not taken yet (``pending``).
Erasing itself (what it reaches, its steps) is :mod:`memex.erase`, above."""

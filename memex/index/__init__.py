"""The derived index: keeping SQLite in step with the files (``indexer``),
its schema and connection (``db``), chunks, the entity graph, the purge of
one memory's every derived trace, and the in-process vector copy.
See docs/design.md."""

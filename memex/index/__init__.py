"""The derived index: keeping SQLite in step with the files (``indexer``),
chunks, the entity graph, the scrub after a purge, and the in-process vector
copy. The schema, connection and every SQL statement are the store's
(``memex.store``).
See docs/design.md."""

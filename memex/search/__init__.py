"""Search: candidates from full text and vectors (``hybrid``), the fused
score and relevance floor (``fusion``), relative dates in a query
(``when``). See docs/search.md."""

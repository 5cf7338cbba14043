"""Search: candidates from full text and vectors (``hybrid``), the ranking
rule and relevance floor (``fusion``), the same on PostgreSQL
(``postgres``). See docs/search.md."""

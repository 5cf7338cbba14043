"""The index in SQLite (apsw with sqlite-vec): ``.memex/index.db``, each clone's own.

One module per table family: :mod:`.schema` (connection, schema steps,
transactions, vector tables), :mod:`.meta`, :mod:`.memories` (rows, FTS5,
index errors), :mod:`.vectors` (memory and chunk vectors), :mod:`.cache`
(the embedding cache), :mod:`.usage`, :mod:`.entities`, :mod:`.queries`
(what the features select), :mod:`.purge` (one memory's every trace),
:mod:`.scrub` (the scrub after it); :mod:`.filters` (search filters as SQL),
:mod:`.candidates` (a query's candidates), :mod:`.facts` (what ranking
knows of them) and :mod:`.vecmatrix` (the in-process copy of the vectors
that serves them). :class:`.store.SqliteStore`
binds them to one connection as :class:`memex.store.protocol.IndexStore`.
What both backends compute alike (densities, ranking's facts) is in
memex/store/ beside this package. See docs/store.md.
"""

"""The SQL repositories, written once for both engines: each store interface's statements in
``$1``-numbered SQL over a small :class:`~.engine.Dialect` (times, lists, account ids, row
locks, a few statements of the engine's own, its errors), run on the :class:`~.engine.Db` an
engine provides (``adapters/postgres``: a pool and its unit of work; ``adapters/sqlite``: one
file's connection). Nothing here imports a driver.
"""

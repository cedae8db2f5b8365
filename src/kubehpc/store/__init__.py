"""Client protocol and the embedded store (SQLite + in-memory indexes + watch).

* ``client``    — the Client protocol every component talks through (fixed interface).
* ``store``     — :class:`~kubehpc.store.store.Store`, the embedded implementation; its write
  verbs live in ``writes``, the API server's per-object rules in ``strategy``.
* ``sqlite``    — the durable log (what a commit guarantees is written there).
* ``watch``     — watches: sync and ``async`` iteration, bookmarks, raw-bytes streaming.
* ``records``   — what is kept per object version and per change.
* ``selectors`` — label and field selectors; ``patch`` — JSON, merge and strategic merge patch.
* ``events``    — the v1 Event recorder; ``home`` — the layout of ``$KUBEHPC_HOME``.
"""

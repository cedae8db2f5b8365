"""Whether the JSON trees the store keeps are shown to the cyclic garbage collector.

``untrack_json`` is the C helper built with the compiled modules (``store/_untrack.c``, see
why there) when they are in use, and otherwise a function that leaves the tree as it is:
collections then scan it, which is slower and nothing else. Left to the interpreter
(``scripts/build_native.py``): it only chooses, once, at import.
"""

from __future__ import annotations

from collections.abc import Callable

import kubehpc


def _leave_tracked(obj: object) -> None:
    """Without the C helper: the collector keeps looking at the tree, as for any object."""


def _choose() -> Callable[[object], None]:
    if kubehpc.NATIVE_OFF_REASON is not None:
        return _leave_tracked  # from source everywhere, this included
    from kubehpc.store._untrack import untrack_json  # built with the compiled modules

    return untrack_json


untrack_json: Callable[[object], None] = _choose()

__all__ = ["untrack_json"]

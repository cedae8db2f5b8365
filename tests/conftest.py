"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubehpc.store.store import Store

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only reference data beside the checkout (samples, CRDs, traces).

    CI lays it beside the clone; a run without it fails loudly instead of skipping.
    """
    if not (SHARED / "samples").is_dir():
        pytest.fail(f"reference data missing: expected {SHARED}/samples beside the checkout")
    return SHARED


@pytest.fixture(autouse=True)
def shared_objects_stay_as_stored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test checks, at its end, that no one changed an object a store shares with its
    read-only readers (``read_only`` lists, gets and watches, and the store's own indexes):
    each stored version must still serialise to the bytes it was stored as."""
    # Held until the test ends (a compiled Store takes no weak references).
    stores: list[Store] = []
    made = Store.__init__

    def remember(self: Store, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        stores.append(self)

    monkeypatch.setattr(Store, "__init__", remember)
    yield
    for store in stores:
        changed = store.changed_shared_objects()
        assert not changed, f"shared stored objects were changed in place: {changed[:5]}"

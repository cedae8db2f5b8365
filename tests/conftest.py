"""Fixtures shared by the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

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

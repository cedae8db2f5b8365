"""What the store stamps on objects: uids are random RFC 4122 version-4 UUIDs, and timestamps
are RFC 3339 in whole UTC seconds."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from kubehpc.store import strategy
from kubehpc.store.strategy import new_uid, rfc3339


def test_a_uid_is_a_random_version_4_uuid() -> None:
    uids = {new_uid() for _ in range(1000)}
    assert len(uids) == 1000
    for text in list(uids)[:50]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_uid_keeps_the_random_bits_beside_its_variant() -> None:
    # The variant fixes the top two bits of digit 17; the other two stay random.
    assert {new_uid()[19] for _ in range(2000)} == {"8", "9", "a", "b"}


def test_uids_are_unique_across_threads() -> None:
    per_thread: list[list[str]] = [[] for _ in range(8)]
    threads = [
        threading.Thread(target=lambda out: out.extend(new_uid() for _ in range(2000)), args=(out,))
        for out in per_thread
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({u for out in per_thread for u in out}) == 8 * 2000


def test_uids_read_the_system_random_source_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each read lets go of the interpreter lock inside the store's lock: it must be rare.
    calls = []
    monkeypatch.setattr(strategy, "_uid_pool", strategy._UidPool())
    monkeypatch.setattr(strategy.os, "urandom", lambda n: calls.append(n) or os.getrandom(n))
    for _ in range(1000):
        new_uid()
    assert len(calls) <= 1000 * 16 // 4096 + 1


def test_a_timestamp_is_whole_utc_seconds() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1764700000.9) == "2025-12-02T18:26:40Z"
    assert rfc3339(1764700001) == "2025-12-02T18:26:41Z"

"""What the store stamps on objects: uids are random RFC 4122 version-4 UUIDs, and timestamps
are RFC 3339 in whole UTC seconds."""

from __future__ import annotations

import uuid

from kubehpc.store.strategy import new_uid, rfc3339


def test_a_uid_is_a_random_version_4_uuid() -> None:
    uids = {new_uid() for _ in range(1000)}
    assert len(uids) == 1000
    for text in list(uids)[:50]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_timestamp_is_whole_utc_seconds() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1764700000.9) == "2025-12-02T18:26:40Z"
    assert rfc3339(1764700001) == "2025-12-02T18:26:41Z"

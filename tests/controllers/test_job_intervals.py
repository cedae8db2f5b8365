"""completedIndexes / failedIndexes use Kubernetes' compressed interval form."""

from __future__ import annotations

import pytest

from kubehpc.controllers.job.intervals import Intervals


@pytest.mark.parametrize(
    ("indexes", "text"),
    [
        ([], ""),
        ([0], "0"),
        ([1, 3, 4, 5], "1,3-5"),
        ([3, 4], "3,4"),
        ([0, 1, 2, 7, 9, 10], "0-2,7,9,10"),
    ],
)
def test_indexes_are_written_as_compressed_intervals(indexes: list[int], text: str) -> None:
    assert str(Intervals.of(indexes)) == text


def test_parsing_drops_indexes_at_or_above_completions() -> None:
    assert list(Intervals.parse("1,3-5,8", completions=5)) == [1, 3, 4]


def test_parsing_skips_garbage_like_the_job_controller() -> None:
    assert list(Intervals.parse("x,2,4-a,6", completions=10)) == [2, 6]


def test_merging_joins_adjacent_intervals() -> None:
    merged = Intervals.parse("0-2", 10).with_indexes([3, 5])
    assert str(merged) == "0-3,5"
    assert merged.total() == 5
    assert 5 in merged and 4 not in merged

"""Sets of completion indexes in the compressed form Job status uses: ``"1,3-5,7"``.

Kubernetes writes a run of exactly two indexes as ``"3,4"`` and longer runs as ``"3-5"``.
Indexes at or above ``completions`` are dropped when parsing, as the Job controller does.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Intervals:
    """Disjoint, ordered, non-adjacent closed intervals ``(first, last)``."""

    spans: tuple[tuple[int, int], ...] = ()

    @staticmethod
    def of(indexes: Iterable[int]) -> Intervals:
        spans: list[tuple[int, int]] = []
        for ix in sorted(set(indexes)):
            if spans and spans[-1][1] + 1 == ix:
                spans[-1] = (spans[-1][0], ix)
            else:
                spans.append((ix, ix))
        return Intervals(tuple(spans))

    @staticmethod
    def parse(text: str | None, completions: int) -> Intervals:
        """Parse ``"1,3-5"``; unparsable pieces are skipped, like the Job controller does."""
        if not text:
            return Intervals()
        spans: list[tuple[int, int]] = []
        for piece in text.split(","):
            first_s, _, last_s = piece.strip().partition("-")
            try:
                first = int(first_s)
                last = int(last_s) if last_s else first
            except ValueError:
                continue
            if first < 0 or last < first:
                continue
            if first >= completions:
                break
            last = min(last, completions - 1)
            spans.append((first, last))
        return Intervals().merge(Intervals(tuple(spans)))

    def merge(self, other: Intervals) -> Intervals:
        out: list[tuple[int, int]] = []
        for first, last in sorted(self.spans + other.spans):
            if out and first <= out[-1][1] + 1:
                if last > out[-1][1]:
                    out[-1] = (out[-1][0], last)
            else:
                out.append((first, last))
        return Intervals(tuple(out))

    def with_indexes(self, indexes: Iterable[int]) -> Intervals:
        return self.merge(Intervals.of(indexes))

    def __contains__(self, ix: object) -> bool:
        if not isinstance(ix, int):
            return False
        pos = bisect.bisect_left(self.spans, (ix + 1, -1)) - 1
        return pos >= 0 and self.spans[pos][0] <= ix <= self.spans[pos][1]

    def __iter__(self) -> Iterator[int]:
        for first, last in self.spans:
            yield from range(first, last + 1)

    def total(self) -> int:
        return sum(last - first + 1 for first, last in self.spans)

    def __bool__(self) -> bool:
        return bool(self.spans)

    def __str__(self) -> str:
        parts = []
        for first, last in self.spans:
            if last == first:
                parts.append(str(first))
            elif last == first + 1:
                parts.append(f"{first},{last}")
            else:
                parts.append(f"{first}-{last}")
        return ",".join(parts)

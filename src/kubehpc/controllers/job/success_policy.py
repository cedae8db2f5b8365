"""spec.successPolicy of Indexed Jobs: the Job succeeds early once a rule is met."""

from __future__ import annotations

from typing import Any

from kubehpc.controllers.job.intervals import Intervals

Obj = dict[str, Any]


def _overlap(rule: Intervals, succeeded: Intervals) -> int:
    return sum(1 for ix in rule if ix in succeeded)


def match(rules: tuple[Obj, ...] | None, completions: int, succeeded: Intervals) -> str | None:
    """The SuccessCriteriaMet message (``Matched rules at index N``) or None."""
    if not rules or not succeeded:
        return None
    for position, rule in enumerate(rules):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = Intervals.parse(str(rule["succeededIndexes"]), completions)
            if not required:
                continue
            have = _overlap(required, succeeded)
            if have == required.total() or (count is not None and have >= int(count)):
                return f"Matched rules at index {position}"
        elif count is not None and succeeded.total() >= int(count):
            return f"Matched rules at index {position}"
    return None

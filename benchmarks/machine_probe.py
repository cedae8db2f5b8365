"""A fixed piece of interpreter work, timed, to tell which machine (or Python build) and which
of its phases a figure came from: the machines these benchmarks run on differ by up to 2x in
what one core does, some run in slow and fast phases, and a target such as admission_e2e's
1,000 workloads/s is a figure for one machine. The work touches none of kubehpc's code, so the
probe stays the same while the code changes: dict lookups and inserts, short strings built and
hashed, small tuples and lists, the operations that dominate the control plane's profile. A
flag, not a conversion factor: the end-to-end rate moves less than the probe does
(docs/performance.md, "Fourteenth pass").

    .venv/bin/python benchmarks/machine_probe.py   # prints probe_ms=...
"""

from __future__ import annotations

import time

ROUNDS = 10
ITEMS = 100_000


def _work() -> int:
    table: dict[str, tuple[int, str]] = {}
    total = 0
    for i in range(ITEMS):
        key = f"pod-{i & 4095}"
        seen = table.get(key)
        if seen is None:
            table[key] = (i, key.upper())
        else:
            total += seen[0]
            table[key] = (seen[0] + 1, seen[1])
        total += len([key, i, seen])
    return total


def probe_ms() -> float:
    """Milliseconds for one round of the fixed work, the best of a few (the least disturbed
    by other processes on a shared machine)."""
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        _work()
        best = min(best, time.perf_counter() - start)
    return best * 1000


if __name__ == "__main__":
    print(f"probe_ms={probe_ms():.1f}")

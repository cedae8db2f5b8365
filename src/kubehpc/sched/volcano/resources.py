"""Resource vectors for queue shares: resource name -> exact amount (``resource_units``:
millicores for cpu, bytes for memory, counts for GPUs), with the comparisons Volcano's
``Resource`` type makes. A name missing from a vector is zero."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

# Exact amounts: integers as counted (resource_units), fractions where shares are split by weight.
Amount = int | Fraction
Resources = Mapping[str, Amount]


def vector(items: Mapping[str, Amount] | None) -> dict[str, Amount]:
    return {k: v for k, v in (items or {}).items() if v}


def add(a: Resources, b: Resources) -> dict[str, Amount]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v}


def sub(a: Resources, b: Resources) -> dict[str, Amount]:
    """``a - b``, floored at zero per resource (what is left of ``a``)."""
    out = {k: v - b.get(k, 0) for k, v in a.items()}
    return {k: v for k, v in out.items() if v > 0}


def total(vectors: Iterable[Resources]) -> dict[str, Amount]:
    out: dict[str, Amount] = {}
    for v in vectors:
        out = add(out, v)
    return out


def minimum(a: Resources, b: Resources) -> dict[str, Amount]:
    """Per resource the smaller; a resource ``b`` does not name is not limited by it."""
    return {k: min(v, b[k]) if k in b else v for k, v in a.items() if (min(v, b[k]) if k in b else v)}


def maximum(a: Resources, b: Resources) -> dict[str, Amount]:
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in {*a, *b}}


def fits(need: Resources, room: Resources) -> bool:
    """Every resource ``need`` names is within ``room``."""
    return all(v <= room.get(k, 0) for k, v in need.items() if v > 0)


def fits_named(need: Resources, limit: Resources) -> bool:
    """Within ``limit`` for the resources ``limit`` names (others are unlimited), as a
    queue's capability limits only what it lists."""
    return all(v <= limit[k] for k, v in need.items() if k in limit)


def exceeds(a: Resources, b: Resources) -> bool:
    """Some resource of ``a`` is above ``b`` (Volcano: not ``a.LessEqual(b)``)."""
    return any(v > b.get(k, 0) for k, v in a.items())


def share(allocated: Resources, deserved: Resources) -> Fraction:
    """The dominant share: the largest allocated/deserved over resources (0 when nothing is
    allocated; a resource allocated without any deserved counts as fully used)."""
    out = Fraction(0)
    for k, v in allocated.items():
        if v <= 0:
            continue
        d = deserved.get(k, 0)
        out = max(out, Fraction(v) / d if d > 0 else Fraction(1))
    return out


def show(r: Resources) -> str:
    """``cpu 2, memory 4Gi, nvidia.com/gpu 8`` for messages (cpu in cores)."""
    if not r:
        return "nothing"
    parts = []
    for k in sorted(r):
        v = r[k]
        if k == "cpu":
            parts.append(f"cpu {_number(Fraction(v) / 1000)}")
        elif k in ("memory", "ephemeral-storage"):
            parts.append(f"{k} {_bytes(v)}")
        else:
            parts.append(f"{k} {_number(Fraction(v))}")
    return ", ".join(parts)


def _number(v: Fraction) -> str:
    return str(int(v)) if v.denominator == 1 else f"{float(v):.3g}"


def _bytes(v: Amount) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if v >= size:
            return f"{_number(Fraction(v) / size)}{unit}"
    return _number(Fraction(v))

"""Slurm's hostlist syntax: ``node[01-04,07]``, ``gpu-a[1-2]-b[3-4]``, ``a1,b[2-3]``.

A range's numbers are padded to the width of its lower bound as written (``[09-10]`` gives
``09, 10``; ``[9-10]`` gives ``9, 10``). Several bracket groups in one name expand as a product,
leftmost slowest. :func:`compress` keeps the order of its input (merging only neighbours), so
``expand(compress(hosts)) == hosts`` for any list of names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_HOSTS = 1_000_000


class HostlistError(ValueError):
    pass


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise HostlistError(f'invalid hostlist "{text}": nested "["')
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f'invalid hostlist "{text}": "]" without "["')
            depth = 0
        elif ch == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f'invalid hostlist "{text}": missing "]"')
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _ranges(text: str, body: str) -> list[str]:
    out: list[str] = []
    for piece in body.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece.strip())
        if not m:
            raise HostlistError(f'invalid hostlist "{text}": bad range "{piece}"')
        low, high = m.group(1), m.group(2)
        if high is None:
            out.append(low)
            continue
        lo, hi = int(low), int(high)
        if hi < lo:
            raise HostlistError(f'invalid hostlist "{text}": range "{piece}" goes down')
        if hi - lo >= MAX_HOSTS:
            raise HostlistError(f'invalid hostlist "{text}": range "{piece}" is too large')
        out.extend(str(n).zfill(len(low)) for n in range(lo, hi + 1))
    return out


def _expand_one(text: str, name: str) -> list[str]:
    results = [""]
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]", name):
        literal = name[pos : m.start()]
        choices = _ranges(text, m.group(1))
        results = [r + literal + c for r in results for c in choices]
        if len(results) > MAX_HOSTS:
            raise HostlistError(f'invalid hostlist "{text}": more than {MAX_HOSTS} names')
        pos = m.end()
    return [r + name[pos:] for r in results]


def expand(text: str) -> list[str]:
    """Every host name of a hostlist expression, in order (duplicates kept)."""
    out: list[str] = []
    for part in _split_top(text):
        out.extend(_expand_one(text, part))
    return out


_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def _check_name(name: str) -> None:
    if not name or any(ch in name for ch in "[],"):
        raise HostlistError(f'host name "{name}" cannot be written in hostlist syntax')


def compress(hosts: Iterable[str]) -> str:
    """The shortest order-preserving hostlist of ``hosts``: neighbours sharing a prefix go in
    one bracket, and consecutive numbers of one width become a range."""
    groups: list[tuple[str, list[list[str]]]] = []  # (prefix, runs of number strings)
    for name in hosts:
        _check_name(name)
        m = _TRAILING_NUMBER.match(name)
        if not m:
            groups.append((name, []))
            continue
        prefix, digits = m.group(1), m.group(2)
        if groups and groups[-1][0] == prefix and groups[-1][1]:
            runs = groups[-1][1]
            last = runs[-1]
            width = len(last[0])
            if int(digits) == int(last[-1]) + 1 and str(int(digits)).zfill(width) == digits:
                last.append(digits)
            else:
                runs.append([digits])
        else:
            groups.append((prefix, [[digits]]))
    parts: list[str] = []
    for prefix, runs in groups:
        if not runs:
            parts.append(prefix)
            continue
        if len(runs) == 1 and len(runs[0]) == 1:
            parts.append(prefix + runs[0][0])
            continue
        body = ",".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
        parts.append(f"{prefix}[{body}]")
    return ",".join(parts)


def natural_key(name: str) -> tuple[str, int, str]:
    """Sort key putting ``node2`` before ``node10``, as Slurm orders nodes."""
    m = _TRAILING_NUMBER.match(name)
    return (m.group(1), int(m.group(2)), name) if m else (name, -1, name)

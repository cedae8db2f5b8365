"""Slurm's column format strings, as an engine the views share.

* ``-o`` (squeue, sinfo): ``%[.][width]letter`` between literal text. A width pads the value
  (on the left with ``.``, else on the right) and cuts it to that width, as squeue does, except
  in columns that Slurm never cuts (times: ``365-00:00:00`` overflows a ``%.10l``).
* ``-O`` (squeue) / ``--Format`` (sinfo): ``Name[:[.][width]]`` comma separated; default width
  20, no separator, left-justified unless ``.``.
* sacct ``-o``: ``Field[%width]`` comma separated; one space after each column; the first
  column (JobID) left-justified, the rest right-justified; a value too long ends in ``+``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R")


class FormatError(ValueError):
    pass


@dataclass(frozen=True)
class Column(Generic[R]):
    header: str
    value: Callable[[R], str]
    cut: bool = True


@dataclass(frozen=True)
class _Field(Generic[R]):
    column: Column[R] | None
    literal: str = ""
    width: int | None = None
    right: bool = False


def _fit(text: str, width: int | None, right: bool, cut: bool = True) -> str:
    if width is None:
        return text
    if cut:
        text = text[:width]
    return text.rjust(width) if right else text.ljust(width)


def percent_format(fmt: str, letters: Mapping[str, Column[R]], what: str) -> list[_Field[R]]:
    fields: list[_Field[R]] = []
    pos = 0
    for m in re.finditer(r"%(\.)?(\d+)?(.)", fmt):
        if m.start() > pos:
            fields.append(_Field(None, fmt[pos : m.start()]))
        pos = m.end()
        letter = m.group(3)
        if letter == "%":
            fields.append(_Field(None, "%"))
            continue
        col = letters.get(letter)
        if col is None:
            raise FormatError(f'{what}: unknown field "%{letter}" in format "{fmt}"')
        width = int(m.group(2)) if m.group(2) else None
        fields.append(_Field(col, width=width, right=bool(m.group(1))))
    if pos < len(fmt):
        fields.append(_Field(None, fmt[pos:]))
    return fields


def named_format(
    fmt: str, names: Mapping[str, Column[R]], what: str, default_width: int = 20
) -> list[_Field[R]]:
    fields: list[_Field[R]] = []
    lower = {k.lower(): v for k, v in names.items()}
    for part in (p.strip() for p in fmt.split(",")):
        if not part:
            continue
        name, _, size = part.partition(":")
        col = lower.get(name.lower())
        if col is None:
            raise FormatError(f'{what}: unknown field "{name}"; known: {", ".join(names)}')
        right = size.startswith(".")
        size = size.lstrip(".")
        if size and not size.isdigit():
            raise FormatError(f'{what}: bad width "{size}" for "{name}"')
        fields.append(_Field(col, width=int(size) if size else default_width, right=right))
    return fields


def render(fields: Sequence[_Field[R]], rows: Sequence[R], header: bool = True) -> str:
    lines = []
    if header:
        lines.append(
            "".join(
                f.literal if f.column is None else _fit(f.column.header, f.width, f.right) for f in fields
            )
        )
    for row in rows:
        lines.append(
            "".join(
                f.literal if f.column is None else _fit(f.column.value(row), f.width, f.right, f.column.cut)
                for f in fields
            )
        )
    return "".join(line + "\n" for line in lines)


def sacct_table(
    fmt: str,
    names: Mapping[str, tuple[Column[R], int]],
    rows: Sequence[R],
    parsable: str = "",
    header: bool = True,
) -> str:
    """sacct's table: ``fmt`` is ``Field[%width],...``; ``parsable`` is ``""`` (columns),
    ``"p"`` (``|`` after every field) or ``"P"`` (``|`` between fields)."""
    lower = {k.lower(): v for k, v in names.items()}
    cols: list[tuple[Column[R], int]] = []
    for part in (p.strip() for p in fmt.split(",")):
        if not part:
            continue
        name, _, width = part.partition("%")
        found = lower.get(name.lower())
        if found is None:
            raise FormatError(f'sacct: unknown field "{name}"; known: {", ".join(names)}')
        if width and not width.isdigit():
            raise FormatError(f'sacct: bad width "{width}" for "{name}"')
        cols.append((found[0], int(width) if width else found[1]))
    out: list[str] = []
    if parsable:
        sep_end = "|" if parsable == "p" else ""
        if header:
            out.append("|".join(c.header for c, _ in cols) + sep_end)
        out += ["|".join(c.value(r) for c, _ in cols) + sep_end for r in rows]
        return "".join(line + "\n" for line in out)

    def cell(text: str, width: int, first: bool) -> str:
        if len(text) > width:
            text = text[: width - 1] + "+"
        return text.ljust(width) if first else text.rjust(width)

    if header:
        out.append("".join(cell(c.header, w, i == 0) + " " for i, (c, w) in enumerate(cols)))
        out.append("".join("-" * w + " " for _, w in cols))
    for r in rows:
        out.append("".join(cell(c.value(r), w, i == 0) + " " for i, (c, w) in enumerate(cols)))
    return "".join(line + "\n" for line in out)

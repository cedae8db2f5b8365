"""Reading slurm.conf, gres.conf and topology.conf (their common ``Key=Value`` syntax).

Each line is a list of ``Key=Value`` pairs (keys case-insensitive); ``#`` starts a comment; a
``\\`` at the end of a line continues it; values may be quoted. Lines starting with
``NodeName=``, ``PartitionName=``, ``NodeSet=``, ``SwitchName=``, ``BlockName=`` or (in
gres.conf) ``Name=`` are records; other lines set global keys. ``NodeName=DEFAULT`` and
``PartitionName=DEFAULT`` set defaults for the records after them, as in Slurm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RECORD_KEYS = (
    "nodename",
    "partitionname",
    "nodeset",
    "switchname",
    "blockname",
    "name",
    "frontendname",
    "downnodes",
)


class ConfError(ValueError):
    pass


@dataclass
class Record:
    kind: str
    """The first key, lower-cased: ``nodename``, ``partitionname``, ``switchname``, ..."""
    name: str
    values: dict[str, str]
    """Lower-cased keys -> values, defaults included."""
    line: int
    spelled: dict[str, str] = field(default_factory=dict)
    """Lower-cased key -> the key as written, for messages."""

    def get(self, key: str, default: str = "") -> str:
        return self.values.get(key.lower(), default)


@dataclass
class Conf:
    source: str
    globals: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Lower-cased key -> (value, line)."""
    records: list[Record] = field(default_factory=list)
    original_keys: dict[str, str] = field(default_factory=dict)

    def value(self, key: str, default: str = "") -> str:
        found = self.globals.get(key.lower())
        return found[0] if found else default

    def of(self, kind: str) -> list[Record]:
        return [r for r in self.records if r.kind == kind]


def _pairs(text: str, source: str, line: int) -> list[tuple[str, str]]:
    pairs = []
    for m in re.finditer(r'\s*([^=\s]+)=("([^"]*)"|\S*)', text):
        value = m.group(3) if m.group(3) is not None else m.group(2)
        pairs.append((m.group(1), value))
    leftover = re.sub(r'\s*([^=\s]+)=("([^"]*)"|\S*)', "", text).strip()
    if leftover and not leftover.lower().startswith("include"):
        raise ConfError(f'{source}: line {line}: cannot read "{leftover}"; expected Key=Value pairs')
    return pairs


def parse_conf(text: str, source: str) -> Conf:
    conf = Conf(source)
    defaults: dict[str, dict[str, str]] = {}
    spelled: dict[str, str] = {}
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if pending:
            line = pending + " " + line.strip()
        else:
            start = number
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        pending = ""
        if not line.strip():
            continue
        if line.strip().lower().startswith("include "):
            conf.globals.setdefault("include", (line.strip().split(None, 1)[1], start))
            continue
        pairs = _pairs(line, source, start)
        if not pairs:
            continue
        first_key = pairs[0][0].lower()
        if first_key in RECORD_KEYS:
            name = pairs[0][1]
            values = {k.lower(): v for k, v in pairs}
            if name.upper() == "DEFAULT":
                spelled.update({k.lower(): k for k, _ in pairs})
                defaults.setdefault(first_key, {}).update({k: v for k, v in values.items() if k != first_key})
                continue
            merged = {**defaults.get(first_key, {}), **values}
            spelled.update({k.lower(): k for k, _ in pairs})
            conf.records.append(Record(first_key, name, merged, start, dict(spelled)))
        else:
            for k, v in pairs:
                conf.globals[k.lower()] = (v, start)
                conf.original_keys[k.lower()] = k
    return conf

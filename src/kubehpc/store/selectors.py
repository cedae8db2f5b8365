"""Label and field selectors, parsed once and matched against many objects.

Label selectors come as strings (``app=web,tier!=db,env in (a,b),!legacy``) from lists and
watches, or as ``LabelSelector`` objects (``matchLabels`` / ``matchExpressions``) inside specs
(Job selectors, PodGroup and queue selectors). Both parse to the same :class:`LabelSelector`.
Field selectors compare dotted paths of the object (``status.phase=Running``).

Parse errors raise ``errors.BadRequest`` naming the selector, as the API server answers.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api import names
from kubehpc.api.errors import BadRequest

Obj = dict[str, Any]

# Operators of one requirement. "exists" and "!" take no values; "in"/"notin" take a set;
# "=", "!=" one value; "gt"/"lt" one integer (label selectors only, as apimachinery).
_SET_OPS = ("in", "notin")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str
    values: tuple[str, ...] = ()

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per requirement per selector parsed).
    def __init__(self, key: str, op: str, values: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "values", values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        op = self.op
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("=", "in"):
            return present and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        # gt / lt: the label must hold an integer.
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if op == "gt" else have < want


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per selector parsed).
    def __init__(self, requirements: tuple[Requirement, ...] = (), matches_nothing: bool = False) -> None:
        object.__setattr__(self, "requirements", requirements)
        object.__setattr__(self, "matches_nothing", matches_nothing)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.matches_nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Obj) -> bool:
        return self.matches(F.metadata(obj).get("labels"))

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.matches_nothing


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(matches_nothing=True)


def _bad(selector: str, why: str, what: str = "label") -> BadRequest:
    return BadRequest(f'unable to parse {what} selector "{selector}": {why}')


def _check_key(selector: str, key: str) -> None:
    if not key:
        raise _bad(selector, "a requirement is missing its key")
    problems = names.qualified_name_remembered(key)
    if problems:
        raise _bad(selector, f'invalid label key "{key}": {"; ".join(problems)}')


def _check_value(selector: str, value: str) -> None:
    problems = names.label_value_remembered(value)
    if problems:
        raise _bad(selector, f'invalid label value: "{value}": {"; ".join(problems)}')


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside a parenthesised value set."""
    if "(" not in text and ")" not in text:
        return text.split(",")  # no value sets: every comma splits (a Job's pod selector)
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _parse_requirement(selector: str, text: str) -> Requirement:
    part = text.strip()
    if not part:
        raise _bad(selector, "found an empty requirement")
    if part.startswith("!"):
        key = part[1:].strip()
        _check_key(selector, key)
        return Requirement(key, "!")
    for op_text, op in (("!=", "!="), ("==", "="), ("=", "="), (">", "gt"), ("<", "lt")):
        idx = part.find(op_text)
        if idx > 0 and (op_text != "=" or part[idx - 1] not in "!="):
            key, value = part[:idx].strip(), part[idx + len(op_text) :].strip()
            _check_key(selector, key)
            if op in ("gt", "lt"):
                if not value.lstrip("-").isdigit():
                    raise _bad(selector, f'"{value}" is not an integer for "{op_text}"')
            else:
                _check_value(selector, value)
            return Requirement(key, op, (value,))
    words = part.split(None, 1)
    if len(words) == 2:
        key, rest = words[0], words[1].strip()
        for op in _SET_OPS:
            if rest.startswith(op) and rest[len(op) :].lstrip().startswith("("):
                body = rest[len(op) :].strip()
                if not body.endswith(")"):
                    raise _bad(selector, f'missing ")" after the values of "{key}"')
                values = tuple(v.strip() for v in body[1:-1].split(","))
                if values == ("",):
                    raise _bad(selector, f'"{op}" needs at least one value for "{key}"')
                _check_key(selector, key)
                for v in values:
                    _check_value(selector, v)
                return Requirement(key, op, tuple(sorted(set(values))))
        raise _bad(selector, f'unknown operator in "{part}"; expected =, ==, !=, in, notin')
    _check_key(selector, part)
    return Requirement(part, "exists")


@functools.lru_cache(maxsize=4096)
def parse_label_selector(selector: str) -> LabelSelector:
    """Parse the string form (``?labelSelector=``, ``kubectl -l``). Cached: controllers list
    with the same few selectors over and over (a Job's pods), and the result is immutable."""
    if not selector.strip():
        return EVERYTHING
    return LabelSelector(tuple(_parse_requirement(selector, p) for p in _split_top_level(selector)))


_EXPRESSION_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def from_label_selector(spec: dict[str, Any] | None) -> LabelSelector:
    """Convert a ``LabelSelector`` object. None selects nothing and ``{}`` everything, as in
    Kubernetes' ``metav1.LabelSelectorAsSelector``."""
    if spec is None:
        return NOTHING
    shown = str(dict(spec))
    reqs: list[Requirement] = []
    for key, value in sorted((spec.get("matchLabels") or {}).items()):
        _check_key(shown, key)
        _check_value(shown, str(value))
        reqs.append(Requirement(key, "=", (str(value),)))
    for i, expr in enumerate(spec.get("matchExpressions") or []):
        key = str(expr.get("key", ""))
        op = _EXPRESSION_OPS.get(str(expr.get("operator", "")))
        if op is None:
            raise BadRequest(
                f"matchExpressions[{i}].operator: {expr.get('operator')!r} is not a valid label "
                "selector operator (In, NotIn, Exists, DoesNotExist)"
            )
        _check_key(shown, key)
        values = tuple(str(v) for v in expr.get("values") or [])
        if op in _SET_OPS and not values:
            raise BadRequest(f"matchExpressions[{i}].values: must be specified when operator is In or NotIn")
        if op not in _SET_OPS and values:
            raise BadRequest(f"matchExpressions[{i}].values: may not be specified for Exists or DoesNotExist")
        reqs.append(Requirement(key, op, tuple(sorted(set(values)))))
    return LabelSelector(tuple(reqs))


# --- field selectors -------------------------------------------------------------------------


def field_value(obj: Obj, path: str) -> str:
    """The string form of a dotted path's value, "" when absent (as field selectors see it)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, dict | list):
        return ""
    return str(cur)


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    value: str
    negate: bool = False

    def matches(self, obj: Obj) -> bool:
        return (field_value(obj, self.path) == self.value) != self.negate


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Obj) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact(self, path: str) -> str | None:
        """The value an equality requirement pins ``path`` to (lets lists use an index)."""
        for r in self.requirements:
            if r.path == path and not r.negate:
                return r.value
        return None


def _unescape_split(selector: str, text: str, sep: str) -> list[str]:
    """Split on an unescaped separator; ``\\,`` ``\\=`` ``\\\\`` escape as in apimachinery."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


@functools.lru_cache(maxsize=1024)
def parse_field_selector(selector: str) -> FieldSelector:
    """Parse ``path=value``, ``path==value`` and ``path!=value`` terms joined by commas.
    Cached, as label selectors are: every list and watch parses one, most often the empty one."""
    if not selector.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for term in _split_unescaped_commas(selector):
        part = term.strip()
        for op in ("!=", "==", "="):
            idx = _find_unescaped(part, op)
            if idx > 0:
                path = part[:idx].strip()
                value = "".join(_unescape_split(selector, part[idx + len(op) :], "\x00"))
                if not all(
                    seg and (seg.replace("-", "").replace("_", "").isalnum()) for seg in path.split(".")
                ):
                    raise _bad(selector, f'invalid field path "{path}"', "field")
                reqs.append(FieldRequirement(path, value.strip(), op == "!="))
                break
        else:
            raise _bad(
                selector, f'invalid term "{part}": expected path=value, path==value or path!=value', "field"
            )
    return FieldSelector(tuple(reqs))


def _find_unescaped(text: str, needle: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(needle, i):
            return i
        i += 1
    return -1


def _split_unescaped_commas(text: str) -> list[str]:
    parts: list[str] = []
    start = 0
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == ",":
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts

"""kubectl's JSONPath templates: ``{.status.phase}``, ``{.items[*].metadata.name}``,
``{range .items[*]}{.metadata.name}{"\\n"}{end}``, ``{.metadata.labels.app\\.kubernetes\\.io/name}``.

Supported: dotted fields (with ``\\.`` escapes), ``[n]`` / ``[-n]`` / ``[a:b]`` / ``[*]``,
``..field`` recursive descent, ``[?(@.x=="y")]`` filters, quoted literals, ``range``/``end``.
Several results of one expression are joined with spaces, as kubectl joins them.
"""

from __future__ import annotations

import json
import re
from typing import Any


class JsonPathError(ValueError):
    pass


_TOKEN = re.compile(r"\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}")


def _split_fields(path: str) -> list[str]:
    """Split ``.a.b[0].c\\.d`` into steps: field names and bracket expressions."""
    steps: list[str] = []
    i, buf = 0, ""
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            buf += path[i + 1]
            i += 2
            continue
        if ch == ".":
            if buf:
                steps.append(buf)
                buf = ""
            if path[i + 1 : i + 2] == ".":
                steps.append("..")
                i += 2
                continue
            i += 1
            continue
        if ch == "[":
            if buf:
                steps.append(buf)
                buf = ""
            end = path.find("]", i)
            if end < 0:
                raise JsonPathError(f"unclosed [ in {path!r}")
            steps.append(path[i : end + 1])
            i = end + 1
            continue
        buf += ch
        i += 1
    if buf:
        steps.append(buf)
    return steps


def _descend(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.append(v)
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else []
        out.extend(_descend(list(children)))
    return out


def _filter(items: list[Any], expr: str) -> list[Any]:
    m = re.fullmatch(r"\?\(@((?:\.[\w\-/\\.]+)+)\s*(==|!=)\s*(?:\"([^\"]*)\"|'([^']*)'|(\S+))\)", expr)
    if not m:
        raise JsonPathError(f"unsupported filter {expr!r}")
    path, op, *vals = m.groups()
    want = next(v for v in vals if v is not None)
    out = []
    for item in items:
        got = evaluate(path, item)
        text = _text(got[0]) if got else None
        if (op == "==" and text == want) or (op == "!=" and text != want):
            out.append(item)
    return out


def evaluate(path: str, data: Any) -> list[Any]:
    """Every value ``path`` (without braces) selects in ``data``."""
    path = path.strip()
    if path in ("", "."):
        return [data]
    if path.startswith("$"):
        path = path[1:]
    values = [data]
    for step in _split_fields(path):
        if step == "..":
            values = _descend(values)
            continue
        nxt: list[Any] = []
        if step.startswith("["):
            inner = step[1:-1].strip()
            for v in values:
                if inner.startswith("?"):
                    if isinstance(v, list):
                        nxt.extend(_filter(v, inner))
                    continue
                if not isinstance(v, list):
                    if isinstance(v, dict) and inner.strip("'\"") in v:
                        nxt.append(v[inner.strip("'\"")])
                    continue
                if inner == "*":
                    nxt.extend(v)
                elif ":" in inner:
                    a, _, b = inner.partition(":")
                    nxt.extend(v[int(a) if a else None : int(b) if b else None])
                else:
                    try:
                        nxt.append(v[int(inner)])
                    except IndexError:
                        raise JsonPathError(f"array index out of bounds: {step}") from None
                    except ValueError:
                        raise JsonPathError(f"unsupported index {step!r}") from None
        else:
            for v in values:
                if isinstance(v, dict) and step in v:
                    nxt.append(v[step])
                elif isinstance(v, list) and step == "*":
                    nxt.extend(v)
                elif isinstance(v, dict) and step == "*":
                    nxt.extend(v.values())
        values = nxt
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _parse(template: str) -> list[tuple[str, str]]:
    """Split a template into ("text", s) and ("expr", e) parts."""
    parts: list[tuple[str, str]] = []
    pos = 0
    for m in _TOKEN.finditer(template):
        if m.start() > pos:
            parts.append(("text", template[pos : m.start()]))
        parts.append(("expr", m.group(1).strip()))
        pos = m.end()
    if pos < len(template):
        parts.append(("text", template[pos:]))
    return parts


def _render(parts: list[tuple[str, str]], data: Any) -> str:
    out: list[str] = []
    i = 0
    while i < len(parts):
        kind, value = parts[i]
        if kind == "text":
            out.append(value)
        elif value.startswith("range "):
            depth, j = 1, i + 1
            while j < len(parts) and depth:
                if parts[j][0] == "expr" and parts[j][1].startswith("range "):
                    depth += 1
                elif parts[j] == ("expr", "end"):
                    depth -= 1
                j += 1
            if depth:
                raise JsonPathError("range without end")
            body = parts[i + 1 : j - 1]
            for item in evaluate(value[len("range ") :], data):
                out.append(_render(body, item))
            i = j
            continue
        elif value == "end":
            raise JsonPathError("end without range")
        elif value.startswith(('"', "'")):
            out.append(json.loads(value) if value.startswith('"') else value.strip("'"))
        else:
            out.append(" ".join(_text(v) for v in evaluate(value, data)))
        i += 1
    return "".join(out)


def render(template: str, data: Any) -> str:
    """Fill in a kubectl JSONPath template."""
    return _render(_parse(template), data)

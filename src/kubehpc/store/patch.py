"""The three patch formats of the Kubernetes API, plus the three-way merge behind ``apply``.

* JSON patch (RFC 6902): a list of operations addressed by JSON pointers, ``test`` included.
* JSON merge patch (RFC 7386): a partial object; ``null`` deletes, lists are replaced.
* Strategic merge patch: a merge patch whose list handling follows the kind's schema
  (``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``, read through
  :class:`~kubehpc.api.registry.PatchMeta`): containers merge by name, ``$patch`` directives
  replace or delete, ``$deleteFromPrimitiveList``, ``$setElementOrder`` and ``$retainKeys``.

All functions return a new document and leave their inputs alone. A patch that cannot be
read is a 400; one that reads but cannot be applied (missing path, failed ``test``) is a 422,
as the API server answers.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubehpc.api.errors import BadRequest, Cause, Invalid
from kubehpc.api.registry import PatchMeta

_MISSING = object()


def _unprocessable(message: str) -> Invalid:
    return Invalid(
        f"the server rejected our request due to an error in our request: {message}",
        causes=[Cause(field="patch", message=message, reason="FieldValueInvalid")],
    )


# --- JSON patch (RFC 6902) ------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise BadRequest(f"json patch: invalid JSON pointer {path!r}: must be empty or start with '/'")
    if not path:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _unprocessable(f"json patch: {path}: {token!r} is not an array index")
    idx = int(token)
    limit = len(container) if for_add else len(container) - 1
    if idx > limit:
        raise _unprocessable(f"json patch: {path}: index {idx} is out of range")
    return idx


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise _unprocessable(f"json patch: {path}: path does not exist")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, path, for_add=False)]
        else:
            raise _unprocessable(f"json patch: {path}: path does not exist")
    return cur


def _get(doc: Any, tokens: list[str], path: str) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _unprocessable(f"json patch: {path}: path does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path, for_add=False)]
    raise _unprocessable(f"json patch: {path}: path does not exist")


def _add(doc: Any, tokens: list[str], value: Any, path: str) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, for_add=True), value)
    else:
        raise _unprocessable(f"json patch: {path}: parent is not an object or array")
    return doc


def _remove(doc: Any, tokens: list[str], path: str) -> tuple[Any, Any]:
    if not tokens:
        raise _unprocessable("json patch: cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _unprocessable(f"json patch: {path}: path does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path, for_add=False))
    raise _unprocessable(f"json patch: {path}: path does not exist")


def apply_json_patch(doc: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise BadRequest("json patch: the patch must be a JSON array of operations")
    out = copy.deepcopy(doc)
    for i, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise BadRequest(f"json patch: operation {i} must be an object with 'op' and 'path'")
        kind = op["op"]
        path = op["path"]
        tokens = _pointer(path)
        if kind in ("add", "replace", "test") and "value" not in op:
            raise BadRequest(f"json patch: operation {i} ({kind}) needs a 'value'")
        if kind == "add":
            out = _add(out, tokens, copy.deepcopy(op["value"]), path)
        elif kind == "remove":
            out, _ = _remove(out, tokens, path)
        elif kind == "replace":
            _get(out, tokens, path)  # must exist
            if tokens:
                out, _ = _remove(out, tokens, path)
            out = _add(out, tokens, copy.deepcopy(op["value"]), path)
        elif kind in ("move", "copy"):
            source = op.get("from")
            from_tokens = _pointer(source)
            if kind == "move":
                if tokens[: len(from_tokens)] == from_tokens and len(tokens) > len(from_tokens):
                    raise _unprocessable(f"json patch: cannot move {source} into its own child {path}")
                out, value = _remove(out, from_tokens, str(source))
            else:
                value = copy.deepcopy(_get(out, from_tokens, str(source)))
            out = _add(out, tokens, value, path)
        elif kind == "test":
            if _get(out, tokens, path) != op["value"]:
                raise _unprocessable(f"json patch: test failed at {path}")
        else:
            raise BadRequest(f"json patch: operation {i}: unknown op {kind!r}")
    return out


# --- JSON merge patch (RFC 7386) ------------------------------------------------------------


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


def three_way_merge_patch(original: Any, modified: Any, current: Any) -> dict[str, Any]:
    """A JSON merge patch taking ``current`` to ``modified`` that also deletes what the user
    removed since ``original`` (the last applied configuration) — and nothing else, so fields
    set by others (status, defaults, controllers) survive, as ``kubectl apply`` does."""
    patch: dict[str, Any] = {}
    original = original if isinstance(original, dict) else {}
    current = current if isinstance(current, dict) else {}
    for key in original:
        if key not in modified and key in current:
            patch[key] = None
    for key, want in modified.items():
        have = current.get(key, _MISSING)
        if isinstance(want, dict) and isinstance(have, dict):
            sub = three_way_merge_patch(original.get(key), want, have)
            if sub:
                patch[key] = sub
        elif have is _MISSING or have != want:
            patch[key] = want
    return patch


# --- strategic merge patch -------------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_SET_ORDER = "$setElementOrder/"


def _strategies(meta: PatchMeta | None) -> set[str]:
    return {s.strip() for s in meta.strategy.split(",") if s.strip()} if meta is not None else set()


def apply_strategic_merge_patch(doc: Any, patch: Any, meta: PatchMeta) -> Any:
    if not isinstance(patch, dict):
        raise BadRequest("strategic merge patch: the patch must be a JSON object")
    result = _merge_map(copy.deepcopy(doc) if isinstance(doc, dict) else {}, patch, meta)
    return {} if result is None else result


def _merge_map(
    original: dict[str, Any], patch: Mapping[str, Any], meta: PatchMeta | None
) -> dict[str, Any] | None:
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != _DIRECTIVE}
    if directive not in (None, "merge"):
        raise BadRequest(f"strategic merge patch: unknown $patch directive {directive!r}")
    out = original
    retain = patch.get(_RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise BadRequest("strategic merge patch: $retainKeys must be a list")
        keep = set(retain)
        for key in [k for k in out if k not in keep]:
            del out[key]
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN_KEYS):
            continue
        if key.startswith(_SET_ORDER):
            orders[key[len(_SET_ORDER) :]] = list(value or [])
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE) :]
            drop = value or []
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in drop]
            continue
        child = meta.child(key) if meta is not None else None
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            have = out.get(key)
            merged = _merge_map(have if isinstance(have, dict) else {}, value, child)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            have = out.get(key)
            out[key] = _merge_list(have if isinstance(have, list) else [], value, child)
        else:
            out[key] = value
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            child = meta.child(field) if meta is not None else None
            out[field] = _apply_order(out[field], order, child.merge_key if child is not None else "")
    return out


def _merge_list(original: list[Any], patch: list[Any], meta: PatchMeta | None) -> list[Any]:
    strategies = _strategies(meta)
    merge_key = meta.merge_key if meta is not None else ""
    for item in patch:
        if isinstance(item, dict) and item.get(_DIRECTIVE) == "replace":
            return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and _DIRECTIVE in i)]
    if "merge" not in strategies:
        return [copy.deepcopy(i) for i in patch]
    if not merge_key:
        # A merged list of primitives: union, keeping the original order first.
        out = list(original)
        for item in patch:
            if isinstance(item, dict) and item.get(_DIRECTIVE) == "delete":
                continue
            if item not in out:
                out.append(copy.deepcopy(item))
        return out
    item_meta = meta.item() if meta is not None else None
    out = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise BadRequest(f"strategic merge patch: list items merged by {merge_key!r} must be objects")
        if merge_key not in item:
            raise BadRequest(f"strategic merge patch: a list item is missing its merge key {merge_key!r}")
        key = item[merge_key]
        pos = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(merge_key) == key), -1)
        if item.get(_DIRECTIVE) == "delete":
            if pos >= 0:
                out.pop(pos)
            continue
        if pos >= 0:
            merged = _merge_map(dict(out[pos]), item, item_meta)
            if merged is None:
                out.pop(pos)
            else:
                out[pos] = merged
        else:
            merged = _merge_map({}, item, item_meta)
            if merged is not None:
                out.append(merged)
    return out


def _apply_order(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    """Reorder per ``$setElementOrder``: listed items in that order, unlisted ones after."""

    def ident(x: Any) -> Any:
        return x.get(merge_key) if merge_key and isinstance(x, dict) else x

    wanted = [ident(o) for o in order]
    rank = {repr(k): i for i, k in enumerate(wanted)}
    listed = [x for x in items if repr(ident(x)) in rank]
    unlisted = [x for x in items if repr(ident(x)) not in rank]
    listed.sort(key=lambda x: rank[repr(ident(x))])
    return listed + unlisted

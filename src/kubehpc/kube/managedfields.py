"""Pods and Nodes read without ``metadata.managedFields``, cut from the bytes before decoding.

A scheduler never reads managedFields (server-side apply's record of who set which field),
yet in a Pod as kube-apiserver sends it they are a third of the bytes and most of the small
objects: decoding them is a good part of what a 10,000-pod list and one watch event per binding
cost (docs/performance.md). Kubernetes 1.20 has no way to ask the server to leave them out
(protobuf, which kube-scheduler reads, does not help a Python client: building the dicts the
scheduler works on costs as much as decoding the JSON).

Why cutting bytes is safe here, and only here: kube-apiserver encodes a built-in kind with Go's
``encoding/json`` from its struct, so the keys come in the struct's order. ``managedFields`` is
the last field of ``ObjectMeta`` and ``spec`` the field after ``metadata`` in a Pod and a Node,
so one object's managedFields run from ``,"managedFields":[`` to the ``]`` of the next
``]},"spec":{``. Neither marker can appear inside a string (every ``"`` in a JSON string is
escaped), and no key inside managedFields is ``spec`` (the keys of ``fieldsV1`` all start
``f:``, ``k:``, ``v:``, ``i:`` or are ``.``). Custom resources are served from maps with their
keys sorted, so this order does not hold for them: only the kinds in :data:`TYPED_KINDS` are
cut. Each cut is checked as well, so that a Pod written by some other server, or sent back to one
with its keys sorted (``kubectl get -o yaml`` then ``apply``), is never cut wrongly: the ends
must pair up, one per start, and nothing cut may close an array before another key (``],"``) —
managedFields hold no arrays, while sorted metadata puts ``name`` after them. A body that fails
a check is returned whole; callers decode the whole body too should a cut one not decode.
"""

from __future__ import annotations

TYPED_KINDS = frozenset({("v1", "Pod"), ("v1", "Node")})
"""Built-in kinds whose ``metadata`` is followed by ``spec`` in kube-apiserver's JSON."""

_START = b',"managedFields":['
_END = b']},"spec":{'


def without_managed_fields(body: bytes) -> bytes:
    """``body`` (a Pod, a Node, a list of them or a watch event, as kube-apiserver writes it)
    with every ``metadata.managedFields`` left out; ``body`` itself when it has none, or when
    its markers do not pair up as the struct order promises."""
    start = body.find(_START)
    if start < 0:
        return body
    parts = []
    kept = 0
    while start >= 0:
        end = body.find(_END, start)
        following = body.find(_START, start + 1)
        # The array must close on an object ("}]") and before the next object's managedFields.
        if end < 0 or body[end - 1] != 0x7D or 0 <= following < end or body.find(b'],"', start, end) >= 0:
            return body
        parts.append(body[kept:start])
        kept = end + 1  # keep "},"spec":{", drop the array's "]"
        start = following
    parts.append(body[kept:])
    return b"".join(parts)

"""Decoding the Kubernetes protobuf encoding of request bodies, for the kinds kubectl sends so.

kubectl 1.32 sends built-in objects it builds itself (``kubectl create namespace``, ``create
configmap``, ``create secret``) as ``application/vnd.kubernetes.protobuf``, whatever the
server. The envelope is the 4-byte magic ``k8s\\0`` and a ``runtime.Unknown`` message
(typeMeta, raw), where ``raw`` is the object's message from k8s.io/api's generated.proto.

Each message below maps field numbers to JSON names and types (the numbers are the published
wire format of k8s.io/api). The Go encoder writes every non-pointer field, even when empty, so
empty scalars are dropped here to give the object JSON's ``omitempty`` shape. A kind without
a table is refused with 415 naming what to send instead.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from kubehpc.api.errors import BadRequest, UnsupportedMediaType

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# message -> field number -> (json name, type, repeated). Types: "string", "bytes", "bool",
# "varint", "varint32" (kept when 0), "map:string", "map:bytes", "time", or another message's name.
Field = tuple[str, str, bool]
MESSAGES: dict[str, dict[int, Field]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta", False), 2: ("raw", "bytes", False)},
    "TypeMeta": {1: ("apiVersion", "string", False), 2: ("kind", "string", False)},
    "ObjectMeta": {
        1: ("name", "string", False),
        2: ("generateName", "string", False),
        3: ("namespace", "string", False),
        4: ("selfLink", "string", False),
        5: ("uid", "string", False),
        6: ("resourceVersion", "string", False),
        7: ("generation", "varint", False),
        8: ("creationTimestamp", "time", False),
        9: ("deletionTimestamp", "time", False),
        10: ("deletionGracePeriodSeconds", "varint", False),
        11: ("labels", "map:string", False),
        12: ("annotations", "map:string", False),
        13: ("ownerReferences", "OwnerReference", True),
        14: ("finalizers", "string", True),
    },
    "OwnerReference": {
        1: ("kind", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
        5: ("apiVersion", "string", False),
        6: ("controller", "bool", False),
        7: ("blockOwnerDeletion", "bool", False),
    },
    "Namespace": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "NamespaceSpec", False),
        3: ("status", "NamespaceStatus", False),
    },
    "NamespaceSpec": {1: ("finalizers", "string", True)},
    "NamespaceStatus": {1: ("phase", "string", False)},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "map:string", False),
        3: ("binaryData", "map:bytes", False),
        4: ("immutable", "bool", False),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "map:bytes", False),
        3: ("type", "string", False),
        4: ("stringData", "map:string", False),
        5: ("immutable", "bool", False),
    },
    "PriorityClass": {
        1: ("metadata", "ObjectMeta", False),
        2: ("value", "varint32", False),
        3: ("globalDefault", "bool", False),
        4: ("description", "string", False),
        5: ("preemptionPolicy", "string", False),
    },
}
# (apiVersion, kind) -> top-level message
KINDS = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
}


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def varint(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.data):
                raise BadRequest("the protobuf body is truncated")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def chunk(self) -> bytes:
        n = self.varint()
        out = self.data[self.pos : self.pos + n]
        if len(out) != n:
            raise BadRequest("the protobuf body is truncated")
        self.pos += n
        return out

    def skip(self, wire: int) -> None:
        if wire == 0:
            self.varint()
        elif wire == 1:
            self.pos += 8
        elif wire == 2:
            self.chunk()
        elif wire == 5:
            self.pos += 4
        else:
            raise BadRequest(f"the protobuf body uses unsupported wire type {wire}")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of every field of one message."""
    reader = _Reader(data)
    out: list[tuple[int, int, Any]] = []
    while reader.pos < len(data):
        tag = reader.varint()
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            out.append((number, wire, reader.varint()))
        elif wire == 2:
            out.append((number, wire, reader.chunk()))
        else:
            reader.skip(wire)
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _time(data: bytes) -> str | None:
    seconds = nanos = 0
    for number, _, value in _fields(data):
        if number == 1:
            seconds = _signed(value)
        elif number == 2:
            nanos = value
    if seconds == 0 and nanos == 0:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _map_entry(data: bytes, binary: bool) -> tuple[str, Any]:
    key, value = "", b""
    for number, _, item in _fields(data):
        if number == 1:
            key = item.decode()
        elif number == 2:
            value = item
    return key, base64.b64encode(value).decode() if binary else value.decode()


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    table = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        field = table.get(number)
        if field is None:
            continue  # a field kubehpc does not map (managedFields, ...): skipped
        key, type_, repeated = field
        if type_ == "string" or type_ == "bytes":
            if wire != 2:
                raise BadRequest(f"protobuf field {name}.{key} has the wrong wire type")
            decoded: Any = value.decode() if type_ == "string" else value
        elif type_ == "bool":
            decoded = bool(value)
        elif type_ == "varint" or type_ == "varint32":
            decoded = _signed(value)
            if type_ == "varint32":
                # PriorityClass.value is required: 0 is a value, not "unset".
                out[key] = decoded
                continue
        elif type_ == "time":
            decoded = _time(value)
        elif type_.startswith("map:"):
            k, v = _map_entry(value, type_ == "map:bytes")
            out.setdefault(key, {})[k] = v
            continue
        else:
            decoded = decode_message(type_, value)
        if repeated:
            out.setdefault(key, []).append(decoded)
        else:
            out[key] = decoded
    # Go writes empty scalars too; JSON would have omitted them.
    return {k: v for k, v in out.items() if v not in ("", 0, False, None) or isinstance(v, dict | list)}


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON-shaped object of a Kubernetes protobuf request body."""
    if not body.startswith(MAGIC):
        raise BadRequest("the protobuf body does not start with the Kubernetes magic number")
    envelope = decode_message("Unknown", body[len(MAGIC) :])
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = KINDS.get((api_version, kind))
    if message is None:
        supported = ", ".join(k for _, k in KINDS)
        raise UnsupportedMediaType(
            f"kubehpc decodes {CONTENT_TYPE} only for {supported}; send {api_version} {kind} as "
            "application/json"
        )
    obj = decode_message(message, envelope.get("raw", b""))
    return {"apiVersion": api_version, "kind": kind, **obj}
